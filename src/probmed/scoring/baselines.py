"""Baseline prediction producers: seeded uniform random, always-yes, always-no.

They emit ordinary prediction tables (records.PREDICTION_COLUMNS) so they go
through exactly the same scorer as a model; the *exact* expectation of the
random baseline (no sampling noise) lives in :mod:`probmed.scoring.metrics`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from probmed.core.records import PREDICTION_COLUMNS


def _predictions(questions: pd.DataFrame, labels: np.ndarray, model: str) -> pd.DataFrame:
    n = len(questions)
    frame = pd.DataFrame(
        {
            "qid": questions["qid"].astype(str).to_numpy(),
            "model": model,
            "setting": "vanilla",
            "response": labels,
            "label": labels,
            "p_yes": np.full(n, np.nan),
            "prompt_tokens": np.zeros(n, dtype="int64"),
            "completion_tokens": np.zeros(n, dtype="int64"),
            "cost_usd": np.zeros(n),
            "cache_key": "",
            "error": "",
        },
        columns=list(PREDICTION_COLUMNS),
    )
    return frame


def random_predictions(questions: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Uniform yes/no answers from a seeded generator (same seed -> same answers)."""
    rng = np.random.default_rng(seed)
    labels = np.where(rng.integers(0, 2, size=len(questions)) == 1, "yes", "no").astype(object)
    return _predictions(questions, labels, f"random-seed{seed}")


def always_yes(questions: pd.DataFrame) -> pd.DataFrame:
    """Answer every question "yes": 0% strict accuracy on pairs, 100% on ground truth."""
    return _predictions(questions, np.full(len(questions), "yes", dtype=object), "always-yes")


def always_no(questions: pd.DataFrame) -> pd.DataFrame:
    """Answer every question "no"."""
    return _predictions(questions, np.full(len(questions), "no", dtype=object), "always-no")

