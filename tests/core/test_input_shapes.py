"""Input files whose shape would crash or mislead: JSON nested 100,000 deep, one image id with two image files.

Both are the issue's probe inputs; each exits 2 naming the file (and the id with both paths) and writes nothing.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from probmed.cli import main
from probmed.core.errors import RecordError
from probmed.core.records import QUESTION_COLUMNS, read_questions, validate_question_frame
from probmed.core.release_format import read_question_file, read_response_file

DEEP = "[" * 100_000 + "]" * 100_000
FOLDER = "data/vqa-rad/VQA_RAD Image Folder"


def test_a_response_file_nested_100000_deep_exits_2_naming_the_file(tmp_path, capsys):
    path = tmp_path / "responses.json"
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(RecordError, match=r"responses\.json: JSON nested deeper than"):
        read_response_file(path)
    out = tmp_path / "official_scores.json"
    assert main(["score-official", str(path), "--out", str(out)]) == 2
    assert f"{path}: JSON nested deeper than" in capsys.readouterr().err and not out.exists()


def test_a_deep_value_inside_a_record_is_refused_too(tmp_path):
    record = '{"id": "a", "image_type": "X-ray - Chest", "qa_type": "abnormality", "question": "?", "response": "yes",'
    path = tmp_path / "questions.json"
    path.write_text(f'[{record} "gt_ans": {DEEP}}}]', encoding="utf-8")
    with pytest.raises(RecordError, match=r"questions\.json: JSON nested deeper than"):
        read_question_file(path)


def question_rows(paths: dict[str, list[str]]) -> pd.DataFrame:
    """Abnormality questions, one per listed path, for each image id."""
    rows = []
    for image_id, image_paths in paths.items():
        for k, image_path in enumerate(image_paths):
            rows.append({
                "qid": f"{image_id}:{k}", "image_id": image_id, "image_path": image_path, "source": "VQA-RAD",
                "category": "abnormality", "polarity": "single", "pair_id": f"{image_id}:{k}",
                "question": f"Is there any abnormality in this image? ({k})", "answer": "yes",
                "entity": "abnormality", "image_type": "CT Scan - Chest", "qa_type": "abnormality",
                "strategy": "gt", "evidence": "", "licence": "CC0-1.0",
            })
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


PROBE = {
    "synpic100132": [f"{FOLDER}/synpic100132.jpg"] * 2,
    "synpic100176": [f"{FOLDER}/synpic100176.jpg", f"{FOLDER}/synpic100132.jpg"],  # the row asked with 132's pixels
}
MESSAGE = (rf"image 'synpic100176' has two image paths: '{FOLDER}/synpic100176.jpg' \(record 2\) and "
           rf"'{FOLDER}/synpic100132.jpg' \(record 3\)")


def test_one_image_id_with_two_image_files_is_refused_naming_both(tmp_path):
    frame = question_rows(PROBE)
    with pytest.raises(RecordError, match=MESSAGE):
        validate_question_frame(frame, "questions")
    path = tmp_path / "questions.parquet"
    frame.to_parquet(path)
    with pytest.raises(RecordError, match=rf"{path.name}: {MESSAGE}"):
        read_questions(path)


def test_a_question_file_with_two_files_for_one_id_is_refused(tmp_path):
    records = []
    for image_id, image_paths in PROBE.items():
        for image_path, (qa_type, answer) in zip(image_paths, [("modality_gt", "yes"), ("modality_hallu", "no")]):
            records.append({"id": image_id, "i": len(records), "image": image_path, "image_type": "CT Scan - Chest",
                            "qa_type": qa_type, "question": f"Is this a {qa_type}?", "answer": answer,
                            "src_dataset": "VQA-RAD"})
    path = tmp_path / "test.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(RecordError, match="image 'synpic100176' has two image paths"):
        read_question_file(path)


def test_predict_refuses_the_set_before_asking_anything(repo_root, tmp_path, capsys):
    path = tmp_path / "questions.parquet"
    question_rows(PROBE).to_parquet(path)
    out = tmp_path / "predictions.parquet"
    code = main(["predict", "--params", str(repo_root / "params.yaml"), "--questions", str(path), "--out", str(out),
                 "--no-progress", "model=always-yes", f"predict.store_dir={tmp_path / 'answers'}"])
    assert code == 2 and "image 'synpic100176' has two image paths" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "answers").exists()


def test_one_path_per_id_and_absent_paths_pass():
    frame = question_rows({"a": ["x/a.png"] * 3, "b": ["x/b.png"]})
    assert validate_question_frame(frame) is not None
    validate_question_frame(frame.assign(image_path=None))

