"""Importing an original-format question file as-is (the gated release has the same layout)."""

from __future__ import annotations

import json
from pathlib import Path

from probmed.benchmark.questions import generate_questions
from probmed.benchmark.sources.probmed_release import import_release
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import main
from probmed.core.records import read_questions
from probmed.core.release_format import write_question_file


def test_import_release_round_trip(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    write_question_file(q, tmp_path / "test.json")
    back = import_release(tmp_path / "test.json", "probmed_images")
    assert back["qid"].tolist() == q["qid"].tolist()
    assert all(p.startswith("probmed_images/") for p in back["image_path"])
    assert main(["import-release", str(tmp_path / "test.json"), "--out", str(tmp_path / "q.parquet")]) == 0
    assert len(read_questions(tmp_path / "q.parquet")) == len(q)


def test_bad_release_file_names_the_record(tmp_path: Path, capsys) -> None:
    recs = [{"id": "img1", "i": 0, "image": "a.png", "image_type": "X-ray - Chest", "qa_type": "modality_gt",
             "question": "Is this an X-ray image?", "answer": "maybe", "src_dataset": "MedICaT"}]
    (tmp_path / "t.json").write_text(json.dumps(recs))
    assert main(["import-release", str(tmp_path / "t.json"), "--out", str(tmp_path / "q.parquet")]) == 2
    err = capsys.readouterr().err
    assert "record 0" in err and "img1" in err and "answer" in err
    assert not (tmp_path / "q.parquet").exists()
