"""The curate -> generate -> stats chain through the `probmed` command, on real VQA-RAD and MedICaT data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from probmed.cli import main
from probmed.core.release_format import read_question_file
from probmed.core.records import read_image_records, read_questions


def test_curate_generate_stats(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    params = ["--params", str(repo_root / "params.yaml")]
    for src, folder in (("vqarad", "vqa-rad"), ("medicat", "medicat-sample")):
        assert main(["curate", src, "--data", str(shared_data / folder), "--out", str(tmp_path / f"{src}.parquet"),
                     "--image-root", str(repo_root), *params]) == 0
    assert len(read_image_records(tmp_path / "vqarad.parquet")) == 314
    rep = json.loads((tmp_path / "vqarad.report.json").read_text())
    assert rep["excluded"]["image without questions"] == {"count": 1, "ids": ["synpic35356.jpg"]}
    out = tmp_path / "q"
    args = ["generate", "--records", str(tmp_path / "vqarad.parquet"), str(tmp_path / "medicat.parquet"),
            "--out", str(out / "q.parquet"), "--official", str(out / "test.json"), "--report", str(out / "rep.json"), *params]
    assert main([*args, "--seed", "7", "--strategy", "popular"]) == 0
    q = read_questions(out / "q.parquet")
    assert read_question_file(out / "test.json")["qid"].tolist() == q["qid"].tolist()
    assert (repo_root / q["image_path"].iat[0]).is_file()  # paths relative to the image root
    gen = json.loads((out / "rep.json").read_text())
    assert gen["seed"] == 7 and gen["strategy"] == "popular" and gen["questions"] == len(q)
    assert set(q.strategy) <= {"gt", "popular"}
    assert main(["stats", "--questions", str(out / "q.parquet"), "--records", str(tmp_path / "vqarad.parquet"),
                 "--out", str(tmp_path / "stats"), *params]) == 0
    t1 = pd.read_csv(tmp_path / "stats" / "table1.csv")
    assert t1.iloc[-1]["image_type"] == "Total" and t1.iloc[-1]["questions"] == len(q)
    assert (tmp_path / "stats" / "stats.md").read_text().startswith("# Dataset statistics")


def test_generate_without_records_fails_clearly(tmp_path: Path, repo_root: Path, capsys) -> None:
    rc = main(["generate", "--records", str(tmp_path / "none.parquet"), "--out", str(tmp_path / "q.parquet"), "--params", str(repo_root / "params.yaml")])
    assert rc == 2 and "run `probmed curate` first" in capsys.readouterr().err
    assert not (tmp_path / "q.parquet").exists()
