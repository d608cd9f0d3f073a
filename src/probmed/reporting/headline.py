"""The evaluation headline (metrics/evaluation.json): strict accuracy per category and overall.

One group per question set, one entry per ``model/setting`` in the plan's order
(``pipeline.runs``: the models under test before the baselines), with ``overall_paper_weighted``
and the accuracy with adversarial pairs of each category the set has
(the paper's Overall column; probmed.reporting.overall names every overall). A set with one category
(the VQA-RAD adversarial set) has no separate overall: it would repeat the
category. Everything else the scorer computes stays in the score artifacts
and MLflow; see probmed.core.headline for why these files are small.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from probmed.reporting.overall import PAPER_WEIGHTED
from probmed.reporting.runs import Run
from probmed.scoring.score_report import number


def run_headline(run: Run) -> dict[str, float | None]:
    """{overall_paper_weighted, category: strict accuracy, ...} of one run (None where undefined): the overall
    first, so that `dvc exp show`, which lists the columns in the file's order, opens on it."""
    scores = run.scores
    out = {name: number(scores.category(name).get("accuracy_adv_pairs")) for name in scores.categories}
    if len(out) > 1:
        out = {PAPER_WEIGHTED.name: number(scores.overall.get(PAPER_WEIGHTED.score_key)), **out}
    return out


def evaluation_headline(runs: Iterable[Run], evaluated: Sequence[tuple[str, str, str]] | None = None
                        ) -> dict[str, Any]:
    """{question set: {model/setting: run_headline}} for the runs in `evaluated`, in its order (the plan's:
    `pipeline.runs`, then `described_runs`); every run found, in the order found, when None."""
    found = {(run.question_set, run.model, run.setting): run for run in runs}
    keys = [key for key in evaluated if key in found] if evaluated is not None else list(found)
    out: dict[str, dict[str, Any]] = {}
    for key in keys:
        run = found[key]
        out.setdefault(run.question_set, {})[f"{run.model}/{run.setting}"] = run_headline(run)
    return out
