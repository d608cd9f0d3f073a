"""Text-only oracle: how much of a question set can be answered without the image.

The oracle answers each question with the majority answer of its normalised
text on *other* images: images are split into ``folds`` by a hash of their id
(the blind baseline's split), and each fold is answered from the counts of the
other folds. A text the training folds never saw, or whose training answers show
no majority (a two-sided binomial test at ``alpha`` cannot tell them from a fair
coin), gives the oracle nothing to go on: it guesses, and is scored by its
expected accuracy (audit.scores).

Why the test: a perfectly balanced text has counts that differ from a tie only
by the fold split, so "the majority" of its training answers is the mirror image
of the held-out fold's composition, an artefact of cross-fitting, not something
the text says. ``alpha = 1`` turns the test off (every non-tied count decides).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from probmed.core.params_schema import Audit

_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalise_text(question: str) -> str:
    """Lower case, punctuation and repeated spaces removed: "Is this an X-ray image?" -> "is this an x ray image"."""
    return _NON_WORD.sub(" ", str(question).lower()).strip()


def image_fold(image_id: str, folds: int) -> int:
    """Fold of an image: a hash of its id, so the split does not depend on row order."""
    return int(hashlib.sha256(str(image_id).encode()).hexdigest(), 16) % folds


@dataclass(frozen=True)
class OracleSettings:
    """How the text-only oracle cross-fits: folds of images and the binomial-test level (defaults: params ``audit``)."""

    folds: int = Audit().folds
    alpha: float = Audit().alpha


def _decided(yes: np.ndarray, total: np.ndarray, alpha: float) -> np.ndarray:
    """+1 (yes), -1 (no) or 0 (no majority) per text, from its training counts."""
    from scipy.stats import binomtest

    out = np.zeros(len(yes), dtype=np.int8)
    for i, (k, n) in enumerate(zip(yes.tolist(), total.tolist())):
        if n == 0 or 2 * k == n:
            continue
        if alpha >= 1.0 or binomtest(k, n, 0.5).pvalue < alpha:
            out[i] = 1 if 2 * k > n else -1
    return out


def oracle_votes(questions: pd.DataFrame, settings: OracleSettings = OracleSettings()) -> np.ndarray:
    """Per question: +1 the oracle says yes, -1 no, 0 it has to guess (cross-fitted by image)."""
    if settings.folds < 2:
        raise ValueError(f"oracle folds must be >= 2 (got {settings.folds})")
    text = questions["question"].map(normalise_text).to_numpy(dtype=object)
    codes, uniques = pd.factorize(text)
    is_yes = (questions["answer"] == "yes").to_numpy()
    fold = np.array([image_fold(i, settings.folds) for i in questions["image_id"].astype(str)])
    yes_all = np.bincount(codes, weights=is_yes, minlength=len(uniques))
    n_all = np.bincount(codes, minlength=len(uniques)).astype(np.float64)
    votes = np.zeros(len(questions), dtype=np.int8)
    for k in range(settings.folds):
        held = fold == k
        if not held.any():
            continue
        yes_k = yes_all - np.bincount(codes[held], weights=is_yes[held], minlength=len(uniques))
        n_k = n_all - np.bincount(codes[held], minlength=len(uniques))
        decided = _decided(yes_k.astype(np.int64), n_k.astype(np.int64), settings.alpha)
        votes[held] = decided[codes[held]]
    return votes


def text_table(questions: pd.DataFrame) -> pd.DataFrame:
    """One row per (category, normalised text): questions, yes answers, yes ratio, images."""
    frame = pd.DataFrame(
        {
            "category": questions["category"].to_numpy(),
            "text": questions["question"].map(normalise_text).to_numpy(),
            "yes": (questions["answer"] == "yes").to_numpy().astype(int),
            "image_id": questions["image_id"].astype(str).to_numpy(),
        }
    )
    grouped = frame.groupby(["category", "text"], sort=True)
    table = grouped.agg(questions=("yes", "size"), yes=("yes", "sum"), images=("image_id", "nunique")).reset_index()
    table["yes_ratio"] = table["yes"] / table["questions"]
    return table
