"""The commands of the README and the documentation run as written after the main job, and leave it as it was.

One scratch project, a copy of the session's tiny main job (tests/test_pipeline.py: this project's files,
`probmed fetch-data && dvc repro` from ../shared/data, the README's main job); then every command of every shell
block of README.md and of the pages under docs/ (tests/test_readme.py: `documented_files`) runs in it through
bash, in reading order, and must exit 0, and so does every Python block. The only commands not run are in
NOT_RUN, each with its reason (a GPU, a paid API key, the network, or a program that is this test's own
environment). Files a reader brings (a caption table, a filled review sheet, the original release's test.json,
a prediction table) are made from the pipeline's outputs first (READER_FILES), and the `models.yaml` entries the
pages show are added as a reader would (the local folder is the main job's tiny model, the endpoint the
project's mock OpenAI-compatible server on 127.0.0.1, also behind the gateway URL with a user and password that
the pages' `base_url_env` example reads from GATEWAY_URL). Afterwards those entries are taken out again and every
command run by hand must have left `dvc status` clean, no tracked file changed and nothing new at the
repository root: by-hand commands write under build/adhoc/ or where they are told.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from probmed.inference.models.mock_server import MockChatServer
from test_pipeline import BIN, _env, dvc_status, sh, tiny_main_job
from test_readme import code_blocks, documented_files, documented_text, readme_commands

pytestmark = [pytest.mark.slow, pytest.mark.timeout(5400)]  # the tiny main job alone took over 40 min at a load of 20

# command prefix -> why this test does not run it
NOT_RUN: dict[str, str] = {
    "bash .ci/install-test-tools": "installs qemu-user, a system package (the CI script runs it)",
    "bash .ci/install": "installs the environment this test runs in (the CI script runs it)",
    ". .venv/bin/activate": "shell: the test puts the environment's bin first on PATH",
    ".venv/bin/python tests/reporting/browser.py": "rewrites the committed screenshots, taken of a report of the "
                                                   "default parameters (tests/reporting/test_report_browser.py "
                                                   "drives the same browser code)",
    ".venv/bin/": "the linters and the test suite itself (the CI script runs them)",
    "probmed fetch-data": "the main job: the fixture runs it",
    "dvc repro": "the main job: the fixture runs it",
    "probmed predict model=tiny setting=described settings.describer=gpt-4o": "a paid API key",
    "export OPENAI_API_KEY": "a paid API key",
    "ray start": "a cluster of machines (tests/inference/models/test_ray_engine.py starts a head and a worker node)",
    "probmed run-plan engine.ray.address=auto": "the cluster `ray start` makes (tests/pipeline/test_run_plan.py runs "
                                                "run-plan and --commit on a two-node cluster)",
    "probmed run-plan 'probmed-*' vqarad-adv-tiny-vanilla engine.ray.address=auto": "the same",
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
READER_FILES = ("CAPTIONS.tsv", "test.json", "P.parquet", "SHEET.csv")  # at the root: where a reader keeps them
LOCAL_MODEL = ("path/to/checkpoint", "build/finetune/pretrain/model")  # the pages' placeholder -> the tiny model
ENDPOINT = "http://127.0.0.1:8000/v1"  # the pages' local server -> the mock server's address
SERVER_KEY = "MY_SERVER_KEY"
GATEWAY = "GATEWAY_URL"  # the pages' gateway behind Basic auth (base_url_env) -> the mock server, credentials in its URL
GATEWAY_USER = "reader:a-local-password"


def _documented_commands(root: Path) -> list[str]:
    return readme_commands(documented_text(root))


def _not_run(command: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if command.startswith(prefix)), None)


def _commands_to_run() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    seen: list[str] = []
    for command in _documented_commands(root):
        if _not_run(command) is None and command not in seen:
            seen.append(command)
    return seen


def _reader_files(repo: Path) -> None:
    """The files a reader brings, made from the pipeline's outputs."""
    (repo / "CAPTIONS.tsv").write_text("c1\tAxial CT of the chest shows a nodule in the right upper lobe.\n"
                                       "c2\tFrontal chest radiograph: no acute findings.\n"
                                       "c3\tTransabdominal ultrasound of the right kidney shows a cyst.\n", encoding="utf-8")
    shutil.copy(repo / "build/questions/probmed.json", repo / "test.json")
    shutil.copy(repo / "build/predictions/probmed/tiny-vanilla.parquet", repo / "P.parquet")
    sh(f"{BIN}/probmed", "export-responses", "build/questions/probmed.parquet",
       "build/predictions/probmed/tiny-vanilla.parquet", "--out", "build/adhoc/responses.json", cwd=repo)
    sh(f"{BIN}/probmed", "review", "export", "--out", "build/adhoc/review", cwd=repo)
    sheet = pd.read_csv(repo / "build/adhoc/review/review.csv", dtype=str, keep_default_na=False)
    sheet["valid"] = "yes"
    sheet.to_csv(repo / "SHEET.csv", index=False)


