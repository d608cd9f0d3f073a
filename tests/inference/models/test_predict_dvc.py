"""`probmed predict` under `dvc repro`: SIGKILL of `dvc` alone must not leave a writer behind that pays
for answers a second time, and a key in params.yaml never reaches dvc.lock. A lean DVC project (one
predict stage, 60 questions on 12 real images copied into it) against the mock server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dvc.utils.serialize import modify_yaml
from predict_helpers import make_questions

from probmed.core.records import write_questions
from probmed.inference.models.mock_server import MockChatServer

BIN = str(Path(sys.executable).parent)
N_IMAGES = 12  # 5 questions each


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "DVC_NO_ANALYTICS": "1",
            "HF_HUB_OFFLINE": "1", "PROBMED_TEST_KEY": "sk-dvc", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def sh(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(args)}: {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


def make_project(root: Path, repo_root: Path, shared_data: Path, base_url: str, **model_extra) -> Path:
    """git + dvc project with the images inside it, the real params.yaml plus an `api` model, one stage."""
    root.mkdir()
    q = make_questions(shared_data, N_IMAGES)
    for rel in q["image_path"].unique():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(shared_data / rel, root / rel)
    write_questions(q, root / "q.parquet")
    shutil.copy(repo_root / "params.yaml", root / "params.yaml")
    for name in ("models.yaml", "layout.yaml"):  # the registries, read with params.yaml as one tree
        shutil.copy(repo_root / name, root / name)
    with modify_yaml(root / "models.yaml") as params:  # DVC's YAML 1.2 round trip (PyYAML's 1.1 turns yes/no into booleans)
        params["models"]["api"] = {"backend": "openai", "model_id": "gpt-4o-mock", "base_url": base_url,
                                   "api_key_env": "PROBMED_TEST_KEY", "concurrency": 2, "max_retries": 2, "timeout_s": 5,
                                   "max_tokens": 8, **model_extra}
    stage = {"cmd": "probmed predict --questions q.parquet --image-root . --out preds.parquet --no-progress "
                    "model=api predict.store_dir=answers",
             "deps": ["q.parquet"], "params": [{"models.yaml": ["models.api"]}],
             "outs": [{"answers/api": {"persist": True}}, "preds.parquet"]}
    (root / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"predict": stage}}, sort_keys=False))
    shutil.copy(repo_root / ".dvcignore", root / ".dvcignore")
    sh("git", "init", "-q", cwd=root)
    sh("dvc", "init", "-q", cwd=root)
    return root


def predict_processes(root: Path) -> list[int]:
    """Live `probmed predict` processes running in the project directory `root`."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if "probmed predict" in cmd and cwd == str(root) and state != "Z":
                pids.append(int(proc.name))
    return pids


@pytest.mark.slow
def test_sigkill_of_dvc_mid_predict_then_repro_asks_no_question_twice(tmp_path, repo_root, shared_data):
    """Once, the orphaned predict went on asking while the next `dvc repro` started a second writer:
    444 requests for 244 questions."""
    with MockChatServer(latency_s=0.15) as srv:
        root = make_project(tmp_path / "proj", repo_root, shared_data, srv.base_url)
        store = root / "answers" / "api" / "answers.jsonl"
        dvc = subprocess.Popen(["dvc", "repro"], cwd=root, env=_env(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline and not (store.exists() and len(store.read_text().splitlines()) >= 10):
            time.sleep(0.05)
        assert predict_processes(root), "predict should be running"
        os.kill(dvc.pid, signal.SIGKILL)  # dvc alone: its child is not signalled
        dvc.wait()
        deadline = time.time() + 10
        while time.time() < deadline and predict_processes(root):
            time.sleep(0.1)
        assert predict_processes(root) == [], "the orphaned predict did not stop when dvc died"
        stopped_at = len(srv.requests)
        time.sleep(1.5)
        assert len(srv.requests) == stopped_at, "the orphaned predict kept asking after dvc died"
        assert 10 <= stopped_at < 60
        again = sh("dvc", "repro", cwd=root)
        assert "Running stage 'predict'" in again.stdout + again.stderr
        assert len(srv.requests) == 60  # every question asked exactly once over both runs
    keys = [json.loads(line)["key"] for line in store.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 60
    status = sh("dvc", "status", cwd=root)
    assert "up to date" in status.stdout.lower() or status.stdout.strip() == "", status.stdout


@pytest.mark.slow
def test_a_key_in_params_stops_dvc_repro_and_never_reaches_dvc_lock(tmp_path, repo_root, shared_data):
    key = "sk-live-0123456789abcdefABCDEF"
    with MockChatServer() as srv:
        root = make_project(tmp_path / "proj", repo_root, shared_data, srv.base_url, api_key=key)
        proc = sh("dvc", "repro", cwd=root, check=False)
        assert proc.returncode != 0 and srv.requests == []
    out = proc.stdout + proc.stderr
    assert "models.api.api_key" in out and "api_key_env" in out and key not in out
    lock = root / "dvc.lock"
    assert not lock.exists() or key not in lock.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("outlive", [False, True])
def test_predict_started_from_a_shell_that_exits_stops_unless_told_to_outlive_it(tmp_path, repo_root, shared_data,
                                                                                 outlive):
    """`nohup probmed predict ... &` then logging out: the shell is gone at once. By default predict stops
    (answers stored, resumable), as under a killed `dvc repro`; `--outlive-parent` runs on to the end."""
    with MockChatServer(latency_s=0.15) as srv:
        root = make_project(tmp_path / "proj", repo_root, shared_data, srv.base_url)
        store = root / "answers" / "api" / "answers.jsonl"
        flag = " --outlive-parent" if outlive else ""
        f = "answers/api/answers.jsonl"
        started = f"until [ -f {f} ] && [ $(wc -l < {f}) -ge 5 ]; do sleep 0.05; done"
        sh("sh", "-c", "probmed predict --questions q.parquet --image-root . --out preds.parquet --no-progress "
                       f"model=api predict.store_dir=answers{flag} >/dev/null 2>&1 & {started}", cwd=root)
        # the shell has exited once predict had stored 5 answers
        deadline = time.time() + 120
        while time.time() < deadline and predict_processes(root):
            time.sleep(0.1)
        assert predict_processes(root) == []
    answered = len(store.read_text().splitlines()) if store.exists() else 0
    if outlive:
        assert answered == 60 and (root / "preds.parquet").exists()
    else:
        assert answered < 60 and not (root / "preds.parquet").exists()
        assert len(srv.requests) == answered  # what was asked before the stop is stored, nothing more was asked
