"""The evaluation headline (metrics/evaluation.json): strict accuracy per category and overall.

One group per question set, one entry per ``model/setting``, with the accuracy
with adversarial pairs of each category the set has and ``overall_paper_weighted``
(the paper's Overall column; probmed.reporting.overall names every overall). A set with one category
(the VQA-RAD adversarial set) has no separate overall: it would repeat the
category. Everything else the scorer computes stays in the score artifacts
and MLflow; see probmed.core.headline for why these files are small.
"""

from __future__ import annotations

from typing import Any, Iterable

from probmed.reporting.overall import PAPER_WEIGHTED
from probmed.reporting.runs import Run
from probmed.scoring.score_report import number


def run_headline(run: Run) -> dict[str, float | None]:
    """{category: strict accuracy, ..., overall_paper_weighted} of one run (None where undefined)."""
    scores = run.scores
    out = {name: number(scores.category(name).get("accuracy_adv_pairs")) for name in scores.categories}
    if len(out) > 1:
        out[PAPER_WEIGHTED.name] = number(scores.overall.get(PAPER_WEIGHTED.score_key))
    return out


def evaluation_headline(runs: Iterable[Run], evaluated: set[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """{question set: {model/setting: run_headline}} for the runs in `evaluated` (all when None)."""
    out: dict[str, dict[str, Any]] = {}
    for run in runs:
        if evaluated is not None and (run.question_set, run.model, run.setting) not in evaluated:
            continue
        out.setdefault(run.question_set, {})[f"{run.model}/{run.setting}"] = run_headline(run)
    return out
