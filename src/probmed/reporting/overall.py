"""The three "overall" accuracies with adversarial pairs, each under one name used everywhere.

The scorer writes three overall strict accuracies for a run, and they differ
(tiny/vanilla on the default set: 32.74, 43.90, 44.01). Every table, headline
file and MLflow metric names the one it shows by these keys, so a number is
never read as another:

- ``overall_paper_weighted``: each category's accuracy weighted by the paper's
  question count for that category (the paper's Overall column, Table 3);
- ``overall_pooled``: right scoring units over all scoring units of the paired
  categories pooled (pairs; all-or-nothing images for condition and position),
  the unit the paired bootstrap resamples (Table 2, visual reliance, differences);
- ``overall_question_weighted``: each category's accuracy weighted by its number
  of questions in this set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from probmed.scoring.score_report import number


@dataclass(frozen=True)
class OverallDefinition:
    """One way to pool categories: its name, the scorer's key, a column header and what it means."""

    name: str
    score_key: str  # the key in metrics.json's ``overall`` block
    header: str
    meaning: str


PAPER_WEIGHTED = OverallDefinition(
    "overall_paper_weighted", "accuracy_adv_pairs_original_weighting", "overall (paper-weighted)",
    "the categories' accuracies weighted by the paper's question count per category (the paper's Overall)")
POOLED = OverallDefinition(
    "overall_pooled", "accuracy_adv_pairs", "overall (pooled units)",
    "right scoring units over all scoring units of the paired categories, pooled (what the paired bootstrap resamples)")
QUESTION_WEIGHTED = OverallDefinition(
    "overall_question_weighted", "accuracy_adv_pairs_question_weighting", "overall (question-weighted)",
    "the categories' accuracies weighted by their number of questions in this set")
DEFINITIONS: tuple[OverallDefinition, ...] = (PAPER_WEIGHTED, POOLED, QUESTION_WEIGHTED)
AVERAGED_POOLED_HEADER = "averaged (pooled questions)"

EXPLANATION = (
    "Three overall accuracies with adversarial pairs exist, and each table names its own: "
    f"<b>paper-weighted</b> ({PAPER_WEIGHTED.meaning}; Table 3, the headline files), "
    f"<b>pooled units</b> ({POOLED.meaning}; Table 2, visual reliance, paired differences) and "
    f"<b>question-weighted</b> ({QUESTION_WEIGHTED.meaning}). They differ because each gives categories of "
    "different accuracy a different weight; compare a number only with one of the same definition.")


def overall_metrics(overall: Mapping[str, Any]) -> dict[str, float | None]:
    """{definition name: value} of a metrics.json ``overall`` block (None where undefined).

    The names are the metric keys to log, e.g. as ``strict/overall_paper_weighted``."""
    return {d.name: number(overall.get(d.score_key)) for d in DEFINITIONS}
