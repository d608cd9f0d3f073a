"""Procedural diagnosis (Table 4), subset robustness (Appendix C), bootstrap and the table layouts."""

from __future__ import annotations

import numpy as np
import pytest
from scoring_helpers import build, pair

from probmed.core.params_schema import Score
from probmed.scoring.bootstrap import interval, resample_weights
from probmed.scoring.metrics import prepare
from probmed.scoring.procedural import procedural
from probmed.scoring.robustness import subset_robustness
from probmed.scoring.run import evaluate, write_run
from probmed.scoring.score_report import ScoreReport
from probmed.scoring.synthetic import synthetic_labels, synthetic_questions
from probmed.scoring.tables import render_all, table2, table3, table4, table_image_types

CHEST = "X-ray - Chest"
OK = pair("modality", "yes", "no") + pair("body_part", "yes", "no")

PROCEDURAL = [
    # P1: passes abnormality, accepts a hallucinated condition
    ("P1", CHEST, OK + [("abnormality", "yes", "yes")] + pair("entity", "yes", "yes", 1) + pair("grounding", "yes", "no", 1)),
    # P2: refuses abnormality
    ("P2", CHEST, OK + [("abnormality", "yes", "refusal")] + pair("entity", "yes", "no", 1) + pair("grounding", "no", "no", 1)),
    # P3: wrong modality: excluded from every stage
    ("P3", CHEST, pair("modality", "no", "no") + pair("body_part", "yes", "no") + [("abnormality", "yes", "yes")]
     + pair("entity", "yes", "no", 1)),
    # P4: normal image, wrong abnormality answer
    ("P4", CHEST, OK + [("abnormality", "no", "yes"), ("entity_hallu", "no", "no")]),
    # P5: no abnormality question: conditioned on modality and organ only; refuses a position adversary
    ("P5", CHEST, OK + pair("entity", "yes", "no", 1) + pair("grounding", "yes", "refusal", 1)),
    # P6: everything right
    ("P6", CHEST, OK + [("abnormality", "yes", "yes")] + pair("entity", "yes", "no", 1) + pair("grounding", "yes", "no", 1)),
]


def test_procedural_hand_computed() -> None:
    questions, predictions = build(PROCEDURAL)
    out = procedural(prepare(questions, predictions))
    abn = out["abnormality"]
    assert (abn["n_images"], abn["accuracy"], abn["n_errors"]) == (4, 50.0, 2)  # P1 P2 P4 P6
    assert (abn["e_wrong_answer"], abn["e_reject_to_answer"], abn["e_unparsed_or_missing"]) == (50.0, 50.0, 0.0)
    cond = out["condition"]
    assert cond["n_images"] == 3 and cond["accuracy"] == pytest.approx(200 / 3)  # P1 P5 P6
    assert (cond["e_deny_ground_truth"], cond["e_accept_hallucination"], cond["e_reject_to_answer"]) == (0.0, 100.0, 0.0)
    pos = out["position"]
    assert (pos["n_images"], pos["accuracy"]) == (2, 50.0)  # P5 P6
    assert pos["e_reject_to_answer"] == 100.0


def test_procedural_shares_add_up() -> None:
    questions = synthetic_questions(200, 1900, seed=2)
    import pandas as pd

    preds = pd.DataFrame({"qid": questions["qid"], "label": synthetic_labels(questions, seed=5, accuracy=0.6)})
    out = procedural(prepare(questions, preds.iloc[:-30]))  # a few missing answers too
    for stage, m in out.items():
        shares = [v for k, v in m.items() if k.startswith("e_")]
        if m["n_errors"]:
            assert sum(shares) == pytest.approx(100.0), stage


def test_subset_robustness_nested_and_full() -> None:
    questions = synthetic_questions(100, 950, seed=4)
    import pandas as pd

    preds = pd.DataFrame({"qid": questions["qid"], "label": synthetic_labels(questions, seed=1)})
    rows = subset_robustness(questions, preds, (0.2, 0.5, 1.0), seed=7)
    assert [r["n_images"] for r in rows] == [20, 50, 100]
    assert rows[-1]["n_questions"] == 950
    full = evaluate(questions, preds, Score(bootstrap_resamples=0))
    assert rows[-1]["accuracy_adv_pairs_original_weighting"] == pytest.approx(
        full.overall["accuracy_adv_pairs_original_weighting"]
    )
    assert rows == subset_robustness(questions, preds, (0.2, 0.5, 1.0), seed=7)  # seeded
    with pytest.raises(ValueError, match="fraction"):
        subset_robustness(questions, preds, (0.0,))


