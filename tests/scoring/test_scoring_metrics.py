"""The project's scorer on a hand-computed fixture: every metric, every category."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scoring_helpers import MISSING, build, pair

from probmed.core.errors import RecordError
from probmed.scoring.baselines import random_predictions
from probmed.scoring.metrics import METRIC_KEYS, exact_random_baseline, score
from probmed.scoring.synthetic import synthetic_questions

CHEST, BRAIN = "X-ray - Chest", "CT Scan - Brain"

# A: modality right, organ adversary accepted, abnormality right, condition pair 2 gt denied,
#    position adversary refused.   B: normal image, modality adversary accepted, abnormality
#    unparsed, single hallucinated condition right.   C: all right except a missing position gt.
FIXTURE = [
    ("A", CHEST, pair("modality", "yes", "no") + pair("body_part", "yes", "yes") + [("abnormality", "yes", "yes")]
     + pair("entity", "yes", "no", 1) + pair("entity", "no", "no", 2) + pair("grounding", "yes", "refusal", 1)),
    ("B", CHEST, pair("modality", "yes", "yes") + pair("body_part", "yes", "no") + [("abnormality", "no", "unparsed")]
     + [("entity_hallu", "no", "no")]),
    ("C", BRAIN, pair("modality", "yes", "no") + pair("body_part", "yes", "no") + [("abnormality", "yes", "yes")]
     + pair("entity", "yes", "no", 1) + pair("grounding", MISSING, "no", 1)),
]


@pytest.fixture(scope="module")
def result() -> dict:
    questions, predictions = build(FIXTURE)
    return score(questions, predictions, resamples=200, seed=1)


def approx(x: float) -> object:
    return pytest.approx(x, abs=1e-9)


def test_modality(result: dict) -> None:
    m = result["by_category"]["modality"]
    assert m["accuracy_adv_pairs"] == approx(200 / 3)  # A, C of 3 pairs
    assert m["averaged_accuracy"] == approx(500 / 6)  # 5 of 6 questions
    assert m["gt_only_accuracy"] == approx(100.0)
    assert m["precision"] == approx(75.0)  # 3 right yes of 4 yes
    assert m["recall"] == approx(100.0)
    assert m["f1"] == approx(2 * 75 * 100 / 175)
    assert m["yes_ratio"] == approx(400 / 6)
    assert (m["n_images"], m["n_questions"], m["n_units"], m["num"], m["missing"]) == (3, 6, 3, 3, 0)
    assert m["single_accuracy"] is None and m["n_single"] == 0


def test_organ(result: dict) -> None:
    m = result["by_category"]["organ"]
    assert m["accuracy_adv_pairs"] == approx(200 / 3)
    assert m["averaged_accuracy"] == approx(500 / 6)
    assert m["precision"] == approx(75.0)


def test_abnormality_is_single_questions(result: dict) -> None:
    m = result["by_category"]["abnormality"]
    assert m["accuracy_adv_pairs"] == approx(200 / 3)
    assert m["single_accuracy"] == approx(200 / 3) and m["n_single"] == 3
    assert m["averaged_accuracy"] is None and m["gt_only_accuracy"] is None
    assert m["precision"] == approx(100.0) and m["recall"] == approx(100.0) and m["f1"] == approx(100.0)
    assert m["unparsed_rate"] == approx(100 / 3)
    assert m["num"] == 3  # questions


def test_condition_all_or_nothing_per_image(result: dict) -> None:
    m = result["by_category"]["condition"]
    assert m["accuracy_adv_pairs"] == approx(50.0)  # A fails pair 2, C right
    assert m["averaged_accuracy"] == approx(500 / 6)  # paired questions only
    assert m["gt_only_accuracy"] == approx(50.0)
    assert m["single_accuracy"] == approx(100.0) and m["n_single"] == 1  # B's hallucinated condition
    assert m["precision"] == approx(100.0)
    assert m["recall"] == approx(200 / 3)
    assert m["f1"] == approx(80.0)
    assert m["yes_ratio"] == approx(200 / 7)
    assert (m["n_images"], m["n_questions"], m["n_units"], m["num"]) == (3, 7, 2, 3)


def test_position_refusal_and_missing(result: dict) -> None:
    m = result["by_category"]["position"]
    assert m["accuracy_adv_pairs"] == approx(0.0)
    assert m["averaged_accuracy"] == approx(50.0)
    assert m["gt_only_accuracy"] == approx(50.0)
    assert m["refusal_rate"] == approx(25.0)
    assert m["missing"] == 1
    assert m["recall"] == approx(50.0)
    assert m["num"] == 3  # every image of the set, as the original


def test_overall_both_weightings(result: dict) -> None:
    o = result["overall"]
    assert o["accuracy_adv_pairs_original_weighting"] == approx((200 / 3 * 3 + 50 + 0) / 5)
    assert o["accuracy_adv_pairs_question_weighting"] == approx((200 / 3 * 15 + 50 * 7) / 26)
    assert o["accuracy_adv_pairs"] == approx(50.0)  # 5 of 10 paired units
    assert o["averaged_accuracy"] == approx(1700 / 22)
    assert o["gt_only_accuracy"] == approx(80.0)
    assert o["single_accuracy"] == approx(75.0)
    assert (o["missing"], o["n_images"], o["n_questions"]) == (1, 3, 26)
    assert o["refusal_rate"] == approx(100 / 26) and o["unparsed_rate"] == approx(100 / 26)
    assert o["num_original_weighting"] == {c: 3 for c in ("modality", "organ", "abnormality", "condition", "position")}


def test_by_image_type(result: dict) -> None:
    chest = result["by_image_type"][CHEST]
    brain = result["by_image_type"][BRAIN]
    assert chest["modality"]["accuracy_adv_pairs"] == approx(50.0)
    assert brain["modality"]["accuracy_adv_pairs"] == approx(100.0)
    assert chest["condition"]["accuracy_adv_pairs"] == approx(0.0) and chest["condition"]["num"] == 2
    assert brain["position"]["accuracy_adv_pairs"] == approx(0.0) and brain["position"]["missing"] == 1
    assert "position" in chest and set(chest["position"]) == set(METRIC_KEYS)


def test_keys_are_stable(result: dict) -> None:
    for cat in result["by_category"].values():
        assert tuple(cat) == METRIC_KEYS
    for key in ("accuracy_adv_pairs_original_weighting", "accuracy_adv_pairs_question_weighting",
                "averaged_accuracy", "ci95_low", "ci95_high"):
        assert key in result["overall"]


def test_bootstrap_intervals_bracket_the_estimate(result: dict) -> None:
    o = result["overall"]
    assert o["ci95_low"] <= o["accuracy_adv_pairs_original_weighting"] <= o["ci95_high"]
    for m in result["by_category"].values():
        assert m["ci95_low"] <= m["ci95_high"]
    assert result["by_category"]["position"]["ci95_high"] == approx(0.0)  # every resample is 0


def test_exact_random_baseline_on_fixture(result: dict) -> None:
    rnd = result["random_baseline"]
    cats = rnd["by_category"]
    assert cats["modality"]["accuracy_adv_pairs"] == approx(25.0)
    assert cats["abnormality"]["accuracy_adv_pairs"] == approx(50.0)
    assert cats["condition"]["accuracy_adv_pairs"] == approx(100 * (1 / 16 + 1 / 4) / 2)  # 4 and 2 questions
    assert cats["condition"]["gt_only_accuracy"] == approx(100 * (1 / 4 + 1 / 2) / 2)
    assert cats["position"]["accuracy_adv_pairs"] == approx(25.0)
    assert rnd["overall"]["accuracy_adv_pairs_original_weighting"] == approx((25 + 25 + 50 + 15.625 + 25) / 5)
    assert rnd["by_image_type"][BRAIN]["condition"]["accuracy_adv_pairs"] == approx(25.0)


def test_extra_and_duplicate_predictions() -> None:
    questions, predictions = build(FIXTURE)
    extra = pd.concat([predictions, pd.DataFrame({"qid": ["nope"], "label": ["yes"]})], ignore_index=True)
    from probmed.scoring.run import evaluate

    assert evaluate(questions, extra).to_dict()["meta"]["extra_predictions"] == 1
    bad = predictions.copy()
    bad.loc[2, "label"] = None
    with pytest.raises(RecordError, match=r"record 2 \(qid .*\): field 'label'"):
        score(questions, bad)
    dup = pd.concat([predictions, predictions.iloc[[0]]], ignore_index=True)
    with pytest.raises(RecordError, match="duplicate qid"):
        score(questions, dup)


def test_vqarad_pairs_are_scored_one_by_one() -> None:
    items = pair("vqarad", "yes", "no", 0) + pair("vqarad", "yes", "yes", 1) + pair("vqarad", "no", "no", 2)
    questions, predictions = build([("synpic1", CHEST, items)])
    res = score(questions, predictions, resamples=0)
    cond = res["by_category"]["condition"]
    assert cond["accuracy_adv_pairs"] == approx(100 / 3)  # one of three pairs, not 0 (per image)
    assert cond["averaged_accuracy"] == approx(400 / 6)
    assert res["overall"]["accuracy_adv_pairs"] == approx(100 / 3)


def test_gpt4o_vqarad_averaged_accuracy_example() -> None:
    """DESIGN.md: GPT-4o on VQA-RAD averaged accuracy 69.91% = 165/236."""
    rng = np.random.default_rng(0)
    right = np.zeros(236, dtype=bool)
    right[rng.choice(236, 165, replace=False)] = True
    items = []
    for k in range(118):
        g, a = right[2 * k], right[2 * k + 1]
        items += pair("vqarad", "yes" if g else "no", "no" if a else "yes", k)
    questions, predictions = build([(f"img{k // 3}", CHEST, items[6 * (k // 3): 6 * (k // 3) + 6]) for k in range(0, 118, 3)][:40])
    res = score(questions, predictions, resamples=0)
    assert res["overall"]["averaged_accuracy"] == approx(100 * 165 / 236)
    both = int(sum(right[2 * k] and right[2 * k + 1] for k in range(118)))
    assert res["overall"]["accuracy_adv_pairs"] == approx(100 * both / 118)


def test_exact_random_baseline_agrees_with_simulation() -> None:
    """Mean over 200 seeded random runs within 4 standard errors of the exact expectation."""
    questions = synthetic_questions(n_images=80, n_questions=800, seed=3)
    exact = exact_random_baseline(questions)
    runs = [score(questions, random_predictions(questions, seed=s), resamples=0, by_image_type=False)
            for s in range(200)]
    for cat in ("modality", "organ", "abnormality", "condition", "position"):
        values = np.array([r["by_category"][cat]["accuracy_adv_pairs"] for r in runs])
        se = values.std(ddof=1) / np.sqrt(len(values))
        assert abs(values.mean() - exact["by_category"][cat]["accuracy_adv_pairs"]) < 4 * se + 1e-9, cat
    overall = np.array([r["overall"]["accuracy_adv_pairs_original_weighting"] for r in runs])
    se = overall.std(ddof=1) / np.sqrt(len(overall))
    assert abs(overall.mean() - exact["overall"]["accuracy_adv_pairs_original_weighting"]) < 4 * se


def test_condition_with_single_questions_only_has_no_pair_accuracy() -> None:
    """An image type whose only condition questions are normal images' single hallucinated
    questions has no condition pairs: its accuracy with adversarial pairs is undefined (the
    singles are reported beside it, never passed off as pair accuracy)."""
    spine = "MRI - Spine"
    spec = [
        ("N", spine, pair("modality", "yes", "no") + [("abnormality", "no", "no"), ("entity_hallu", "no", "no")]),
        ("A", CHEST, pair("modality", "yes", "no") + pair("entity", "yes", "yes", 1)),
    ]
    questions, predictions = build(spec)
    res = score(questions, predictions, resamples=50, seed=0)
    cond = res["by_image_type"][spine]["condition"]
    assert cond["accuracy_adv_pairs"] is None
    assert (cond["ci95_low"], cond["ci95_high"]) == (None, None)
    assert cond["single_accuracy"] == approx(100.0) and cond["n_single"] == 1
    assert res["random_baseline"]["by_image_type"][spine]["condition"]["accuracy_adv_pairs"] is None
    assert res["by_category"]["condition"]["accuracy_adv_pairs"] == approx(0.0)  # A's pair, singles apart
    assert res["by_category"]["abnormality"]["accuracy_adv_pairs"] == approx(100.0)  # singles-only category


def test_failed_answers_are_counted_apart_from_unparsed(tmp_path) -> None:
    """37 questions that failed after the retry budget once counted as "unparsed" and metrics.json had no error
    count: a failure (error set) is now its own count, in metrics, tables and MLflow metrics."""
    from probmed.reporting.tracking import metrics_from_scores
    from probmed.scoring.run import evaluate, write_run

    q, p = build([("a", CHEST, pair("modality", "yes", "no") + pair("body_part", "yes", "no")
                   + [("abnormality", "yes", "unparsed")]),
                  ("b", CHEST, pair("modality", "unparsed", "no") + pair("body_part", "yes", MISSING))])
    p["response"] = ["Yes.", "No.", "Yes.", "No.", "maybe", "", "No.", "Yes."]
    p["error"] = ["", "", "", "", "", "gave up after 7 attempts: HTTP 500 server error", "", ""]
    result = evaluate(q, p)
    m = result.to_dict()
    assert m["by_category"]["modality"]["failed"] == 1 and m["by_category"]["modality"]["unparsed_rate"] == 0.0
    assert m["by_category"]["abnormality"]["unparsed_rate"] == 100.0 and m["by_category"]["abnormality"]["failed"] == 0
    assert m["by_category"]["organ"]["missing"] == 1 and m["by_category"]["organ"]["failed"] == 0
    assert m["overall"]["failed"] == 1 and m["overall"]["failed_rate"] == pytest.approx(100 / 9)
    assert m["meta"]["n_failed"] == 1 and m["meta"]["n_missing"] == 1
    assert m["by_category"]["modality"]["accuracy_adv_pairs"] == 50.0  # a failure is still a wrong answer
    assert {"failed", "failed_rate"} <= set(METRIC_KEYS)
    write_run(result, tmp_path)
    table = pd.read_csv(tmp_path / "table_responses.csv").set_index("category")
    assert table.loc["modality", "failed"] == 1 and table.loc["overall", "failed"] == 1
    assert table.loc["organ", "missing"] == 1 and table.loc["abnormality", "unparsed_rate"] == 100.0
    assert "Failed after retries" in (tmp_path / "table_responses.md").read_text()
    logged = metrics_from_scores(m)  # MLflow: the run's count among its few metrics, per category in the long tail
    assert logged["answers/failed"] == 1
    from probmed.reporting.run_metrics import metric_table
    from probmed.scoring.score_report import ScoreReport

    tail = metric_table(ScoreReport.from_dict(m))
    per_category = tail[(tail["section"] == "scores") & (tail["metric"] == "failed")]
    assert per_category[per_category["category"] == "modality"]["value"].max() == 1  # overall and per image type
