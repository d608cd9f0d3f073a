"""Damaged or foreign tables given to a command: exit 2 with one line naming the file, nothing written, never a traceback.

Every command that reads a user-given table reads it through probmed.infra.tables; these run the commands
on a truncated Parquet file, a JSON response file where Parquet is expected, and question or response files
holding a lone UTF-16 surrogate, on a real VQA-RAD question set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probmed.benchmark.questions import generate_questions
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import main
from probmed.core.records import write_image_records, write_predictions, write_questions
from probmed.core.release_format import write_question_file, write_response_file
from probmed.scoring.baselines import always_yes

IMAGES = 6


@pytest.fixture(scope="module")
def real(tmp_path_factory, shared_data: Path) -> dict[str, Path]:
    """A 6-image VQA-RAD question set as Parquet and as test.json, its records, always-yes predictions and their
    response file."""
    root = tmp_path_factory.mktemp("real")
    records = load_vqarad(shared_data / "vqa-rad", shared_data).records
    questions = generate_questions(records, seed=0)[0]
    ids = list(dict.fromkeys(questions["image_id"]))[:IMAGES]
    questions = questions[questions["image_id"].isin(ids)].reset_index(drop=True)
    files = {"questions": root / "q.parquet", "json": root / "test.json", "records": root / "records.parquet",
             "predictions": root / "pred.parquet", "responses": root / "responses.json"}
    write_questions(questions, files["questions"])
    write_question_file(questions, files["json"])
    write_image_records([r for r in records if r.image_id in ids], files["records"])
    predictions = always_yes(questions)
    write_predictions(predictions, files["predictions"])
    write_response_file(questions, predictions, files["responses"])
    return files


def truncated(real: dict[str, Path], name: str, folder: Path) -> Path:
    """The first half of one of the real Parquet files (a copy cut short by a full disk or a killed copy)."""
    data = real[name].read_bytes()
    path = folder / f"cut-{real[name].name}"
    path.write_bytes(data[: len(data) // 2])
    return path


def run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


# (command line with BAD where the damaged file goes, which real file is damaged); OUT is where it would write
COMMANDS = {
    "predict": (["predict", "--questions", "BAD", "--out", "OUT", "model=always-yes", "--no-progress"], "questions"),
    "score predictions": (["score", "Q", "BAD", "--out-dir", "OUT"], "predictions"),
    "score questions": (["score", "BAD", "P", "--out-dir", "OUT"], "questions"),
    "export-responses predictions": (["export-responses", "Q", "BAD", "--out", "OUT"], "predictions"),
    "export-responses questions": (["export-responses", "BAD", "P", "--out", "OUT"], "questions"),
    "audit questions": (["audit", "BAD", "--no-pixels", "--out-dir", "OUT"], "questions"),
    "audit records": (["audit", "Q", "--records", "BAD", "--no-pixels", "--out-dir", "OUT"], "records"),
    "audit blind predictions": (["audit", "Q", "--blind-predictions", "BAD", "--no-pixels", "--out-dir", "OUT"],
                                "predictions"),
    "merge": (["merge", "Q", "BAD", "--out", "OUT"], "predictions"),
    "baseline": (["baseline", "always-yes", "BAD", "--out", "OUT"], "questions"),
    "release": (["release", "BAD", "--out-dir", "OUT", "--allow-unaudited"], "questions"),
}


def command_line(real: dict[str, Path], template: list[str], bad: Path, out: Path, repo_root: Path) -> list[str]:
    names = {"BAD": str(bad), "OUT": str(out), "Q": str(real["questions"]), "P": str(real["predictions"])}
    return [names.get(token, token) for token in template] + ["--params", str(repo_root / "params.yaml")]


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_truncated_parquet_file_is_exit_2_naming_it(command, real, repo_root, tmp_path, capsys):
    template, damaged = COMMANDS[command]
    bad = truncated(real, damaged, tmp_path)
    out = tmp_path / "out"
    code, err = run(command_line(real, template, bad, out, repo_root), capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and f"{bad}: not a readable Parquet table: a Parquet file cut short or damaged" in err
    assert not out.exists()


@pytest.mark.parametrize("command", ["score predictions", "export-responses predictions", "merge"])
def test_a_response_file_given_as_predictions_is_exit_2_saying_what_reads_it(command, real, repo_root, tmp_path, capsys):
    template, _ = COMMANDS[command]
    out = tmp_path / "out"
    code, err = run(command_line(real, template, real["responses"], out, repo_root), capsys)
    assert code == 2, err
    assert f"prediction table {real['responses']}: not a readable Parquet table: it holds JSON text" in err
    assert "probmed score-responses" in err and err.count("\n") == 1 and not out.exists()


def with_lone_surrogate(path: Path, out: Path, record: int, field: str) -> Path:
    """A copy of a JSON list of records with a lone surrogate escape in one record's field, as a tool that cut
    an emoji in half writes it."""
    records = json.loads(path.read_text())
    records[record][field] = records[record][field][:5] + "\ud800" + records[record][field][5:]
    out.write_text(json.dumps(records))  # ensure_ascii: written as the escape \ud800
    assert "\\ud800" in out.read_text()
    return out


@pytest.mark.parametrize("command", [
    ["import-release", "BAD", "--out", "OUT"],
    ["release", "BAD", "--out-dir", "OUT", "--allow-unaudited"],
    ["score", "BAD", "P", "--out-dir", "OUT"],
    ["export-responses", "BAD", "P", "--out", "OUT"],
    ["audit", "BAD", "--no-pixels", "--out-dir", "OUT"],
], ids=lambda c: c[0])
def test_a_lone_surrogate_in_a_question_file_is_exit_2_naming_record_and_field(command, real, repo_root, tmp_path,
                                                                               capsys):
    bad = with_lone_surrogate(real["json"], tmp_path / "test.json", 7, "question")
    out = tmp_path / "out"
    code, err = run(command_line(real, command, bad, out, repo_root), capsys)
    assert code == 2, err
    assert f"question file {bad}: record 7, field 'question': a lone UTF-16 surrogate" in err
    assert err.count("\n") == 1 and not out.exists()


def test_a_lone_surrogate_in_a_response_file_is_exit_2_for_the_project_scorer(real, repo_root, tmp_path, capsys):
    bad = with_lone_surrogate(real["responses"], tmp_path / "responses.json", 3, "response")
    out = tmp_path / "out"
    code, err = run(["score-responses", str(bad), "--out-dir", str(out), "--params", str(repo_root / "params.yaml")],
                    capsys)
    assert code == 2 and f"response file {bad}: record 3, field 'response': a lone UTF-16 surrogate" in err
    assert not out.exists()
    # the official-compatible scorer writes no record's text and scores what the original scores
    assert main(["score-official", str(bad), "--out", str(tmp_path / "official.json")]) == 0

