"""Original ProbMed file formats: round trips, strict question reading, structural response reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from probmed.core.errors import RecordError
from probmed.core.release_format import (
    parse_qa_type,
    question_id,
    questions_from_official,
    questions_to_official,
    read_question_file,
    read_questions_any,
    read_response_file,
    responses_to_official,
    validate_question_table,
    write_question_file,
    write_response_file,
)
from probmed.infra.io import write_parquet


def official_records() -> list[dict[str, Any]]:
    """Two images in the original question-file format (one abnormal, one normal)."""
    spec = [
        ("img1", "X-ray - Chest", "modality_gt", "yes"),
        ("img1", "X-ray - Chest", "modality_hallu", "no"),
        ("img1", "X-ray - Chest", "body_part_gt", "yes"),
        ("img1", "X-ray - Chest", "body_part_hallu", "no"),
        ("img1", "X-ray - Chest", "abnormality", "yes"),
        ("img1", "X-ray - Chest", "entity_gt_1", "yes"),
        ("img1", "X-ray - Chest", "entity_hallu_1", "no"),
        ("img1", "X-ray - Chest", "grounding_gt_1", "yes"),
        ("img1", "X-ray - Chest", "grounding_hallu_1", "no"),
        ("img2", "CT Scan - Brain", "modality_gt", "yes"),
        ("img2", "CT Scan - Brain", "modality_hallu", "no"),
        ("img2", "CT Scan - Brain", "body_part_gt", "yes"),
        ("img2", "CT Scan - Brain", "body_part_hallu", "no"),
        ("img2", "CT Scan - Brain", "abnormality", "no"),
        ("img2", "CT Scan - Brain", "entity_hallu", "no"),
    ]
    return [
        {
            "id": img,
            "i": i,
            "image": f"images/{img}.png",
            "image_type": itype,
            "qa_type": qa,
            "question": f"Question {qa} about {img}?",
            "answer": ans,
            "src_dataset": "ChestX-ray14" if img == "img1" else "MedICaT",
        }
        for i, (img, itype, qa, ans) in enumerate(spec)
    ]


def write(path: Path, obj: Any) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_parse_qa_type_vocabulary() -> None:
    assert parse_qa_type("modality_gt") == ("modality", "gt", "modality")
    assert parse_qa_type("body_part_hallu") == ("organ", "adversarial", "body_part")
    assert parse_qa_type("abnormality") == ("abnormality", "single", "abnormality")
    assert parse_qa_type("entity_hallu") == ("condition", "single", "entity_hallu")
    assert parse_qa_type("entity_gt_3") == ("condition", "gt", "entity_3")
    assert parse_qa_type("grounding_hallu_2") == ("position", "adversarial", "grounding_2")
    assert parse_qa_type("vqarad_gt_7") == (None, "gt", "vqarad_7")
    for bad in ("entity_gt", "modality", "grounding_gt_x", "Modality_gt", "", 3):
        assert parse_qa_type(bad) is None


def test_question_file_round_trip(tmp_path: Path) -> None:
    path = write(tmp_path / "test.json", official_records())
    frame = read_question_file(path)
    assert len(frame) == 15
    assert frame["category"].tolist()[:9] == [
        "modality", "modality", "organ", "organ", "abnormality", "condition", "condition", "position", "position"
    ]
    assert frame["polarity"].tolist()[-2:] == ["single", "single"]
    assert frame.loc[5, "pair_id"] == frame.loc[6, "pair_id"] == "img1:entity_1"
    assert frame.loc[0, "qid"] == question_id("img1", "modality_gt", "Question modality_gt about img1?")
    out = tmp_path / "again.json"
    write_question_file(frame, out)
    assert json.loads(out.read_text()) == official_records()
    assert questions_to_official(frame) == official_records()


def test_vqarad_records_take_category_field_or_default() -> None:
    recs = [
        {"id": "synpic1", "i": 0, "image": "synpic1.jpg", "image_type": "X-ray - Chest", "qa_type": "vqarad_gt_0",
         "question": "Is there a mass?", "answer": "yes", "src_dataset": "VQA-RAD", "category": "condition"},
        {"id": "synpic1", "i": 1, "image": "synpic1.jpg", "image_type": "X-ray - Chest", "qa_type": "vqarad_hallu_0",
         "question": "Is there a fracture?", "answer": "no", "src_dataset": "VQA-RAD"},
        {"id": "synpic2", "i": 2, "image": "synpic2.jpg", "image_type": "MRI - Brain", "qa_type": "vqarad_gt_1",
         "question": "Is this an MRI?", "answer": "yes", "src_dataset": "VQA-RAD", "category": "modality"},
    ]
    frame = questions_from_official(recs)
    assert frame["category"].tolist() == ["condition", "condition", "modality"]
    assert questions_to_official(frame, with_category=True)[2]["category"] == "modality"


def _mutated(mutate) -> list[dict[str, Any]]:
    recs = official_records()
    mutate(recs)
    return recs


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r[3].update(qa_type="body_part_fake"), r"record 3 \(image img1\): field 'qa_type': unknown"),
        (lambda r: r[4].update(answer="Yes"), r"record 4 \(image img1\): field 'answer'"),
        (lambda r: r[1].update(answer="yes"), r"record 1 \(image img1\): field 'answer'.*adversarial"),
        (lambda r: r[7].pop("question"), r"record 7 \(image img1\): field 'question': missing"),
        (lambda r: r[9].pop("src_dataset"), r"record 9 \(image img2\): field 'src_dataset': missing"),
        (lambda r: r[2].update(i=1), r"record 2 \(image img1\): field 'i': duplicate"),
        (lambda r: r.insert(5, dict(r[4], i=99)), r"record 5 \(image img1\): field 'qa_type': duplicate"),
        (lambda r: r.append(dict(r[0], i=99)), r"record 15 \(image img1\): field 'id': .*not contiguous"),
        (lambda r: r.pop(5), r"record 5 \(image img1\): field 'qa_type': .*no ground-truth twin"),
        (lambda r: r.pop(0), r"record 0 \(image img1\): field 'qa_type': .*no ground-truth twin"),
        (lambda r: r[10].update(image_type="MRI - Brain"), r"record 10 \(image img2\): field 'image_type'"),
        (lambda r: r[0].update(id=None), r"record 0 \(image \?\): field 'id'"),
        (lambda r: r[0].update(i="0"), r"record 0 \(image img1\): field 'i'"),
        (lambda r: r[0].update(question=""), r"record 0 \(image img1\): field 'question'"),
    ],
)
def test_strict_reader_names_record_image_and_field(tmp_path: Path, mutate, needle: str) -> None:
    path = write(tmp_path / "bad.json", _mutated(mutate))
    with pytest.raises(RecordError, match=needle):
        read_question_file(path)


def test_reader_rejects_non_list_and_invalid_json(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="JSON list"):
        read_question_file(write(tmp_path / "a.json", {"id": 1}))
    bad = tmp_path / "b.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(RecordError, match="not valid JSON"):
        read_question_file(bad)
    with pytest.raises(RecordError, match="record 1: expected an object"):
        read_question_file(write(tmp_path / "c.json", [official_records()[0], 5]))
    with pytest.raises(FileNotFoundError):
        read_question_file(tmp_path / "missing.json")


def test_write_question_file_refuses_invalid_table_and_writes_nothing(tmp_path: Path) -> None:
    frame = read_question_file(write(tmp_path / "t.json", official_records()))
    frame = pd.concat([frame.iloc[[0]], frame.iloc[9:], frame.iloc[1:9]], ignore_index=True)  # img1 split
    out = tmp_path / "out.json"
    with pytest.raises(RecordError, match="not contiguous"):
        write_question_file(frame, out)
    assert not out.exists()


def test_parquet_question_table_is_checked_strictly(tmp_path: Path) -> None:
    frame = read_question_file(write(tmp_path / "t.json", official_records()))
    good = tmp_path / "q.parquet"
    write_parquet(frame, good)
    assert read_questions_any(good).equals(frame)
    swapped = frame.iloc[[1, 0, *range(2, 15)]].reset_index(drop=True)
    with pytest.raises(RecordError, match=r"record 0 \(image img1\): field 'pair_id'.*no ground-truth twin"):
        validate_question_table(swapped)
    broken = frame.copy()
    broken.loc[3, "answer"] = "maybe"
    bad = tmp_path / "bad.parquet"
    write_parquet(broken, bad)
    with pytest.raises(RecordError, match=r"record 3 \(image img1\): field 'answer'"):
        read_questions_any(bad)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet")
    with pytest.raises(RecordError, match="not a readable Parquet"):
        read_questions_any(junk)


def _responses() -> list[dict[str, Any]]:
    return [
        {"id": r["id"], "image_type": r["image_type"], "qa_type": r["qa_type"], "question": r["question"],
         "gt_ans": r["answer"], "response": "Yes"}
        for r in official_records()
    ]


def test_response_reader_checks_structure_only(tmp_path: Path) -> None:
    recs = _responses()
    recs[0]["qa_type"] = "something_unknown"  # the original scores it (as position): so do we
    recs[1]["gt_ans"] = "No"
    recs.append(dict(recs[2]))  # duplicates are the original's business too
    recs[5]["gt_ans"] = None  # the original applies its no-rule: so do we
    recs[6]["id"] = 17
    assert len(read_response_file(write(tmp_path / "r.json", recs))) == 16


@pytest.mark.parametrize(
    ("mutate", "needle"),
    [
        (lambda r: r[4].pop("response"), r"record 4 \(image img1\): field 'response': missing"),
        (lambda r: r[2].update(response=None), r"record 2 \(image img1\): field 'response': expected a string"),
        (lambda r: r[9].update(qa_type=1), r"record 9 \(image img2\): field 'qa_type'"),
        (lambda r: r[9].update(image_type=["x"]), r"record 9 \(image img2\): field 'image_type'"),
        (lambda r: r[1].update(id=None), r"record 1 \(image None\): field 'id'"),
        (lambda r: r.__setitem__(3, "x"), r"record 3: expected an object"),
    ],
)
def test_response_reader_structural_errors(tmp_path: Path, mutate, needle: str) -> None:
    recs = _responses()
    mutate(recs)
    with pytest.raises(RecordError, match=needle):
        read_response_file(write(tmp_path / "r.json", recs))


def test_write_response_file_keeps_every_question(tmp_path: Path) -> None:
    questions = read_question_file(write(tmp_path / "t.json", official_records()))
    preds = pd.DataFrame(
        {
            "qid": questions["qid"].iloc[:13],
            "response": ["Yes, it is."] * 12 + [""],
            "label": ["yes"] * 12 + ["no"],  # logit mode: no text, the label answers
            "p_yes": [np.nan] * 12 + [0.1],
        }
    )
    out = tmp_path / "responses.json"
    assert write_response_file(questions, preds, out) == 2
    recs = read_response_file(out)
    assert len(recs) == 15
    assert recs[0] == {
        "id": "img1", "image_type": "X-ray - Chest", "qa_type": "modality_gt",
        "question": "Question modality_gt about img1?", "gt_ans": "yes", "response": "Yes, it is.",
    }
    assert recs[12]["response"] == "no"
    assert recs[13]["response"] == recs[14]["response"] == ""


def test_duplicate_predictions_are_refused(tmp_path: Path) -> None:
    questions = read_question_file(write(tmp_path / "t.json", official_records()))
    preds = pd.DataFrame({"qid": [questions["qid"].iat[0]] * 2, "response": ["Yes", "No"], "label": ["yes", "no"]})
    with pytest.raises(RecordError, match="duplicate qid"):
        responses_to_official(questions, preds)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda r: r[4].pop("response"),
        lambda r: r[4].pop("question"),
        lambda r: r[4].pop("gt_ans"),
        lambda r: r[4].pop("image_type"),
        lambda r: r[4].pop("qa_type"),
        lambda r: r[4].pop("id"),
        lambda r: r[2].update(response=None),
        lambda r: r[2].update(response=3),
        lambda r: r[9].update(qa_type=1),
        lambda r: r[9].update(qa_type=None),
        lambda r: r[9].update(qa_type=["modality_gt"]),
        lambda r: r[9].update(image_type=["x"]),
        lambda r: r[9].update(image_type={"a": 1}),
        lambda r: r[1].update(id=None),
        lambda r: r[1].update(id=True),
        lambda r: r[1].update(id=[1]),
        lambda r: r.__setitem__(3, "x"),
        lambda r: r.__setitem__(3, None),
        lambda r: r.__setitem__(3, [1, 2]),
    ],
)
def test_scoring_a_file_refuses_what_the_reader_refuses(tmp_path: Path, mutate) -> None:
    """score_official_file checks while it scores; it must refuse every file the reader refuses, with the same error."""
    from probmed.scoring.official import score_official_file

    recs = _responses()
    mutate(recs)
    path = write(tmp_path / "r.json", recs)
    with pytest.raises(RecordError) as by_reader:
        read_response_file(path)
    with pytest.raises(RecordError) as by_scorer:
        score_official_file(path)
    assert str(by_scorer.value) == str(by_reader.value)


def test_scoring_a_valid_file_equals_scoring_its_records(tmp_path: Path) -> None:
    from probmed.scoring.official import score_official, score_official_file

    recs = _responses()
    recs[6]["id"] = 17
    recs[5]["gt_ans"] = None
    path = write(tmp_path / "r.json", recs)
    assert score_official_file(path) == score_official(read_response_file(path))
