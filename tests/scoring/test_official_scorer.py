"""The official-compatible scorer: the original's quirks on purpose-built cases."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probmed.scoring.official import official_correct, score_official, score_official_naive

T1, T2 = "X-ray - Chest", "MRI - Brain"


def rec(image: str, itype: str, qa_type: str, gt: str, response: str) -> dict[str, Any]:
    return {"id": image, "image_type": itype, "qa_type": qa_type, "question": f"{qa_type}?", "gt_ans": gt,
            "response": response}


@pytest.mark.parametrize(
    ("gt", "response", "expected"),
    [
        ("no", "Normal", 1),  # contains "No"
        ("no", "Not sure", 1),
        ("no", "None of the above", 1),
        ("yes", "Yes/No", 1),
        ("no", "Yes/No", 1),  # "Yes/No" is right for both questions of a pair
        ("yes", "The answer is yes.", 0),  # no capital "Yes", not exactly "yes"
        ("yes", "  yes.  ", 1),
        ("yes", "YES", 1),
        ("yes", "yes!", 0),
        ("no", "no.", 1),
        ("no", "The answer is no.", 0),
        ("no", "There is no nodule.", 0),
        ("yes", "Yesterday", 1),
        ("Yes", "Yes", 0),  # gt_ans not exactly "yes" selects the no-rule
        ("Yes", "No", 1),
        ("yes", "", 0),
    ],
)
def test_parse_rule(gt: str, response: str, expected: int) -> None:
    assert official_correct(gt, response) == expected


HAND = [
    # T1, image a
    rec("a", T1, "modality_gt", "yes", "Yes"),
    rec("a", T1, "modality_hallu", "no", "No"),
    rec("a", T1, "body_part_gt", "yes", "yes"),
    rec("a", T1, "body_part_hallu", "no", "Yes"),
    rec("a", T1, "abnormality", "yes", "The answer is yes."),
    rec("a", T1, "entity_gt_1", "yes", "Yes/No"),
    rec("a", T1, "entity_hallu_1", "no", "Yes/No"),
    rec("a", T1, "grounding_gt_1", "yes", "yes."),
    rec("a", T1, "grounding_hallu_1", "no", "Normal"),
    # T2, image d (interleaved with T1: grouping is by image type)
    rec("d", T2, "modality_gt", "yes", "Yes"),
    rec("d", T2, "modality_hallu", "no", "No, it is not."),
    rec("d", T2, "body_part_gt", "yes", "Yes"),
    rec("d", T2, "body_part_hallu", "no", "No"),
    rec("d", T2, "entity_gt_1", "yes", "Yes"),  # never closed: not a pair, as in the original
    rec("d", T2, "entity_hallu_2", "no", "No"),  # k differs from the open pair: skipped
    rec("d", T2, "grounding_hallu_1", "no", "No"),  # no open pair on the first image: skipped + warning
    # T1, image b: short modality list on a non-last image is dropped
    rec("b", T1, "modality_gt", "yes", "Yes"),
    rec("b", T1, "body_part_gt", "yes", "Yes"),
    rec("b", T1, "body_part_hallu", "no", "no"),
    rec("b", T1, "abnormality", "no", "Not sure"),
    rec("b", T1, "entity_hallu", "no", "Yes"),
    # T1, image c (last of its type): its short modality list is kept
    rec("c", T1, "modality_gt", "yes", "no"),
    rec("c", T1, "body_part_gt", "yes", "YES"),
    rec("c", T1, "body_part_hallu", "no", "NO"),
    rec("c", T1, "abnormality", "yes", "Yes"),
]


@pytest.fixture(scope="module")
def hand() -> dict:
    return score_official(HAND)


def test_per_image_type(hand: dict) -> None:
    t1 = hand["by_image_type"][T1]
    assert t1["modality"] == {"acc": 50.0, "acc_wo_adv": 50.0, "num": 2}  # a [1,1], c [0] kept, b dropped
    assert t1["organ"] == pytest.approx({"acc": 200 / 3, "acc_wo_adv": 100.0, "num": 3})
    assert t1["abnormality"] == pytest.approx({"acc": 200 / 3, "acc_wo_adv": None, "num": 3})
    assert t1["condition"] == {"acc": 50.0, "acc_wo_adv": 50.0, "num": 3}  # c has none: skipped, still counted
    assert t1["position"] == {"acc": 100.0, "acc_wo_adv": 100.0, "num": 3}
    t2 = hand["by_image_type"][T2]
    assert t2["abnormality"] == {"acc": None, "acc_wo_adv": None, "num": 0}
    assert t2["condition"] == {"acc": None, "acc_wo_adv": None, "num": 1}  # no closed pair
    assert t2["position"] == {"acc": None, "acc_wo_adv": None, "num": 1}


def test_across_types_and_overall(hand: dict) -> None:
    cats = hand["by_category"]
    assert cats["modality"] == pytest.approx({"acc": 200 / 3, "acc_wo_adv": 200 / 3, "num": 3})
    assert cats["organ"] == pytest.approx({"acc": 75.0, "acc_wo_adv": 100.0, "num": 4})
    assert cats["abnormality"] == pytest.approx({"acc": 200 / 3, "acc_wo_adv": None, "num": 3})
    assert cats["condition"] == pytest.approx({"acc": 50.0, "acc_wo_adv": 50.0, "num": 3})
    assert cats["position"] == pytest.approx({"acc": 100.0, "acc_wo_adv": 100.0, "num": 3})
    assert hand["overall"] == pytest.approx({"acc": 1150 / 16, "num": 16, "acc_wo_adv": 1050 / 13, "num_wo_adv": 13})


def test_crash_cases_are_warned(hand: dict) -> None:
    text = "\n".join(hand["warnings"])
    assert "grounding_hallu_1): adversarial record without an open pair on the first image" in text
    assert "'MRI - Brain': no abnormality questions" in text
    assert "'MRI - Brain': no scored position image" in text
    assert "'MRI - Brain': no scored condition image" in text
    assert len(hand["warnings"]) == 4  # the silently skipped entity_hallu_2 is the original's normal path


def test_naive_reference_agrees(hand: dict) -> None:
    naive = score_official_naive(HAND)
    for cat, m in hand["by_category"].items():
        assert naive[cat]["acc"] == pytest.approx(m["acc"])
        assert naive[cat]["acc_wo_adv"] == pytest.approx(m["acc_wo_adv"])


def test_second_adversarial_for_closed_pair_is_skipped() -> None:
    recs = [
        rec("a", T1, "entity_gt_1", "yes", "Yes"),
        rec("a", T1, "entity_hallu_1", "no", "No"),
        rec("a", T1, "entity_hallu_1", "no", "Yes"),  # would make the pair wrong if counted
    ]
    out = score_official(recs)
    assert out["by_image_type"][T1]["condition"]["acc"] == 100.0
    assert any("second adversarial record for closed pair 1" in w for w in out["warnings"])


def test_unclosed_gt_records_and_reopened_pairs_as_the_original() -> None:
    """The original appends a pair to the image's list only when its adversary closes it: a gt
    record left open is not a pair; a gt record reopening k starts a new pair beside the old."""
    recs = [
        rec("a", T1, "entity_gt_1", "yes", "No"),  # left open by gt_2: dropped
        rec("a", T1, "entity_gt_2", "yes", "Yes"),
        rec("a", T1, "entity_hallu_2", "no", "No"),
        rec("a", T1, "grounding_gt_1", "yes", "Yes"),
        rec("a", T1, "grounding_hallu_1", "no", "No"),
        rec("b", T1, "grounding_gt_1", "yes", "No"),  # never closed: b has no position pair
        rec("c", T1, "entity_gt_1", "yes", "Yes"),
        rec("c", T1, "entity_hallu_1", "no", "Yes"),  # pair [1, 0]
        rec("c", T1, "entity_gt_1", "yes", "Yes"),
        rec("c", T1, "entity_hallu_1", "no", "No"),  # a second pair [1, 1]
    ]
    out = score_official(recs)
    t1 = out["by_image_type"][T1]
    assert t1["condition"] == {"acc": 50.0, "acc_wo_adv": 100.0, "num": 3}  # a right, c wrong, b skipped
    assert t1["position"] == {"acc": 100.0, "acc_wo_adv": 100.0, "num": 3}  # a only
    naive = score_official_naive(recs)
    assert naive["condition"] == {"acc": 50.0, "acc_wo_adv": 100.0}
    assert naive["position"] == {"acc": 100.0, "acc_wo_adv": 100.0}


def test_pairs_closing_after_a_single_condition_score_as_the_original() -> None:
    """The original keeps appending closed pairs to a normal image's ``[score]`` list; such a
    list is read as a single entry: first score from its head, never all right."""
    recs = [
        rec("a", T1, "entity_gt_1", "yes", "Yes"),
        rec("a", T1, "entity_hallu", "no", "No"),  # entry becomes [1] (pair 1 stays open)
        rec("a", T1, "entity_hallu_1", "no", "No"),  # closes pair 1: [1, [1, 1]]
        rec("b", T1, "entity_hallu", "no", "No"),
        rec("b", T1, "entity_gt_2", "yes", "Yes"),
        rec("b", T1, "entity_hallu_2", "no", "No"),  # [1, [1, 1]]
    ]
    out = score_official(recs)
    assert out["by_image_type"][T1]["condition"] == {"acc": 0.0, "acc_wo_adv": 100.0, "num": 2}
    assert not any("after a single" in w for w in out["warnings"])  # not skipped
    assert score_official_naive(recs)["condition"] == {"acc": 0.0, "acc_wo_adv": 100.0}


def test_abnormality_is_the_exact_qa_type() -> None:
    """The original tests ``qa_type == 'abnormality'``; anything else falls through to position."""
    recs = [rec("a", T1, "abnormality", "yes", "Yes"), rec("b", T1, "abnormality_extra", "yes", "No")]
    out = score_official(recs)
    assert out["by_image_type"][T1]["abnormality"] == {"acc": 100.0, "acc_wo_adv": None, "num": 1}
    assert out["by_image_type"][T1]["position"]["acc"] is None
    assert score_official_naive(recs)["abnormality"]["acc"] == 100.0


def test_category_null_everywhere_is_left_out_of_overall() -> None:
    recs = [rec("a", T1, "modality_gt", "yes", "Yes"), rec("a", T1, "modality_hallu", "no", "No")]
    out = score_official(recs)
    assert out["by_category"]["abnormality"]["acc"] is None
    assert out["by_category"]["condition"] == {"acc": None, "acc_wo_adv": None, "num": 0}
    assert out["overall"] == {"acc": 100.0, "num": 1, "acc_wo_adv": 100.0, "num_wo_adv": 1}


def test_same_id_under_two_types_is_two_images() -> None:
    recs = [rec("x", T1, "abnormality", "yes", "Yes"), rec("x", T2, "abnormality", "yes", "No")]
    out = score_official(recs)
    assert out["by_image_type"][T1]["abnormality"]["acc"] == 100.0
    assert out["by_image_type"][T2]["abnormality"]["acc"] == 0.0
    assert out["by_category"]["abnormality"] == {"acc": 50.0, "acc_wo_adv": None, "num": 2}


QA_TYPES = [
    "modality_gt", "modality_hallu", "body_part_gt", "body_part_hallu", "abnormality", "entity_hallu",
    "entity_gt_1", "entity_hallu_1", "entity_gt_2", "entity_hallu_2", "grounding_gt_1", "grounding_hallu_1",
    "grounding_gt_2", "grounding_hallu_2", "grounding_hallu", "something_else", "vqarad_gt_0",
]
RESPONSES = ["Yes", "No", "yes", "no.", "Normal", "The answer is yes.", "", "Yes/No", "maybe", "NO"]
record_strategy = st.builds(
    rec,
    st.sampled_from(["a", "b", "c", "d"]),
    st.sampled_from([T1, T2, "CT Scan - Spine"]),
    st.sampled_from(QA_TYPES),
    st.sampled_from(["yes", "no", "Yes", "maybe"]),
    st.sampled_from(RESPONSES),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(record_strategy, max_size=40))
def test_never_refuses_and_matches_naive_transcription(records: list[dict[str, Any]]) -> None:
    """Any structurally valid response file is scored (never an exception), and the one-pass
    scorer equals the straightforward transcription of the original on every category."""
    out = score_official(records)
    naive = score_official_naive(records)
    for cat in ("modality", "organ", "abnormality", "condition", "position"):
        assert out["by_category"][cat]["acc"] == pytest.approx(naive[cat]["acc"])
        assert out["by_category"][cat]["acc_wo_adv"] == pytest.approx(naive[cat]["acc_wo_adv"])
    for t in out["by_image_type"].values():
        for m in t.values():
            assert m["acc"] is None or 0.0 <= m["acc"] <= 100.0


def test_agrees_with_project_scorer_on_clean_answers() -> None:
    """With answers exactly "Yes"/"No" and no single condition questions, both scorers mean the
    same thing: equal per category (modality, organ, abnormality) and per image type (all)."""
    import numpy as np
    import pandas as pd

    from probmed.core.release_format import responses_to_official
    from probmed.scoring.metrics import score
    from probmed.scoring.synthetic import synthetic_labels, synthetic_questions

    questions = synthetic_questions(300, 2900, seed=8)
    questions = questions[questions["qa_type"] != "entity_hallu"].reset_index(drop=True)
    labels = synthetic_labels(questions, seed=2, refusal=0.0, unparsed=0.0)
    preds = pd.DataFrame({"qid": questions["qid"], "label": labels,
                          "response": np.where(labels == "yes", "Yes", "No")})
    records, missing = responses_to_official(questions, preds)
    assert missing == 0
    official = score_official(records)
    ours = score(questions, preds, resamples=0)
    for cat in ("modality", "organ", "abnormality"):
        assert official["by_category"][cat]["acc"] == pytest.approx(ours["by_category"][cat]["accuracy_adv_pairs"])
    for itype, cats in ours["by_image_type"].items():
        for cat, m in cats.items():
            assert official["by_image_type"][itype][cat]["acc"] == pytest.approx(m["accuracy_adv_pairs"])
            if cat != "abnormality":
                assert official["by_image_type"][itype][cat]["acc_wo_adv"] == pytest.approx(m["gt_only_accuracy"])


def test_vqarad_ablation_scorer_pairs_by_position() -> None:
    from probmed.scoring.official import score_official_vqarad

    recs = [
        rec("s1", T1, "vqarad_gt_0", "yes", "Yes"), rec("s1", T1, "vqarad_hallu_0", "no", "No"),
        rec("s1", T1, "vqarad_gt_1", "yes", "Yes"), rec("s1", T1, "vqarad_hallu_1", "no", "Yes"),
        rec("s2", T1, "vqarad_gt_2", "yes", "The answer is yes."), rec("s2", T1, "vqarad_hallu_2", "no", "Normal"),
        rec("s3", T1, "vqarad_gt_3", "yes", "Yes"),
    ]
    out = score_official_vqarad(recs)
    assert out["averaged_accuracy"] == pytest.approx(400 / 6)  # over the pairs' questions; s3 has no twin
    assert out["accuracy_adv_pairs"] == pytest.approx(100 / 3)
    assert (out["num_questions"], out["num_pairs"]) == (7, 3)
    assert out["warnings"] == ["record 6: odd number of records; the last one has no twin"]


wild_record = st.fixed_dictionaries(
    {
        "id": st.one_of(st.sampled_from(["a", "b"]), st.integers(0, 3)),
        "image_type": st.one_of(st.sampled_from([T1, T2]), st.integers(0, 2), st.none()),
        "qa_type": st.one_of(st.sampled_from(QA_TYPES), st.text(max_size=12)),
        "question": st.text(max_size=5),
        "gt_ans": st.one_of(st.sampled_from(["yes", "no"]), st.none(), st.integers(), st.text(max_size=4)),
        "response": st.one_of(st.sampled_from(RESPONSES), st.text(max_size=12)),
    }
)


@settings(max_examples=100, deadline=None)
@given(st.lists(wild_record, max_size=30))
def test_any_file_the_original_scores_is_scored(records: list[dict[str, Any]]) -> None:
    import json

    from probmed.core.release_format import validate_response_records

    records = json.loads(json.dumps(records))  # what a JSON file can hold
    validate_response_records(records)
    out = score_official(records)
    json.dumps(out)
    naive = score_official_naive(records)
    for cat in ("modality", "organ", "abnormality", "condition", "position"):
        assert out["by_category"][cat]["acc"] == pytest.approx(naive[cat]["acc"])
