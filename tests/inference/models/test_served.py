"""The OpenAI-compatible backend against `transformers serve` of the tiny model, over real HTTP."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from probmed.core.settings import get_setting
from probmed.inference.models.registry import build_backend
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet

PROMPTS = PromptSet.from_params({})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def served_tiny(tiny_dir, tmp_path):
    port = free_port()
    exe = Path(sys.executable).parent / "transformers"
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([str(exe), "serve", str(tiny_dir), "--device", "cpu", "--host", "127.0.0.1",
                             "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError((tmp_path / "serve.log").read_text()[-2000:])
                time.sleep(0.3)
        yield url + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.mark.slow
def test_transformers_serve_answers_like_the_local_backend(served_tiny, tiny_dir, shared_data, questions, tmp_path):
    q = questions.head(10)
    models = {
        "served": {"backend": "openai", "model_id": str(tiny_dir), "base_url": served_tiny, "api_key_env": None,
                   "concurrency": 4, "max_tokens": 6, "timeout_s": 30, "max_retries": 1},
        "local": {"backend": "hf", "model_id": str(tiny_dir), "max_new_tokens": 6},
    }
    served = build_backend(models, "served")
    got = run_predictions(q, served,
        PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "s"), progress=False)
    served.close()
    preds = got.predictions
    assert (preds["error"] == "").all() and (preds["response"].str.len() > 0).all()
    assert (preds["prompt_tokens"] > 16).all()  # the image tokens reached the model
    local = run_predictions(q, build_backend(models, "local"),
        PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, tmp_path / "s"), progress=False)
    assert list(preds["response"]) == list(local.predictions["response"])  # same weights, same greedy answers