def test_resample_weights() -> None:
    w = resample_weights(37, 500, seed=1)
    assert w.shape == (500, 37) and (w.sum(axis=1) == 37).all()
    assert np.array_equal(w, resample_weights(37, 500, seed=1))
    assert abs(w.mean() - 1.0) < 0.01
    assert resample_weights(10, 0, 0).shape == (0, 10)
    assert interval(np.array([np.nan])) == (None, None)
    lo, hi = interval(np.arange(1001, dtype=float))
    assert (lo, hi) == (pytest.approx(25.0), pytest.approx(975.0))


@pytest.fixture(scope="module")
def run_metrics() -> ScoreReport:
    questions, predictions = build(PROCEDURAL)
    return evaluate(questions, predictions, Score(bootstrap_resamples=100), name="fixture-model")


def test_tables_layouts(run_metrics: ScoreReport) -> None:
    t3 = table3({"m": run_metrics})
    assert t3["model"].tolist() == ["Random Choice", "m"]
    assert t3.loc[0, "modality"] == 25.0 and t3.loc[0, "abnormality"] == 50.0
    assert t3.loc[1, "overall"] == round(run_metrics.overall["accuracy_adv_pairs_original_weighting"], 2)
    t2 = table2({"m": run_metrics})
    assert t2.loc[0, "drop"] == pytest.approx(t2.loc[0, "accuracy_adv_pairs"] - t2.loc[0, "averaged_accuracy"], abs=0.011)
    t4 = table4({"m": run_metrics})
    row = t4[(t4["question_type"] == "Abnormality") & (t4["metric"] == "accuracy")]
    assert row["m"].item() == 50.0
    ti = table_image_types({"m": run_metrics})
    assert ti["metric"].tolist() == ["Acc. with adv. pairs", "Acc. with adv. pairs", "Avg. acc.", "num"]
    assert ti.iloc[2]["abnormality"] is None  # "/" as in the paper
    assert ti.iloc[3]["modality"] == 6  # num: images with a modality pair
    texts = render_all({"m": run_metrics})
    assert "| Random Choice | 25.00 | 25.00 | 50.00 |" in texts["table3.md"]
    assert "| CT" not in texts["table3.md"]
    assert texts["table_image_types.md"].count("/") >= 1


def test_write_run(tmp_path, run_metrics: ScoreReport) -> None:
    written = write_run(run_metrics, tmp_path / "out")
    names = sorted(p.name for p in written)
    assert "metrics.json" in names and "table3.csv" in names and "table4.md" in names
    import json

    back = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert back["meta"]["model"] == "fixture-model"
    assert set(back) == {"meta", "overall", "by_category", "by_image_type", "random_baseline", "procedural",
                         "subset_robustness", "known_absent"}
    assert not list((tmp_path / "out").glob(".*tmp"))


def test_table2_side_by_side(run_metrics: ScoreReport) -> None:
    vq = {"meta": {"question_set": "vqarad"}, "by_category": {},
          "overall": {"averaged_accuracy": 69.915, "accuracy_adv_pairs": 55.08, "accuracy_adv_pairs_original_weighting": 1.0}}
    t = table2({"m": run_metrics, "other": run_metrics}, vqarad_runs={"m": vq})
    assert t["model"].tolist() == ["m", "other"]
    assert t.loc[0, "vqarad_accuracy_adv_pairs"] == 55.08  # pooled pairs on a VQA-RAD set
    assert t.loc[0, "vqarad_drop"] == pytest.approx(-14.84, abs=0.01)
    assert t.loc[1, "vqarad_averaged_accuracy"] is None
    from probmed.scoring.tables import to_markdown

    assert "VQA-RAD Accuracy (%) with Adversarial Pairs" in to_markdown(t)