def _add_model_blocks(repo: Path, root: Path, endpoint: str) -> None:
    """The pages' `models.yaml` entries, added under `models:` as a reader would (placeholders made real)."""
    registry = (repo / "models.yaml").read_text(encoding="utf-8")
    present = set(yaml.safe_load(registry)["models"])  # a page showing an entry the registry has edits it, adds none
    blocks = [b for b in code_blocks(documented_text(root), "yaml")
              if "backend:" in b and not set(yaml.safe_load(b)) & present]
    text = "".join(dict.fromkeys(blocks)).replace(*LOCAL_MODEL).replace(ENDPOINT, endpoint)
    assert "\nmodels:\n" in registry
    (repo / "models.yaml").write_text(registry.replace("\nmodels:\n", "\nmodels:\n" + text, 1), encoding="utf-8")


@pytest.fixture(scope="module")
def server():
    with MockChatServer() as srv:
        yield srv


class Scratch:
    """The scratch project, what it held before the documented commands ran, and their results."""

    def __init__(self, repo: Path, server: MockChatServer) -> None:
        self.repo, self.server = repo, server
        self.root_before = sorted(p.name for p in repo.iterdir())
        self.tracked_before = sh("git", "status", "--porcelain", "--untracked-files=no", cwd=repo).stdout
        self.results: dict[str, subprocess.CompletedProcess] = {}

    def run(self, command: str) -> subprocess.CompletedProcess:
        if command not in self.results:
            gateway = self.server.base_url.replace("://", f"://{GATEWAY_USER}@", 1)
            env = {**_env(), SERVER_KEY: "a-local-key", GATEWAY: gateway}
            self.results[command] = subprocess.run(["bash", "-c", command], cwd=self.repo, env=env, capture_output=True,
                                                   text=True, timeout=1800)
        return self.results[command]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, repo_root, server) -> Scratch:
    """The README's main job in a scratch project, committed as a user would after it, with the reader's files.

    A copy of the session's one tiny main job (tests/test_pipeline.py): the commands below change the
    project, and running the main job a second time would double the suite's longest part.
    """
    done, _, _ = tiny_main_job(tmp_path_factory, repo_root)
    repo = tmp_path_factory.mktemp("readme") / "repo"
    shutil.copytree(done, repo, symlinks=True)
    assert dvc_status(repo) == {}, "the copied main job is not up to date"
    _reader_files(repo)
    state = Scratch(repo, server)  # the root as the reader has it: the project, the main job's outputs, their files
    _add_model_blocks(repo, repo_root, server.base_url)
    return state


def test_a_by_hand_predict_reuses_the_pipeline_answers_and_leaves_dvc_clean(scratch):
    repo = scratch.repo
    for setting in ("cot", "vanilla"):
        proc = sh(f"{BIN}/probmed", "predict", "--no-progress", "model=tiny", f"setting={setting}", cwd=repo)
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        assert summary["asked"] == 0 and summary["cached"] == summary["questions"] > 0, summary
        assert summary["out"].startswith("build/adhoc/"), summary


