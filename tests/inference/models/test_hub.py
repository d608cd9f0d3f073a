"""`probmed pin` against a stand-in hub on 127.0.0.1: the sha lands in params.yaml (that line only);
offline, a missing repository or revision, and non-hub entries exit 2 naming the model."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hub_stand_in import StandInHub

from probmed.core.config import read_yaml_12
from probmed.core.errors import ConfigError
from probmed.inference.models.hub import HubOfflineError, pin_problem, resolve_revision
from probmed.inference.models.registry import build_backend

SHA_MAIN = "0123456789abcdef0123456789abcdef01234567"
SHA_TAG = "89abcdef0123456789abcdef0123456789abcdef"
REPOS = {"lingshu-medical-mllm/Lingshu-7B": {"main": SHA_MAIN, "v1.0": SHA_TAG},
         "llava-hf/llava-1.5-7b-hf": {"main": SHA_TAG}}


def probmed(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "probmed"
    full_env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    return subprocess.run([str(exe), *args], cwd=cwd, env={**full_env, **env}, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture()
def params_copy(tmp_path, repo_root) -> Path:
    """A copy of the parameters; the path of its registry, models.yaml: the file `probmed pin` edits."""
    shutil.copy(repo_root / "params.yaml", tmp_path / "params.yaml")
    path = tmp_path / "models.yaml"
    shutil.copy(repo_root / "models.yaml", path)
    return path


@pytest.mark.slow
def test_pin_writes_the_sha_into_params_and_nothing_else(params_copy, tmp_path):
    before = params_copy.read_text()
    with StandInHub(REPOS) as hub:
        done = probmed(["pin", "lingshu-7b"], tmp_path, HF_ENDPOINT=hub.url)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["sha"] == SHA_MAIN
        # (huggingface_hub may also fetch its agent registry, /api/agent-harnesses, from the same endpoint)
        assert [r for r in hub.requests if r.startswith("/api/models/")] == [
            "/api/models/lingshu-medical-mllm/Lingshu-7B/revision/main"]
        diff = [d for d in difflib.unified_diff(before.splitlines(), params_copy.read_text().splitlines(), n=0)
                if d[:1] in "+-" and not d.startswith(("+++", "---"))]
        assert diff == ["-    revision:             # commit sha: probmed pin lingshu-7b",
                        f"+    revision: {SHA_MAIN} # commit sha: probmed pin lingshu-7b"]
        params = read_yaml_12(params_copy)
        assert params["models"]["lingshu-7b"]["revision"] == SHA_MAIN
        # the entry is now runnable (it was refused before the pin)
        assert pin_problem("lingshu-7b", params["models"]["lingshu-7b"]) is None
        assert build_backend(params["models"], "lingshu-7b").revision == SHA_MAIN
        # a tag resolves to its commit; a name with a dot in it is one key, not two
        assert probmed(["pin", "lingshu-7b", "--revision", "v1.0"], tmp_path, HF_ENDPOINT=hub.url).returncode == 0
        assert read_yaml_12(params_copy)["models"]["lingshu-7b"]["revision"] == SHA_TAG
        assert probmed(["pin", "llava-1.5"], tmp_path, HF_ENDPOINT=hub.url).returncode == 0
        assert read_yaml_12(params_copy)["models"]["llava-1.5"]["revision"] == SHA_TAG
        # unknown revision, unknown repository: exit 2, the file untouched
        pinned = params_copy.read_text()
        bad = probmed(["pin", "lingshu-7b", "--revision", "nope"], tmp_path, HF_ENDPOINT=hub.url)
        assert bad.returncode == 2 and "lingshu-7b" in bad.stderr and "'nope' not found" in bad.stderr
        missing = probmed(["pin", "medgemma-4b"], tmp_path, HF_ENDPOINT=hub.url)
        assert missing.returncode == 2 and "google/medgemma-4b-it" in missing.stderr and "HF_TOKEN" in missing.stderr
        assert params_copy.read_text() == pinned


@pytest.mark.slow
def test_pin_offline_exits_2_naming_the_model(params_copy, tmp_path):
    before = params_copy.read_text()
    with StandInHub(REPOS) as hub:
        done = probmed(["pin", "lingshu-7b"], tmp_path, HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="1")
        assert hub.requests == []  # refused before any request
    assert done.returncode == 2
    assert "lingshu-7b" in done.stderr and "offline" in done.stderr and "Traceback" not in done.stderr
    # no hub at all (nothing listens on the port): also exit 2 naming the model
    unreachable = probmed(["pin", "lingshu-7b"], tmp_path, HF_ENDPOINT=hub.url)
    assert unreachable.returncode == 2 and "lingshu-7b" in unreachable.stderr and "cannot reach" in unreachable.stderr
    assert params_copy.read_text() == before


def test_offline_is_read_when_asked(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubOfflineError, match="lingshu-7b.*offline"):
        resolve_revision("lingshu-7b", "lingshu-medical-mllm/Lingshu-7B")


def test_entries_that_cannot_be_pinned(params_copy, capsys):
    from probmed.cli import main

    for name, why in (("gpt-4o", "only hub checkpoints"), ("tiny", "local directory"), ("nope", "unknown model")):
        assert main(["pin", name, "--params", str(params_copy.parent / "params.yaml")]) == 2
        assert why in capsys.readouterr().err


def test_hub_entries_run_only_when_pinned_and_remote_code_only_at_a_sha():
    entry = {"backend": "hf", "model_id": "Qwen/Qwen2.5-VL-7B-Instruct"}
    assert "probmed pin q" in pin_problem("q", entry)
    with pytest.raises(ConfigError, match="not pinned"):
        build_backend({"q": entry}, "q")
    assert pin_problem("q", {**entry, "revision": "main"}) is None
    assert "commit sha" in pin_problem("q", {**entry, "revision": "main", "trust_remote_code": True})
    assert pin_problem("q", {**entry, "revision": SHA_MAIN, "trust_remote_code": True}) is None
    assert pin_problem("t", {"backend": "hf", "model_id": "build/finetune/pretrain/model"}) is None  # local, unbuilt
