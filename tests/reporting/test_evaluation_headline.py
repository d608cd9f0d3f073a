"""metrics/evaluation.json: strict accuracy per category and overall, per question set and model/setting."""

from __future__ import annotations

from pathlib import Path

from metrics_factory import make_metrics

from probmed.core.categories import CATEGORIES
from probmed.reporting.headline import evaluation_headline
from probmed.reporting.runs import Run
from probmed.scoring.score_report import ScoreReport


def _run(question_set: str, model: str, setting: str, metrics: dict) -> Run:
    path = Path(f"{question_set}/{model}/{setting}/metrics.json")
    return Run(question_set, model, setting, ScoreReport.from_dict(metrics, path))


def test_headline_is_strict_accuracy_per_category_and_the_paper_weighted_overall_named_so():
    metrics = make_metrics(seed=1)
    headline = evaluation_headline([_run("probmed", "tiny", "vanilla", metrics)])
    entry = headline["probmed"]["tiny/vanilla"]
    assert list(entry) == ["overall_paper_weighted", *CATEGORIES]  # the overall is the first column of exp show
    assert entry["condition"] == metrics["by_category"]["condition"]["accuracy_adv_pairs"]
    assert entry["overall_paper_weighted"] == metrics["overall"]["accuracy_adv_pairs_original_weighting"]


def test_one_category_sets_have_no_repeated_overall_and_only_planned_runs_count():
    single = make_metrics(seed=2)
    single["by_category"] = {"condition": single["by_category"]["condition"]}
    runs = [_run("vqarad-adv", "tiny", "vanilla", single), _run("finetune-heldout", "finetune-base", "vanilla",
                                                                 make_metrics(seed=3))]
    headline = evaluation_headline(runs, [("vqarad-adv", "tiny", "vanilla")])
    assert headline == {"vqarad-adv": {"tiny/vanilla": {"condition": single["by_category"]["condition"][
        "accuracy_adv_pairs"]}}}


def test_runs_follow_the_plans_order_not_the_order_found():
    """`dvc exp show` lists metric columns in the file's order: the plan puts the models under test first."""
    found = [_run("probmed", model, "vanilla", make_metrics(seed=i)) for i, model in enumerate(["blind", "tiny"])]
    found.append(_run("vqarad-adv", "tiny", "vanilla", make_metrics(seed=5)))
    plan = [("probmed", "tiny", "vanilla"), ("vqarad-adv", "tiny", "vanilla"), ("probmed", "blind", "vanilla"),
            ("probmed", "gpt-4o", "vanilla")]  # planned but not run yet: absent, not an error
    headline = evaluation_headline(found, plan)
    assert list(headline) == ["probmed", "vqarad-adv"]
    assert list(headline["probmed"]) == ["tiny/vanilla", "blind/vanilla"]
    assert list(evaluation_headline(found)["probmed"]) == ["blind/vanilla", "tiny/vanilla"]
