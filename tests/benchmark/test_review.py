from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from probmed.benchmark.questions import generate_questions
from probmed.benchmark.review import export_review, read_verdicts, review_report
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import main
from probmed.core.errors import RecordError
from probmed.core.records import write_predictions, write_questions


def test_round_trip(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    sheet = export_review(q, tmp_path, n_images=10, seed=3, image_root=shared_data)
    again = export_review(q, tmp_path / "b", n_images=10, seed=3, image_root=shared_data)
    other = export_review(q, tmp_path / "c", n_images=10, seed=4, image_root=shared_data)
    assert sheet["qid"].tolist() == again["qid"].tolist() != other["qid"].tolist()
    assert sheet["image_id"].nunique() == 10
    html = (tmp_path / "review.html").read_text()
    assert html.count("<img ") == 10
    src = html.split("<img src='", 1)[1].split("'", 1)[0]
    assert (tmp_path / src).is_file()  # the page shows the real image
    # reviewers: first question invalid, the rest valid
    filled = pd.read_csv(tmp_path / "review.csv", dtype=str, keep_default_na=False)
    filled["valid"] = ["no"] + ["yes"] * (len(filled) - 1)
    filled.to_csv(tmp_path / "filled.csv", index=False)
    preds = pd.DataFrame({"qid": filled.qid, "model": "m", "setting": "vanilla", "response": "", "label": ["no"] + ["yes"] * (len(filled) - 1),
                          "p_yes": float("nan"), "latency_s": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "cache_key": "", "error": ""})
    rep = review_report(read_verdicts(tmp_path / "filled.csv"), preds)
    assert rep["valid_pct"] == round(100 * (len(filled) - 1) / len(filled), 2)
    assert rep["invalid_qids"] == [filled.qid[0]]
    right = (preds.label == filled.answer)
    assert rep["accuracy_all_pct"] == round(100 * right.mean(), 2)
    assert rep["accuracy_valid_pct"] == round(100 * right[1:].mean(), 2)
    write_predictions(preds, tmp_path / "p.parquet")
    assert main(["review", "import", str(tmp_path / "filled.csv"), "--predictions", str(tmp_path / "p.parquet"),
                 "--out", str(tmp_path / "rep.json"), "--params", str(repo_root / "params.yaml")]) == 0
    assert (tmp_path / "rep.json").exists()


def test_unfilled_verdict_is_an_error(tmp_path: Path, repo_root: Path) -> None:
    (tmp_path / "s.csv").write_text("qid,valid\nq1,yes\nq2,\n")
    with pytest.raises(RecordError, match="row 3 \\(qid q2\\)"):
        read_verdicts(tmp_path / "s.csv")
    assert main(["review", "import", str(tmp_path / "s.csv"), "--out", str(tmp_path / "r.json"), "--params", str(repo_root / "params.yaml")]) == 2
    assert not (tmp_path / "r.json").exists()


def test_cli_export(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    q, _ = generate_questions(load_vqarad(shared_data / "vqa-rad", shared_data).records)
    write_questions(q, tmp_path / "q.parquet")
    assert main(["review", "export", "--questions", str(tmp_path / "q.parquet"), "--n", "5", "--out", str(tmp_path / "rv"),
                 "--params", str(repo_root / "params.yaml")]) == 0
    assert pd.read_csv(tmp_path / "rv" / "review.csv")["image_id"].nunique() == 5
