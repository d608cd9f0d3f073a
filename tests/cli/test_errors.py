"""One error root: the CLI turns every ProbmedError into one line and exit 2, and nothing else."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import probmed.cli
from probmed.cli import main
from probmed.core import errors


def test_every_error_a_user_can_fix_derives_from_the_root():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if c.__module__ == errors.__name__]
    assert len(classes) >= 10
    assert all(issubclass(c, errors.ProbmedError) for c in classes)
    # the built-in types they replaced still catch them
    assert issubclass(errors.ConfigError, ValueError) and issubclass(errors.MissingFileError, FileNotFoundError)


def test_a_user_error_is_one_line_and_exit_2(tmp_path, capsys):
    missing = tmp_path / "nope.parquet"
    assert main(["score", str(missing), str(missing), "--out-dir", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "probmed score: error:" in err and str(missing) in err
    assert "Traceback" not in err
    assert not (tmp_path / "s").exists()


def test_a_bug_keeps_its_traceback(monkeypatch, tmp_path):
    def broken(args):
        raise KeyError("a bug, not the user's fault")

    monkeypatch.setattr("probmed.cli.scoring.cmd_score_official", broken)
    with pytest.raises(KeyError, match="a bug"):
        main(["score-official", str(tmp_path / "r.json"), "--out", str(tmp_path / "o.json")])


def test_no_command_rewraps_errors():
    """The CLI catches ProbmedError once, in main; command modules let errors through."""
    names = {n for n, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, Exception)}
    names |= {"ValueError", "RuntimeError", "FileNotFoundError"}
    for path in Path(probmed.cli.__file__).parent.glob("*.py"):
        if path.name == "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ExceptHandler) and node.type is not None:
                caught = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
                caught |= {n.attr for n in ast.walk(node.type) if isinstance(n, ast.Attribute)}
                assert not caught & names, f"{path.name}:{node.lineno} catches {sorted(caught & names)}"


# --- exit codes with one meaning each ------------------------------------------------------------------------


def test_a_bug_from_the_console_script_is_exit_4_not_1(monkeypatch, tmp_path, capsys):
    """Exit 1 means "some questions failed after retries"; a traceback used to exit 1 too."""
    def broken(args):
        raise KeyError("a bug, not the user's fault")

    monkeypatch.setattr("probmed.cli.scoring.cmd_score_official", broken)
    monkeypatch.setattr("sys.argv", ["probmed", "score-official", str(tmp_path / "r.json"), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit) as exit_info:
        probmed.cli.run()
    assert exit_info.value.code == errors.EXIT_INTERNAL == 4
    err = capsys.readouterr().err
    assert "Traceback" in err and "a bug" in err and "internal error" in err


@pytest.mark.parametrize("errno_, code, kind", [(28, 3, "environment error"), (122, 3, "environment error"),
                                                (5, 3, "environment error"), (13, 2, "error")])
def test_os_errors_of_the_machine_are_exit_3_in_one_line(monkeypatch, tmp_path, capsys, errno_, code, kind):
    import os

    def failing(args):
        err = PermissionError if errno_ == 13 else OSError
        raise err(errno_, os.strerror(errno_), str(tmp_path / "out.json"))

    monkeypatch.setattr("probmed.cli.scoring.cmd_score_official", failing)
    assert main(["score-official", str(tmp_path / "r.json"), "--out", str(tmp_path / "o")]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"probmed score-official: {kind}: " in err and "Traceback" not in err


def test_environment_errors_carry_exit_3_and_user_errors_exit_2():
    assert errors.DiskFullError("x").exit_code == errors.DatabaseError("x").exit_code == errors.EXIT_ENVIRONMENT == 3
    assert errors.ConfigError("x").exit_code == errors.StoreLockedError("x").exit_code == errors.EXIT_USER_ERROR == 2
    assert issubclass(errors.DiskFullError, OSError)  # `except OSError` code keeps catching a full disk
