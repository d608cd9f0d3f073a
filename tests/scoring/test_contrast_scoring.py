"""accuracy_contrast_pairs on a hand-computed table: both questions of a contrast pair right, beside the paper's unit."""

from __future__ import annotations

import pandas as pd
import pytest

from probmed.scoring.metrics import exact_random_baseline, score

XR, CT = "X-ray - Chest", "CT Scan - Chest"
XRAY_Q, CT_Q, MRI_Q = "Is this an X-ray image?", "Is this a CT scan image?", "Is this an MRI image?"
ABN_Q = "Is there any abnormality in this image?"
# (qid, image, image type, category, polarity, question, answer, contrast id)
ROWS = [
    ("a1", "A", XR, "modality", "gt", XRAY_Q, "yes", "c1"),
    ("a2", "A", XR, "modality", "adversarial", CT_Q, "no", "c2"),
    ("a3", "A", XR, "abnormality", "single", ABN_Q, "yes", "c3"),
    ("b1", "B", CT, "modality", "gt", CT_Q, "yes", None),
    ("b2", "B", CT, "modality", "adversarial", XRAY_Q, "no", "c1"),
    ("c1", "C", CT, "modality", "gt", CT_Q, "yes", "c2"),
    ("c2", "C", CT, "modality", "adversarial", MRI_Q, "no", None),
    ("d1", "D", XR, "abnormality", "single", ABN_Q, "no", "c3"),
]


def _questions() -> pd.DataFrame:
    frame = pd.DataFrame(ROWS, columns=["qid", "image_id", "image_type", "category", "polarity", "question", "answer",
                                        "contrast_id"])
    singles = frame["polarity"] == "single"
    frame["pair_id"] = frame["image_id"] + ":" + frame["category"].where(~singles, "abnormality")
    frame["qa_type"] = frame["category"].where(singles, "modality_" + frame["polarity"].map({"gt": "gt", "adversarial": "hallu"}))
    frame["contrast_id"] = frame["contrast_id"].astype("string")
    return frame


def _predictions(labels: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({"qid": list(labels), "label": list(labels.values())})


KEY = {qid: answer for qid, *_, answer, _c in ROWS}


def test_contrast_pairs_beside_the_paper_unit():
    labels = {**KEY, "b2": "yes"}  # B's adversarial X-ray question accepted: c1 and B's modality pair wrong
    result = score(_questions(), _predictions(labels), resamples=0)
    mod, abn, overall = result["by_category"]["modality"], result["by_category"]["abnormality"], result["overall"]
    assert (mod["n_contrast_pairs"], mod["accuracy_contrast_pairs"]) == (2, pytest.approx(50.0))  # c2 of c1, c2
    assert mod["accuracy_adv_pairs"] == pytest.approx(200 / 3)  # the paper's unit stays: A and C of 3 pairs
    assert (abn["n_contrast_pairs"], abn["accuracy_contrast_pairs"]) == (1, pytest.approx(100.0))
    assert (overall["n_contrast_pairs"], overall["accuracy_contrast_pairs"]) == (3, pytest.approx(200 / 3))
    assert mod["ci95_contrast_low"] is None  # no resamples, no interval
    # c1 and c2 span two image types: counted in neither; c3 lies within the X-ray type
    by_type = result["by_image_type"]
    assert by_type[XR]["modality"]["n_contrast_pairs"] == 0 and by_type[XR]["modality"]["accuracy_contrast_pairs"] is None
    assert by_type[XR]["abnormality"]["n_contrast_pairs"] == 1


def test_a_text_only_answer_scores_zero_and_random_is_a_quarter():
    always_yes = score(_questions(), _predictions({q: "yes" for q in KEY}), resamples=0)
    assert always_yes["overall"]["accuracy_contrast_pairs"] == 0.0
    per_text = {qid: ("yes" if q in (XRAY_Q, ABN_Q) else "no") for qid, _i, _t, _c, _p, q, *_ in ROWS}
    assert score(_questions(), _predictions(per_text), resamples=0)["overall"]["accuracy_contrast_pairs"] == 0.0
    rnd = exact_random_baseline(_questions())
    assert rnd["overall"]["accuracy_contrast_pairs"] == 25.0
    assert {c: m["accuracy_contrast_pairs"] for c, m in rnd["by_category"].items()} == {"modality": 25.0, "abnormality": 25.0}


def test_interval_brackets_the_estimate_and_old_tables_have_none():
    result = score(_questions(), _predictions({**KEY, "b2": "yes"}), resamples=300, seed=0)
    overall = result["overall"]
    assert overall["ci95_contrast_low"] <= overall["accuracy_contrast_pairs"] <= overall["ci95_contrast_high"]
    old = score(_questions().drop(columns="contrast_id"), _predictions(KEY), resamples=0)
    assert old["overall"]["n_contrast_pairs"] == 0 and old["overall"]["accuracy_contrast_pairs"] is None


def test_half_a_pair_is_no_unit():
    part = _questions()
    part = part[part["qid"] != "d1"]  # the normal image left out: c3 has one question here
    result = score(part, _predictions(KEY), resamples=0)
    assert result["by_category"]["abnormality"]["n_contrast_pairs"] == 0
    assert result["overall"]["n_contrast_pairs"] == 2