def test_scoring_predictions_of_another_question_set_exits_2_naming_both_files(scratch):
    proc = sh(f"{BIN}/probmed", "score", "build/questions/vqarad-adv.parquet",
              "build/predictions/probmed/random-vanilla.parquet", "--out-dir", "build/adhoc/wrong", cwd=scratch.repo,
              check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "build/questions/vqarad-adv.parquet" in proc.stderr and "random-vanilla.parquet" in proc.stderr


def test_every_documented_command_is_run_or_excluded_with_a_reason(repo_root):
    commands = _documented_commands(repo_root)
    assert "probmed score build/questions/probmed.json build/adhoc/predictions/random.parquet --out-dir " \
           "build/adhoc/scores/random score.bootstrap_resamples=1000" in _commands_to_run()
    assert "probmed predict model=served --score-dir build/adhoc/scores/served" in _commands_to_run()
    assert "probmed predict model=my-gateway" in _commands_to_run()  # base_url_env, credentials in the URL
    skipped = sorted({c for c in commands if _not_run(c)})
    # NOT_RUN stays a short list: 33 with the cluster recipes of docs/engines.md (ray start and vllm serve on
    # each kind of node, run-plan on the cluster they make)
    assert len(skipped) <= 33 and len(_commands_to_run()) >= 40, skipped
    assert len(documented_files(repo_root)) > 20


@pytest.mark.parametrize("command", _commands_to_run())
def test_the_documented_command_runs_as_written(command, scratch):
    proc = scratch.run(command)
    assert proc.returncode == 0, f"{command} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"


def test_the_documented_python_runs_and_loads_the_release(scratch, repo_root):
    blocks = code_blocks(documented_text(repo_root), "python")
    assert any("load_dataset(" in b for b in blocks)
    for block in blocks:
        proc = subprocess.run([sys.executable, "-c", block + "\nprint(len(ds))"], cwd=scratch.repo, env=_env(),
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0 and int(proc.stdout.split()[-1]) > 0, proc.stderr[-3000:]


def test_by_hand_commands_leave_dvc_clean_the_tracked_files_and_the_root_as_they_were(scratch):
    """Every documented command run by hand (those not yet run here run now), then: the reader's model entries
    taken out again, `dvc status` is clean, no tracked file changed, and the root holds nothing new."""
    for command in _commands_to_run():
        scratch.run(command)
    assert len(scratch.server.requests) > 0  # the endpoint example really asked the (mock) server
    basic = "Basic " + base64.b64encode(GATEWAY_USER.encode()).decode()
    assert any(r["auth"] == basic for r in scratch.server.requests)  # and the gateway's, with its URL's user
    repo = scratch.repo
    sh("git", "checkout", "--", "models.yaml", cwd=repo)  # the reader's own registry entries
    assert dvc_status(repo) == {}
    assert sh("git", "status", "--porcelain", "--untracked-files=no", cwd=repo).stdout == scratch.tracked_before
    assert sorted(p.name for p in repo.iterdir()) == scratch.root_before
    assert (repo / "build" / "adhoc" / "scores" / "mine" / "metrics.json").is_file()


def test_the_readmes_figure_is_one_the_report_draws(scratch, repo_root):
    """The README shows a committed copy of a report figure; the caption names the file the report stage writes."""
    import re

    from PIL import Image

    readme = (repo_root / "README.md").read_text(encoding="utf-8")
    (drawn,) = re.findall(r"`(build/report/plots/[^`]+\.png)`", readme)
    (shown,) = re.findall(r"!\[[^\]]*\]\((docs/assets/[^)]+\.png)\)", readme)
    assert (scratch.repo / drawn).is_file(), drawn
    with Image.open(scratch.repo / drawn) as made, Image.open(repo_root / shown) as committed:
        assert made.width == committed.width  # drawn at the page's width by the same figure code
