"""inspect_ai and lmms-eval, installed from the package index in venvs of their own, run a 20-image release
against the project's mock OpenAI-compatible server on 127.0.0.1 and reproduce `probmed score` on the same answers."""

from __future__ import annotations

import json
import math
import os
import subprocess

import pytest

from probmed.cli import main
from probmed.core.categories import CATEGORIES
from probmed.inference.models.mock_server import MockChatServer
from venvs import INSPECT_AI, LMMS_EVAL, venv

pytestmark = [pytest.mark.slow, pytest.mark.harness]


@pytest.fixture(scope="module")
def run(mock_set, repo_root, tmp_path_factory):
    """The release, the server, and `probmed score` of `probmed predict` through the server."""
    root = tmp_path_factory.mktemp("harness")
    params = ["--params", str(repo_root / "params.yaml")]
    assert main(["release", str(mock_set["questions"]), "--out-dir", str(root / "rel"), "--image-root",
                 str(mock_set["image_root"]), "--audit", str(mock_set["passing_audit"]), *params]) == 0
    with MockChatServer() as server:
        model = ["model=mock", "models.mock.backend=openai", "models.mock.model_id=mock", "models.mock.enabled=true",
                 f"models.mock.base_url={server.base_url}", "models.mock.api_key_env=", f"predict.store_dir={root / 'answers'}"]
        assert main(["predict", "--questions", str(mock_set["questions"]), "--image-root", str(mock_set["image_root"]),
                     "--out", str(root / "pred.parquet"), "--no-progress", *params, *model]) == 0
        assert main(["score", str(mock_set["questions"]), str(root / "pred.parquet"), "--out-dir", str(root / "score"),
                     "score.bootstrap_resamples=0", *params]) == 0
        metrics = json.loads((root / "score" / "metrics.json").read_text())
        expected = {"strict_overall": metrics["overall"]["accuracy_adv_pairs_original_weighting"],
                    **{f"strict_{c}": metrics["by_category"].get(c, {}).get("accuracy_adv_pairs") for c in CATEGORIES}}
        (folder,) = (root / "rel" / "mockset").iterdir()  # the version folder the release wrote, whatever params say
        yield {"folder": folder, "server": server, "expected": expected, "root": root}


def same(got: dict[str, float], expected: dict[str, float | None]) -> None:
    for name, value in expected.items():
        if value is None:
            assert math.isnan(got[name]), name
        else:
            assert got[name] == value, (name, got[name], value)


def test_the_scores_are_not_trivial(run):
    assert any(v for v in run["expected"].values())  # some units right, some wrong: the pairing is exercised
    assert run["expected"]["strict_overall"] not in (0.0, 100.0)


def test_inspect_ai_reproduces_probmed_score(run):
    bin_dir = venv(INSPECT_AI)
    logs = run["root"] / "inspect-logs"
    env = {**os.environ, "OPENAI_BASE_URL": run["server"].base_url, "OPENAI_API_KEY": "mock-key", "HF_DATASETS_OFFLINE": "1",
           "HF_HUB_OFFLINE": "1", "HF_HOME": str(run["root"] / "hf"), "INSPECT_LOG_DIR": str(logs)}
    proc = subprocess.run([str(bin_dir / "inspect"), "eval", "harness/inspect_task.py", "--model", "openai/mock",
                           "-M", "responses_api=false", "--display", "none", "--log-format", "json"],
                          cwd=run["folder"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (log,) = logs.glob("*.json")
    result = json.loads(log.read_text())
    assert result["status"] == "success" and result["results"]["completed_samples"] == len(result["samples"])
    (scores,) = result["results"]["scores"]
    same({k: v["value"] for k, v in scores["metrics"].items()}, run["expected"])


def test_lmms_eval_reproduces_probmed_score(run):
    bin_dir = venv(LMMS_EVAL)
    out = run["root"] / "lmms-out"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(run["root"] / "hf-lmms")}
    args = f"model=mock,base_url={run['server'].base_url},api_key=mock-key"
    proc = subprocess.run([str(bin_dir / "python"), "-m", "lmms_eval", "--model", "openai", "--model_args", args,
                           "--tasks", "probmed_mockset", "--include_path", "harness/lmms_eval", "--batch_size", "1",
                           "--output_path", str(out), "--log_samples"],
                          cwd=run["folder"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (results,) = out.rglob("*_results.json")
    got = json.loads(results.read_text())["results"]["probmed_mockset"]
    same({name: got[f"{name},none"] for name in run["expected"]}, run["expected"])
    (samples,) = out.rglob("*_samples_probmed_mockset.jsonl")
    assert len(samples.read_text().splitlines()) == len(json.loads((run["folder"] / "test.json").read_text()))
