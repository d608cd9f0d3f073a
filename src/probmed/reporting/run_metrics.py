"""What an evaluation run shows in MLflow: a few dozen grouped metrics, and the rest as one table.

MLflow's runs table and its charts group metric keys by their prefix, and a run
with hundreds of metrics pushes the ones people compare off the screen. So an
evaluation run logs at most :data:`MAX_METRICS` short, grouped keys:

- ``strict/<category>``; the three overalls under the names every table and
  headline file uses (:mod:`probmed.reporting.overall`):
  ``strict/overall_paper_weighted`` (the paper's Overall, as in
  metrics/evaluation.json), ``strict/overall_pooled``,
  ``strict/overall_question_weighted``; ``strict/ci95_low`` /
  ``strict/ci95_high`` (bootstrap over images, overall);
- ``averaged/<paired category>``, ``averaged/overall``; ``gt_only/overall``;
- ``random/strict_overall`` (paper-weighted), ``random/averaged_overall``: the
  exact random-choice baseline on the same questions;
- ``answers/…``: yes ratio, refusal, unparsed and failed rates (percent of
  questions), failed and missing answers, questions, images;
- ``pope/precision``, ``pope/recall``, ``pope/f1`` (every question, positive = yes);
- ``procedural/<step>``: the conditional accuracies of the procedural diagnosis;
- ``known_absent/strict_overall`` (paper-weighted): strict accuracy where every "no" is known absent.

Everything else the scorer computes (per image type, per-category intervals,
error shares, subset robustness, ...) is the long tail: :func:`metric_table`,
logged as one table artifact beside the score tables. Values are rounded at
logging to :data:`DIGITS` decimals (all rates and accuracies are percentages;
counts stay whole): MLflow stores and shows a float as it is
(``88.88888888888889``), which the runs table cannot fit; the exact values are
in the run's ``scores/metrics.json``.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping

import pandas as pd

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES
from probmed.core.config import flatten
from probmed.reporting.overall import DEFINITIONS, PAPER_WEIGHTED
from probmed.scoring.score_report import ScoreReport, number

DIGITS = 2
MAX_METRICS = 40
ANSWER_KEYS = {"yes_ratio": "yes_ratio", "refusal_rate": "refusal_rate", "unparsed_rate": "unparsed_rate",
               "failed_rate": "failed_rate", "failed": "failed", "missing": "missing", "n_questions": "questions", "n_images": "images"}
POPE_KEYS = ("precision", "recall", "f1")


def _rounded(value: Any) -> float | None:
    found = number(value)
    return None if found is None else round(found, DIGITS)


def _pairs(scores: ScoreReport) -> Iterator[tuple[str, Any]]:
    overall = scores.overall
    for category in CATEGORIES:
        if category in scores.categories:
            yield f"strict/{category}", scores.category(category).get("accuracy_adv_pairs")
    for definition in DEFINITIONS:  # one name per overall, the same as in the report and metrics/evaluation.json
        yield f"strict/{definition.name}", overall.get(definition.score_key)
    yield "strict/ci95_low", overall.get("ci95_low")
    yield "strict/ci95_high", overall.get("ci95_high")
    for category in PAIRED_CATEGORIES:
        if category in scores.categories:
            yield f"averaged/{category}", scores.category(category).get("averaged_accuracy")
    yield "averaged/overall", overall.get("averaged_accuracy")
    yield "gt_only/overall", overall.get("gt_only_accuracy")
    baseline = scores.random_baseline
    if baseline is not None:
        yield "random/strict_overall", baseline.overall.get(PAPER_WEIGHTED.score_key)
        yield "random/averaged_overall", baseline.overall.get("averaged_accuracy")
    for key, name in ANSWER_KEYS.items():
        yield f"answers/{name}", overall.get(key)
    for key in POPE_KEYS:
        yield f"pope/{key}", overall.get(key)
    for step, block in scores.procedural.items():
        if isinstance(block, dict):
            yield f"procedural/{step}", block.get("accuracy")
    known = scores.known_absent
    yield "known_absent/strict_overall", known.scores.overall.get(PAPER_WEIGHTED.score_key) if known else None


def run_metrics(scores: ScoreReport) -> dict[str, float]:
    """The grouped headline metrics of one evaluation run (undefined values left out, never logged as 0)."""
    out = {key: rounded for key, value in _pairs(scores) if (rounded := _rounded(value)) is not None}
    if len(out) > MAX_METRICS:  # a new block above must stay within what the runs table can show
        raise ValueError(f"{len(out)} run metrics, more than {MAX_METRICS}: move the new ones to metric_table")
    return out


def metrics_from_scores(scores: ScoreReport | Mapping[str, Any]) -> dict[str, float]:
    """:func:`run_metrics` of a run's scores, given as a ScoreReport or as the metrics.json dict."""
    return run_metrics(scores if isinstance(scores, ScoreReport) else ScoreReport.from_dict(scores))


def metric_table(scores: ScoreReport) -> pd.DataFrame:
    """The long tail: one row per numeric leaf of the scores (section, image type, category, metric, value)."""
    rows: list[dict[str, Any]] = []
    for image_type, category, values in scores.blocks():
        for metric, value in flatten(values).items():
            if (found := number(value)) is not None:
                rows.append({"section": "scores", "image_type": image_type, "category": category,
                             "metric": metric, "value": found})
    for section in ("overall", "procedural", "random_baseline.overall", "known_absent"):
        for metric, value in scores.leaves(section).items():
            if (found := number(value)) is not None:
                rows.append({"section": section, "image_type": "all", "category": "", "metric": metric, "value": found})
    baseline = scores.random_baseline
    for image_type, category, values in baseline.blocks() if baseline is not None else ():
        for metric, value in flatten(values).items():
            if (found := number(value)) is not None:
                rows.append({"section": "random_baseline", "image_type": image_type, "category": category,
                             "metric": metric, "value": found})
    return pd.DataFrame(rows, columns=["section", "image_type", "category", "metric", "value"])
