"""The README and the documentation stay true: every command in their code blocks is exercised here or named with the test that runs it.

Every `probmed` command of every shell block of README.md and of every page under docs/ runs through the real
CLI (parser, override grammar, params schema) with its handler replaced by a recorder, so a renamed option, a
sub-command that no longer exists or an override key the schema refuses fails this test; a model a page defines
in a `models.yaml` block is given to the CLI as dotted overrides, so its keys are checked too. What the handlers
then do is covered by the tests named in OTHER_PROGRAMS, by the pipeline test, which runs the README's main job
(`probmed fetch-data && dvc repro`) end to end, and by tests/test_readme_runs.py, which runs every command of the
README and the pages as written after that main job. Commands of other programs must be listed in OTHER_PROGRAMS
with the test that runs them or why none can (a GPU, an API key, docker). The README is the front door: at most
README_MAX_LINES lines.
"""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

import pytest
import yaml

from cli.test_overrides import recorded  # noqa: F401  (the fixture)
from probmed.cli import main

README_MAX_LINES = 250

OTHER_PROGRAMS: dict[str, str] = {
    "bash": "the CI script runs .ci/install and pytest on a clean clone",
    ".": "shell: activates the virtual environment",
    ".venv/bin/python": "the CI script (pytest)",
    ".venv/bin/ruff": "the CI script runs it before the tests",
    ".venv/bin/mypy": "the CI script runs it before the tests",
    "dvc": "tests/test_pipeline.py: dvc repro, push, pull, exp run -S, exp show, metrics diff, plots show",
    "mlflow": "tests/test_pipeline.py::test_mlflow_server_serves_the_pipeline_runs starts mlflow server",
    "export": "sets a credential for the next command: tests/test_readme_runs.py gives the gateway example its URL",
    "vllm": "needs a GPU: not exercised here (the API backend runs against a local mock server in tests)",
    "docker": "needs docker: tests/test_pipeline.py::test_dockerfile_lints_clean lints the Dockerfile",
    "wait": "shell",
    "ray": "tests/inference/models/test_ray_engine.py starts a head and a worker node (ray_cluster.py)",
}
# placeholders the README writes in capitals or angle brackets, and shell variables
PLACEHOLDERS = {"<tag>": "v1.0", "<sha>": "main", "$i": "0", "$i/4": "0/4"}


def code_blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of one language (``bash`` also takes blocks with no language, ``sh`` and ``console``),
    read fence by fence so a closing fence never opens a block."""
    wanted = {"bash", "sh", "console", ""} if language == "bash" else {language}
    blocks: list[str] = []
    current: list[str] | None = None
    keep = False
    for line in text.splitlines():
        fence = re.match(r"^```\s*([\w-]*)\s*$", line)
        if fence and current is None:
            current, keep = [], fence.group(1) in wanted
        elif line.startswith("```") and current is not None:
            if keep:
                blocks.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line)
    return blocks


def documented_files(root: Path) -> list[Path]:
    """README.md, then every page of the documentation site in its nav order (then any page the nav leaves out)."""
    nav = yaml.safe_load((root / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]

    def pages(items) -> list[str]:
        out: list[str] = []
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            out += pages(value) if isinstance(value, list) else [value]
        return out

    docs = root / "docs"
    listed = [docs / p for p in pages(nav) if (docs / p).is_file()]
    rest = sorted(p for p in docs.rglob("*.md") if p not in listed and "_hooks" not in p.parts)
    return [root / "README.md", *listed, *rest]


def documented_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in documented_files(root))


def model_blocks(text: str) -> dict[str, dict]:
    """The `models.yaml` entries the pages show (YAML blocks of one or more indented `name: {backend: ...}`)."""
    models: dict[str, dict] = {}
    for block in code_blocks(text, "yaml"):
        entries = yaml.safe_load(textwrap.dedent(block))
        if isinstance(entries, dict) and all(isinstance(v, dict) and "backend" in v for v in entries.values()):
            models.update(entries)
    return models


def model_overrides(models: dict[str, dict]) -> list[str]:
    """A model entry as the dotted overrides that define it on a command line."""
    return [f"models.{name}.{key}={'null' if value is None else value}"
            for name, entry in models.items() for key, value in entry.items()]


def readme_commands(text: str) -> list[str]:
    """Every simple command of every shell block (continuations joined, comments and pipes split)."""
    commands: list[str] = []
    for block in code_blocks(text, "bash"):
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
    return readme_commands(documented_text(repo_root))


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
    defined = model_blocks(documented_text(repo_root))
    used = {w.split("=", 1)[1] for w in argv if w.startswith("model=")}
    rc = main(argv + model_overrides({m: e for m, e in defined.items() if m in used}))
    err = capsys.readouterr().err
    assert rc == 0 and len(recorded) == 1, f"{command}: {err}"


def test_the_readme_is_a_front_door(repo_root):
    lines = (repo_root / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, len(lines)
    for heading in ("## Set up", "## Evaluate your own model", "## Where results appear", "## Cite a release"):
        assert heading in lines, heading


def test_the_readme_keeps_the_two_set_up_commands_ci_runs(repo_root):
    commands = readme_commands((repo_root / "README.md").read_text(encoding="utf-8"))
    ci = (repo_root / ".ci" / "run").read_text(encoding="utf-8")
    tests = next(c for c in commands if "pytest" in c)
    assert tests.split("&& ")[-1].removeprefix(".venv/bin/python -m ") in ci  # the README's test command is CI's
    assert "probmed fetch-data" in commands and "dvc repro" in commands


def test_every_page_is_found_and_every_model_block_is_a_model(repo_root):
    files = documented_files(repo_root)
    assert files[0].name == "README.md" and len(files) >= 20
    models = model_blocks(documented_text(repo_root))
    assert {"mine", "served"} <= set(models) and models["mine"]["backend"] == "hf"
    assert models["served"]["backend"] == "openai" and models["served"]["base_url"].startswith("http://127.0.0.1:")


def test_the_readmes_release_line_names_the_folder_the_release_stage_writes(repo_root):
    """`load_dataset(...)` in the README must point at build/release/<set>/<release.version> (tests/test_readme_runs.py
    loads it for real after the main job)."""
    from probmed.cli.options import load_checked_params
    from probmed.core.config import to_plain
    from probmed.core.params_schema import parse_params

    text = (repo_root / "README.md").read_text(encoding="utf-8")
    (path,) = re.findall(r'load_dataset\("([^"]+)"', "\n".join(code_blocks(text, "python")))
    assert set(re.findall(r'load_dataset\("(build/[^"]+)"', documented_text(repo_root))) == {path}  # the pages say it alike
    version = parse_params(to_plain(load_checked_params(str(repo_root / "params.yaml"), []))).release.version
    stage = yaml.safe_load((repo_root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]["release"]
    (out,) = [next(iter(o)) if isinstance(o, dict) else o for o in stage["outs"]]
    assert path == f"{out}/{version}", (path, out, version)
    assert f"{Path(out).name} {version}+<hash>" in text  # the full version, as the card and CITATION.cff state it
