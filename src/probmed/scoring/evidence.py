"""Accuracy on the questions whose every "no" rests on evidence, beside the full set.

A hallucinated value is ``known_absent`` when a label table or a QA answer says
it is absent, ``nlp_absent`` when that label was mined from a report by NLP
(ChestX-ray14), ``assumed_absent`` when it is merely not mentioned (the question
table's ``evidence`` column). The known-absent subset drops every pair, and
every single question, whose "no" is only assumed or NLP-mined; a per-image unit (condition,
position) keeps its known-absent pairs. Scored by the same scorer, so a model's
number there is free of any doubt about the benchmark's "no" answers.
A set that records no evidence (an imported release) has no such subset.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from probmed.scoring.metrics import Prepared, score_rows
from probmed.scoring.score_report import KnownAbsent, ScoreSection

KNOWN = "known_absent"
ASSUMED = "assumed_absent"
NLP = "nlp_absent"  # a label mined from a report by NLP (ChestX-ray14): not in the subset free of doubt


def known_absent_mask(questions: pd.DataFrame) -> np.ndarray | None:
    """Which questions are in the known-absent subset, or None when the set records no evidence."""
    evidence = questions["evidence"].fillna("").astype(str)
    if not evidence.isin([KNOWN, ASSUMED, NLP]).any():
        return None
    doubtful = set(questions.loc[evidence.isin([ASSUMED, NLP]), "pair_id"].astype(str))
    return ~questions["pair_id"].astype(str).isin(doubtful).to_numpy(dtype=bool)


def known_absent_questions(questions: pd.DataFrame) -> pd.DataFrame | None:
    """The known-absent subset of a question table, or None when the set records no evidence."""
    mask = known_absent_mask(questions)
    return None if mask is None else questions[mask]


def known_absent_scores(p: Prepared) -> KnownAbsent | None:
    """Strict accuracy per category and overall (original weighting) on the known-absent subset.

    Scored on the run's own joined rows (the same units and weights as scoring the subset alone)."""
    mask = known_absent_mask(p.frame)
    if mask is None:
        return None
    rows = np.flatnonzero(mask)
    n_dropped = int(len(mask) - len(rows))
    if not len(rows):
        return KnownAbsent(0, n_dropped, ScoreSection({"accuracy_adv_pairs_original_weighting": None}, {}))
    by_cat, overall, _random = score_rows(p, rows, resamples=0, seed=0, level=0.95)
    kept = {cat: {"accuracy_adv_pairs": m["accuracy_adv_pairs"], "n_questions": m["n_questions"]}
            for cat, m in by_cat.items()}
    weighted = {"accuracy_adv_pairs_original_weighting": overall["accuracy_adv_pairs_original_weighting"]}
    return KnownAbsent(int(len(rows)), n_dropped, ScoreSection(weighted, kept))
