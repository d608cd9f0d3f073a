"""The generate gate refuses a set with no questions (it used to report "passed" on one)."""

from __future__ import annotations

from probmed.cli import main
from probmed.core.records import write_image_records


def test_generate_refuses_an_empty_question_set(repo_root, tmp_path, capsys):
    records = tmp_path / "none.parquet"
    write_image_records([], records)
    out = tmp_path / "questions.parquet"
    code = main(["generate", "--params", str(repo_root / "params.yaml"), "--records", str(records), "--out", str(out),
                 "--report", str(tmp_path / "report.json"), "--audit-dir", str(tmp_path / "audit"),
                 "--official", str(tmp_path / "test.json")])
    err = capsys.readouterr().err
    assert code == 2 and "fails the audit gate" in err and "has no questions" in err
    assert not out.exists() and not (tmp_path / "test.json").exists()
