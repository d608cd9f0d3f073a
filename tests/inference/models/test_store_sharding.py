"""One model store, two ways of splitting it: the issue's probe (an unsharded predict and a `--shard 0/2` at
once on one store) had 106 of 200 questions paid twice; now the second run is refused before asking anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from predict_helpers import make_questions

from probmed.core.config import load_params
from probmed.core.records import write_questions
from probmed.inference.models.mock_server import MockChatServer


def api_params(repo_root: Path, tmp_path: Path, base_url: str) -> Path:
    cfg = load_params(repo_root / "params.yaml")
    cfg.models.api = {"backend": "openai", "model_id": "gpt-4o-mock", "base_url": base_url,
                      "api_key_env": "PROBMED_TEST_KEY", "concurrency": 2, "max_retries": 2, "timeout_s": 5,
                      "backoff_base_s": 0.01, "max_tokens": 8}
    path = tmp_path / "params.yaml"
    OmegaConf.save(cfg, path)
    return path


def predict(params: Path, qfile: Path, shared_data: Path, store: Path, out: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "probmed", "predict", "--params", str(params), "--questions", str(qfile),
           "--image-root", str(shared_data), f"predict.store_dir={store}", "model=api", "--out", str(out),
           "--no-progress", *extra]
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-shard"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def question_file(tmp_path: Path, shared_data: Path, n_images: int) -> Path:
    """Five questions per VQA-RAD image, each text unique (so the server's log tells the questions apart)."""
    q = make_questions(shared_data, n_images)
    q["question"] = [f"{text} (question {i})" for i, text in enumerate(q["question"])]
    path = tmp_path / "q.parquet"
    write_questions(q, path)
    return path


def paid_twice(srv: MockChatServer) -> int:
    return sum(1 for n in Counter(r["text"] for r in srv.requests).values() if n > 1)


@pytest.mark.slow
def test_an_unsharded_run_and_a_shard_at_once_pay_for_no_question_twice(tmp_path, repo_root, shared_data):
    qfile = question_file(tmp_path, shared_data, 40)  # 200 questions on 40 images
    store = tmp_path / "answers"
    with MockChatServer(latency_s=0.02) as srv:
        params = api_params(repo_root, tmp_path, srv.base_url)
        whole = predict(params, qfile, shared_data, store, tmp_path / "whole.parquet")
        while len(srv.requests) < 2:
            time.sleep(0.02)
        shard = predict(params, qfile, shared_data, store, tmp_path / "shard0.parquet", "--shard", "0/2")
        _, err = shard.communicate(timeout=120)
        assert shard.returncode == 2, err
        assert f"in use by an unsharded run (pid {whole.pid})" in err and len(err.strip().splitlines()) == 1
        assert not (tmp_path / "shard0.parquet").exists() and not (store / "api" / "shard-000-of-002.jsonl").exists()
        assert whole.wait(timeout=180) == 0, whole.stderr.read()
        assert paid_twice(srv) == 0 and len(srv.requests) == 200
        # once the unsharded run is done, the shard may run, and asks nothing (its questions are stored)
        shard = predict(params, qfile, shared_data, store, tmp_path / "shard0.parquet", "--shard", "0/2")
        out, err = shard.communicate(timeout=120)
        assert shard.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["asked"] == 0
        assert len(srv.requests) == 200


@pytest.mark.slow
def test_the_shards_of_one_run_still_write_one_store_at_once(tmp_path, repo_root, shared_data):
    qfile = question_file(tmp_path, shared_data, 8)  # 40 questions
    store = tmp_path / "answers"
    with MockChatServer(latency_s=0.2) as srv:  # about 2 s of requests each: the two runs overlap
        params = api_params(repo_root, tmp_path, srv.base_url)
        runs = [predict(params, qfile, shared_data, store, tmp_path / f"s{i}.parquet", "--shard", f"{i}/2")
                for i in range(2)]
        for run in runs:
            _, err = run.communicate(timeout=120)
            assert run.returncode == 0, err
        assert paid_twice(srv) == 0 and len(srv.requests) == 40
    assert sorted(p.name for p in (store / "api").iterdir()) == ["shard-000-of-002.jsonl", "shard-001-of-002.jsonl"]
