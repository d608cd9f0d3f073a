"""The README stays true: every command in its code blocks is exercised here or named with the test that runs it.

Every `probmed` command of every code block runs through the real CLI (parser,
override grammar, params schema) with its handler replaced by a recorder, so a
renamed option, a sub-command that no longer exists or an override key the
schema refuses fails this test. What the handlers then do is covered by the
tests named in OTHER_PROGRAMS, by the pipeline test, which runs the README's
main job (`probmed fetch-data && dvc repro`) end to end, and by tests/test_readme_runs.py, which runs every
command of the README as written after that main job. Commands of other
programs must be listed in OTHER_PROGRAMS with the test that runs them or why
none can (a GPU, an API key, docker).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from cli.test_overrides import recorded  # noqa: F401  (the fixture)
from probmed.cli import main

OTHER_PROGRAMS: dict[str, str] = {
    "bash": "the CI script runs .ci/install and pytest on a clean clone",
    ".": "shell: activates the virtual environment",
    ".venv/bin/python": "the CI script (pytest)",
    ".venv/bin/ruff": "the CI script runs it before the tests",
    ".venv/bin/mypy": "the CI script runs it before the tests",
    "dvc": "tests/test_pipeline.py: dvc repro, push, pull, exp run -S, exp show, metrics diff, plots show",
    "mlflow": "tests/test_pipeline.py::test_mlflow_server_serves_the_pipeline_runs starts mlflow server",
    "export": "needs an API key (OPENAI_API_KEY): not exercised here",
    "vllm": "needs a GPU: not exercised here (the API backend runs against a local mock server in tests)",
    "docker": "needs docker: tests/test_pipeline.py::test_dockerfile_lints_clean lints the Dockerfile",
    "wait": "shell",
}
# placeholders the README writes in capitals or angle brackets, and shell variables
PLACEHOLDERS = {"<tag>": "v1.0", "<sha>": "main", "$i": "0", "$i/4": "0/4"}


def readme_commands(text: str) -> list[str]:
    """Every simple command of every fenced code block (continuations joined, comments and pipes split)."""
    commands: list[str] = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            line = re.sub(r"^for .*?; do ", "", line).replace("; done", "")
            for part in re.split(r"&&|\||;|&(?=\s)", line):
                words = part.split()
                while words and re.match(r"^[A-Z_]+=", words[0]) and len(words) > 1:  # VAR=value cmd
                    words = words[1:]
                if words and words[0] not in ("done",):
                    commands.append(" ".join(words))
    return commands


def _readme(repo_root: Path) -> list[str]:
    return readme_commands((repo_root / "README.md").read_text(encoding="utf-8"))


def test_the_readme_parser_finds_every_block(repo_root):
    commands = _readme(repo_root)
    assert "dvc repro" in commands and "probmed fetch-data" in commands
    assert any(c.startswith("probmed merge ") and c.endswith("--out build/adhoc/predictions/llava-1.5-vanilla.parquet")
               for c in commands)  # a continued line is one command
    assert readme_commands("```bash\nprobmed a | probmed b  # c\n```\n") == ["probmed a", "probmed b"]  # a pipe is two


def test_every_other_program_is_accounted_for(repo_root):
    programs = {c.split()[0] for c in _readme(repo_root) if not c.startswith("probmed")}
    assert programs <= set(OTHER_PROGRAMS), programs - set(OTHER_PROGRAMS)


def _probmed_commands() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    return sorted({c for c in _readme(root) if c.startswith("probmed ")})


@pytest.mark.parametrize("command", _probmed_commands())
def test_every_probmed_command_of_the_readme_parses_and_its_overrides_check(command, recorded,  # noqa: F811
                                                                            monkeypatch, repo_root, capsys):
    monkeypatch.chdir(repo_root)
    argv = [PLACEHOLDERS.get(word, word) for word in shlex.split(command)[1:]]
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 0 and len(recorded) == 1, f"{command}: {err}"
