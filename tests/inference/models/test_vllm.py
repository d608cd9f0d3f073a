"""`probmed predict` against vLLM's CPU build (`vllm serve` on 127.0.0.1 of a tiny LLaVA the suite builds).

The vanilla and cot settings through vLLM give the answers the same weights give through the Hugging Face
backend, P(yes) read from the server's logprobs equals the backend's logit-mode P(yes), and a run killed
mid-way resumes asking vLLM only what its store lacks. The venv, the model and the server: vllm_server.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from predict_helpers import kill_when_stored, make_questions
from vllm_server import VllmServer, make_yes_no_model, vllm_python

from probmed.core.config import load_params
from probmed.core.records import read_predictions, write_questions
from probmed.core.settings import get_setting
from probmed.inference.models.registry import build_backend
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
PROMPTS = PromptSet.from_params({})


@pytest.fixture(scope="module")
def vllm(tmp_path_factory, shared_data):
    t0 = time.perf_counter()
    python = vllm_python()
    installed = time.perf_counter() - t0
    folder = tmp_path_factory.mktemp("vllm")
    questions = make_questions(shared_data, 12)  # 60 questions, 12 images
    model = make_yes_no_model(folder / "tiny-llava", questions, shared_data)
    server = VllmServer(python, model, folder / "serve.log").start()
    print(f"\nvllm: venv ready in {installed:.0f} s, server up in {server.startup_s:.0f} s")
    try:
        yield server, model, questions
    finally:
        server.stop()


def models(server: VllmServer, model: Path) -> dict:
    served = {"backend": "openai", "model_id": str(model), "base_url": server.base_url, "api_key_env": None,
              "concurrency": 4, "max_tokens": 1, "logprobs": True, "timeout_s": 120, "max_retries": 2}
    return {
        # vLLM's chat endpoint tokenizes the rendered chat template without special tokens; LLaVA-1.5's template
        # writes no BOS (its tokenizer adds one, as the Hugging Face backend does): ask vLLM to add it
        "vllm": {**served, "extra_body": {"add_special_tokens": True}},
        "vllm-no-bos": served,
        "hf": {"backend": "hf", "model_id": str(model), "max_new_tokens": 1},
        "hf-logits": {"backend": "hf", "model_id": str(model), "mode": "logits"},
    }


def predict(entries: dict, name: str, setting: str, questions, image_root: Path, store: Path):
    backend = build_backend(entries, name)
    try:
        job = PredictJob.in_folders(get_setting(setting), PROMPTS, image_root, store)
        return run_predictions(questions, backend, job, progress=False).predictions.set_index("qid")
    finally:
        backend.close()


def test_vllm_answers_as_the_hf_backend_with_p_yes_from_logprobs(vllm, shared_data, tmp_path):
    server, model, questions = vllm
    entries = models(server, model)
    before = server.finished_requests()
    t0 = time.perf_counter()
    served = {s: predict(entries, "vllm", s, questions, shared_data, tmp_path / "vllm") for s in ("vanilla", "cot")}
    print(f"vllm: {2 * len(questions)} questions + 12 descriptions in {time.perf_counter() - t0:.1f} s")
    assert server.finished_requests() - before == 2 * len(questions) + 12  # one per question, one per description
    assert (served["vanilla"]["prompt_tokens"] > 16).all()  # the image tokens reached the model
    local = {s: predict(entries, "hf", s, questions, shared_data, tmp_path / "hf") for s in ("vanilla", "cot")}
    logits = predict(entries, "hf-logits", "vanilla", questions, shared_data, tmp_path / "hf")
    for setting in ("vanilla", "cot"):
        got, want = served[setting], local[setting]
        assert (got["error"] == "").all(), got["error"].unique()
        differ = got.index[got["response"] != want["response"]]
        assert differ.empty, [(q, got.at[q, "response"], want.at[q, "response"]) for q in differ]
    no_bos = predict(entries, "vllm-no-bos", "vanilla", questions, shared_data, tmp_path / "no-bos")
    assert (no_bos["prompt_tokens"] == local["vanilla"]["prompt_tokens"] - 1).all()  # where the two differ: BOS
    assert (no_bos["p_yes"] - logits["p_yes"]).abs().max() > 1e-2  # ... which moves every answer
    assert set(served["vanilla"]["label"]) == {"yes", "no"}  # the model answers both ways
    p_served, p_local = served["vanilla"]["p_yes"], logits["p_yes"]
    assert p_served.notna().all()  # the server returned logprobs for every answer, "yes" and "no" among them
    assert (p_served - p_local).abs().max() < 1e-4, (p_served - p_local).abs().describe()
    assert ((p_served > 0.5) == (served["vanilla"]["label"] == "yes")).all()  # greedy picks the likelier word


def test_vllm_run_killed_midway_resumes_without_asking_twice(vllm, shared_data, tmp_path, repo_root):
    server, model, questions = vllm
    cfg = load_params(repo_root / "params.yaml")
    cfg.models.vllm = models(server, model)["vllm"]
    params = tmp_path / "params.yaml"
    OmegaConf.save(cfg, params)
    qfile = tmp_path / "q.parquet"
    write_questions(questions, qfile)

    def run(out: Path) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "probmed", "predict", "--params", str(params), "--questions",
                                 str(qfile), "--image-root", str(shared_data), f"predict.store_dir={tmp_path / 's'}",
                                 "model=vllm", "--out", str(out), "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    store_file = tmp_path / "s" / "vllm" / "answers.jsonl"
    kill_when_stored(run(tmp_path / "p.parquet"), store_file, lines=20, wait_s=300)
    on_disk = {json.loads(line)["key"] for line in store_file.read_text().splitlines() if line.endswith("}")}
    assert 20 <= len(on_disk) < len(questions)
    time.sleep(2)  # requests the killed client left in flight finish (or abort) before the count
    before = server.finished_requests()
    resumed = run(tmp_path / "p.parquet")
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    summary = json.loads(resumed.stdout.read().strip().splitlines()[-1])
    assert summary["cached"] == len(on_disk) and summary["asked"] == len(questions) - len(on_disk)
    assert server.finished_requests() - before == len(questions) - len(on_disk)  # nothing stored was asked again
    got = read_predictions(tmp_path / "p.parquet").set_index("qid")
    want = predict(models(server, model), "hf", "vanilla", questions, shared_data, tmp_path / "hf")
    assert (got["response"] == want["response"]).all() and got["p_yes"].notna().all()
