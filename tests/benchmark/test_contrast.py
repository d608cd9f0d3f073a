"""Contrast pairs: one text yes on one image and no on another; a text-only answer scores 0 on them."""

from __future__ import annotations

import pandas as pd
import pytest

from probmed.benchmark.contrast import assign_contrast_pairs, contrast_text
from probmed.core.errors import RecordError
from probmed.core.records import validate_question_frame


def _table(rows: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """(image id, image type, question, answer) rows as a question table."""
    return validate_question_frame(pd.DataFrame([
        {"qid": f"q{i}", "image_id": img, "image_path": f"{img}.png", "source": "s", "category": "condition",
         "polarity": "gt" if ans == "yes" else "adversarial", "pair_id": f"{img}:entity_{i}", "question": text,
         "answer": ans, "entity": "", "image_type": itype, "qa_type": f"entity_gt_{i}", "strategy": "gt", "evidence": "",
         "licence": ""}
        for i, (img, itype, text, ans) in enumerate(rows)
    ]))


MASS, EFFUSION = "Is there evidence of a mass in this image?", "Is there evidence of an effusion in this image?"
CT, XR = "CT Scan - Chest", "X-ray - Chest"
ROWS = [  # two image types; both texts have a yes and a no inside each type, plus one unmatched question
    ("a", CT, MASS, "yes"), ("b", CT, MASS, "no"), ("c", CT, MASS, "yes"), ("d", CT, MASS, "no"),
    ("e", XR, MASS, "yes"), ("f", XR, MASS, "no"),
    ("a", CT, EFFUSION, "no"), ("b", CT, EFFUSION, "yes"), ("e", XR, EFFUSION, "no"), ("f", XR, EFFUSION, "yes"),
    ("g", XR, EFFUSION, "yes"),
]


def _pairs(frame: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {cid: part for cid, part in frame[frame["contrast_id"].notna()].groupby("contrast_id")}


def _right_pairs(frame: pd.DataFrame, answer_of) -> int:
    """Contrast pairs a policy answers right on both questions (`answer_of(row)` -> "yes" / "no")."""
    return sum(all(answer_of(r) == r["answer"] for _, r in part.iterrows()) for part in _pairs(frame).values())


def test_pairs_share_a_text_one_yes_one_no_two_images_same_type():
    frame = assign_contrast_pairs(_table(ROWS), seed=0)
    pairs = _pairs(frame)
    assert len(pairs) == 5  # 6 yes / 5 no over the two texts and types: one "yes" is left without a partner
    for part in pairs.values():
        assert len(part) == 2 and sorted(part["answer"]) == ["no", "yes"]
        assert part["image_id"].nunique() == 2 and part["question"].map(contrast_text).nunique() == 1
        assert part["image_type"].nunique() == 1  # every text has both answers within each type
    assert frame["contrast_id"].isna().sum() == 1
    validate_question_frame(frame)


def test_a_fixed_answer_per_text_or_per_type_and_text_scores_zero():
    frame = assign_contrast_pairs(_table(ROWS), seed=3)
    policies = {
        "always yes": lambda r: "yes",
        "per text": lambda r: "yes" if r["question"] == MASS else "no",
        "per type and text": lambda r: "yes" if (r["image_type"], r["question"]) in {(CT, MASS), (XR, EFFUSION)} else "no",
    }
    for name, policy in policies.items():
        assert _right_pairs(frame, policy) == 0, name
    assert _right_pairs(frame, lambda r: r["answer"]) == 5  # the answer key: every pair


def test_across_types_only_when_a_type_has_no_partner():
    rows = [("a", CT, MASS, "yes"), ("b", XR, MASS, "no"), ("c", XR, MASS, "yes"), ("d", XR, MASS, "no")]
    pairs = _pairs(assign_contrast_pairs(_table(rows), seed=0))
    types = sorted(tuple(sorted(p["image_type"])) for p in pairs.values())
    assert types == [(CT, XR), (XR, XR)]  # c-b or c-d within X-ray first; a pairs across types with the rest


def test_seeded_deterministic_and_free_of_row_order():
    table = _table(ROWS)
    first = assign_contrast_pairs(table, seed=1)
    again = assign_contrast_pairs(table.iloc[::-1], seed=1).set_index("qid").loc[first["qid"]]
    assert first["contrast_id"].tolist() == again["contrast_id"].tolist()
    seeds = {tuple(assign_contrast_pairs(table, seed=s)["contrast_id"].fillna("").tolist()) for s in range(8)}
    assert len(seeds) > 1  # the seed decides which same-type partners meet


def test_a_subset_draws_its_own_pairs_and_keeps_no_broken_one():
    full = assign_contrast_pairs(_table(ROWS), seed=0)
    part = full[full["image_id"].isin(["a", "b", "e"])].reset_index(drop=True)
    assert (validate_question_frame(part)["contrast_id"].value_counts() == 1).any()  # a partner left out: half a pair
    redrawn = assign_contrast_pairs(part, seed=0)
    counts = redrawn["contrast_id"].value_counts()
    assert (counts == 2).all() and len(counts) == 2  # mass a-b and effusion b-a; e's questions have no partner
    validate_question_frame(redrawn)


def test_a_table_whose_contrast_id_is_no_pair_is_refused():
    table = assign_contrast_pairs(_table(ROWS), seed=0)
    table.loc[table["contrast_id"].notna(), "contrast_id"] = "c"  # every pair under one id
    with pytest.raises(RecordError, match="field 'contrast_id' = 'c'"):
        validate_question_frame(table)
    two_yes = _table(ROWS[:3]).assign(contrast_id=["x", None, "x"])  # a and c: both answered yes
    with pytest.raises(RecordError, match="'contrast_id' = 'x'"):
        validate_question_frame(two_yes)


def test_an_old_table_without_the_column_reads_with_none():
    table = _table(ROWS).drop(columns="contrast_id")
    read = validate_question_frame(table)
    assert read["contrast_id"].isna().all() and str(read["contrast_id"].dtype) == "string"


def test_the_same_image_never_pairs_with_itself():
    rows = [("a", CT, MASS, "yes"), ("a", CT, MASS, "no")]  # a table that asks one text twice of one image
    frame = assign_contrast_pairs(_table(rows).assign(qid=["q0", "q1"]), seed=0)
    assert frame["contrast_id"].isna().all()


def test_within_a_type_the_same_source_first_so_a_table_per_source_and_text_wins_nothing():
    """Two sources of chest radiographs, each with both answers: every pair stays within its source, so a table
    keyed on (source, text), whatever it answers, wins none of them."""
    rows = [(f"{src}{i}", XR, MASS, "yes" if i % 2 else "no") for src in ("n", "v") for i in range(8)]
    table = _table(rows)
    table["source"] = ["nih" if i.startswith("n") else "vqa" for i in table["image_id"]]
    for seed in range(5):
        frame = assign_contrast_pairs(table, seed=seed)
        pairs = _pairs(frame)
        assert len(pairs) == 8 and all(p["source"].nunique() == 1 for p in pairs.values())
        for answers in ({"nih": "no", "vqa": "yes"}, {"nih": "yes", "vqa": "no"}):
            assert _right_pairs(frame, lambda r: answers[r["source"]]) == 0
