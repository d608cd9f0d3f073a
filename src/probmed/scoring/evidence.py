"""Accuracy on the questions whose every "no" rests on evidence, beside the full set.

A hallucinated value is ``known_absent`` when a label table or a QA answer says
it is absent, ``assumed_absent`` when it is merely not mentioned (the question
table's ``evidence`` column). The known-absent subset drops every pair, and
every single question, whose "no" is only assumed; a per-image unit (condition,
position) keeps its known-absent pairs. Scored by the same scorer, so a model's
number there is free of any doubt about the benchmark's "no" answers.
A set that records no evidence (an imported release) has no such subset.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from probmed.core.categories import CATEGORIES

KNOWN = "known_absent"
ASSUMED = "assumed_absent"


def known_absent_questions(questions: pd.DataFrame) -> pd.DataFrame | None:
    """The known-absent subset of a question table, or None when the set records no evidence."""
    evidence = questions["evidence"].fillna("").astype(str)
    if not evidence.isin([KNOWN, ASSUMED]).any():
        return None
    doubtful = set(questions.loc[evidence == ASSUMED, "pair_id"].astype(str))
    return questions[~questions["pair_id"].astype(str).isin(doubtful)]


def known_absent_scores(questions: pd.DataFrame, predictions: pd.DataFrame) -> dict[str, Any] | None:
    """Strict accuracy per category and overall (original weighting) on the known-absent subset."""
    from probmed.scoring.metrics import score

    subset = known_absent_questions(questions)
    if subset is None:
        return None
    out: dict[str, Any] = {"n_questions": int(len(subset)), "n_dropped": int(len(questions) - len(subset)), "by_category": {}}
    if not len(subset):
        out["overall"] = {"accuracy_adv_pairs_original_weighting": None}
        return out
    result = score(subset, predictions, resamples=0, by_image_type=False)
    for cat in CATEGORIES:
        if cat in result["by_category"]:
            m = result["by_category"][cat]
            out["by_category"][cat] = {"accuracy_adv_pairs": m["accuracy_adv_pairs"], "n_questions": m["n_questions"]}
    out["overall"] = {"accuracy_adv_pairs_original_weighting": result["overall"]["accuracy_adv_pairs_original_weighting"]}
    return out
