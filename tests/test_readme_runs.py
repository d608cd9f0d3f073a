"""The README's commands run as written after the main job, and by-hand runs reuse the pipeline's answers.

One scratch project, a copy of the session's tiny main job (tests/test_pipeline.py: this project's files,
`probmed fetch-data && dvc repro` from ../shared/data, the README's main job); then every command of every code
block of the README runs in it through bash, in README order, and must exit 0. The only commands not run
are in NOT_RUN, each with its reason (a GPU, a paid API key, the network, or a program that is this test's
own environment). Files a reader brings (a caption table, a filled review sheet, the original release's
test.json, a response file) are made from the pipeline's outputs first (READER_FILES).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from test_pipeline import BIN, _env, dvc_status, sh, tiny_main_job
from test_readme import readme_commands

pytestmark = [pytest.mark.slow, pytest.mark.timeout(5400)]  # the tiny main job alone took over 40 min at a load of 20

# command prefix -> why this test does not run it
NOT_RUN: dict[str, str] = {
    "bash .ci/install-test-tools": "installs qemu-user, a system package (the CI script runs it)",
    "bash .ci/install": "installs the environment this test runs in (the CI script runs it)",
    ". .venv/bin/activate": "shell: the test puts the environment's bin first on PATH",
    ".venv/bin/": "the linters and the test suite itself (the CI script runs them)",
    "probmed fetch-data": "the main job: the fixture runs it",
    "dvc repro": "the main job: the fixture runs it",
    "probmed predict model=tiny setting=described settings.describer=gpt-4o": "a paid API key",
    "export OPENAI_API_KEY": "a paid API key",
    "probmed predict model=gpt-4o": "a paid API key",
    "probmed pin ": "the network (asks the Hugging Face hub)",
    "probmed predict model=lingshu-7b": "a GPU and the hub's weights",
    "vllm ": "a GPU",
    "probmed predict model=tiny-served": "a model server (vLLM on a GPU)",
    "probmed predict model=llava-1.5": "a GPU and the hub's weights",
    "wait": "shell",
    "probmed merge ": "merges the GPU shard runs above",
    "mlflow ui": "a server that runs until stopped (tests/test_pipeline.py starts mlflow server)",
    "docker ": "docker",
}


def _readme_commands(root: Path) -> list[str]:
    return readme_commands((root / "README.md").read_text(encoding="utf-8"))


def _not_run(command: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if command.startswith(prefix)), None)


def _commands_to_run() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    seen: list[str] = []
    for command in _readme_commands(root):
        if _not_run(command) is None and command not in seen:
            seen.append(command)
    return seen


def _reader_files(repo: Path) -> None:
    """The files a README reader brings, made from the pipeline's outputs."""
    (repo / "CAPTIONS.tsv").write_text("c1\tAxial CT of the chest shows a nodule in the right upper lobe.\n"
                                       "c2\tFrontal chest radiograph: no acute findings.\n", encoding="utf-8")
    shutil.copy(repo / "build/questions/probmed.json", repo / "test.json")
    shutil.copy(repo / "build/predictions/probmed/tiny-vanilla.parquet", repo / "P.parquet")
    sh(f"{BIN}/probmed", "export-responses", "build/questions/probmed.parquet",
       "build/predictions/probmed/tiny-vanilla.parquet", "--out", "responses.json", cwd=repo)
    sh(f"{BIN}/probmed", "review", "export", "--out", "build/adhoc/review", cwd=repo)
    sheet = pd.read_csv(repo / "build/adhoc/review/review.csv", dtype=str, keep_default_na=False)
    sheet["valid"] = "yes"
    sheet.to_csv(repo / "SHEET.csv", index=False)


@pytest.fixture(scope="module")
def readme_repo(tmp_path_factory, repo_root):
    """The README's main job in a scratch project, committed as a user would after it.

    A copy of the session's one tiny main job (tests/test_pipeline.py): the commands below change the
    project, and running the main job a second time would double the suite's longest part.
    """
    done, _, _ = tiny_main_job(tmp_path_factory, repo_root)
    repo = tmp_path_factory.mktemp("readme") / "repo"
    shutil.copytree(done, repo, symlinks=True)
    assert dvc_status(repo) == {}, "the copied main job is not up to date"
    return repo


def test_a_by_hand_predict_reuses_the_pipeline_answers_and_leaves_dvc_clean(readme_repo):
    repo = readme_repo
    assert dvc_status(repo) == {}
    for setting in ("cot", "vanilla"):
        proc = sh(f"{BIN}/probmed", "predict", "--no-progress", "model=tiny", f"setting={setting}", cwd=repo)
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        assert summary["asked"] == 0 and summary["cached"] == summary["questions"] > 0, summary
        assert summary["out"].startswith("build/adhoc/"), summary
    assert dvc_status(repo) == {}  # the by-hand run wrote only outside DVC's outputs


def test_scoring_predictions_of_another_question_set_exits_2_naming_both_files(readme_repo):
    proc = sh(f"{BIN}/probmed", "score", "build/questions/vqarad-adv.parquet",
              "build/predictions/probmed/random-vanilla.parquet", "--out-dir", "build/adhoc/wrong", cwd=readme_repo,
              check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "build/questions/vqarad-adv.parquet" in proc.stderr and "random-vanilla.parquet" in proc.stderr


def test_every_readme_command_is_run_or_excluded_with_a_reason(repo_root):
    commands = _readme_commands(repo_root)
    assert "probmed score build/questions/probmed.json random.parquet --out-dir scores/random " \
           "score.bootstrap_resamples=1000" in _commands_to_run()
    skipped = sorted({c for c in commands if _not_run(c)})
    assert len(skipped) <= 25 and len(_commands_to_run()) >= 30, skipped  # NOT_RUN stays a short list


@pytest.mark.parametrize("command", _commands_to_run())
def test_the_readme_command_runs_as_written(command, readme_repo):
    repo = readme_repo
    if not (repo / "SHEET.csv").exists():
        _reader_files(repo)
    proc = subprocess.run(["bash", "-c", command], cwd=repo, env=_env(), capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"{command} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
