"""Training gives the same weights on another CPU: a few real training steps, here and on an emulated AMD EPYC.

`qemu-x86_64 -cpu EPYC` runs this machine's Python and torch on a CPU that reports AMD's vendor and
AVX2 without AVX-512, so torch, MKL and numpy take the paths they take on an AMD EPYC. The control
(torch's for-loop AdamW, whose `sqrt` comes from MKL's vector math library) gave other weights there
on today's wheels: it shows the emulation reaches the CPU-dependent paths the check is about.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

STEPS = """
import hashlib, json, sys
from probmed.infra.cpu_kernels import PORTABLE, configure_torch, use_portable_kernels
assert use_portable_kernels(PORTABLE) == PORTABLE
import torch
configure_torch()
from PIL import Image
from transformers import AutoProcessor
from probmed.finetune.module import VisionLanguageFineTuner, load_base_model

model_dir, image = sys.argv[1], sys.argv[2]
processor = AutoProcessor.from_pretrained(model_dir)
batch = processor(images=[Image.open(image).convert("RGB")] * 2, return_tensors="pt", padding=True,
                  text=["<image> is this a chest x-ray image", "<image> which organ is shown"])
batch["labels"] = batch["input_ids"]


def train(make_optimizer):
    torch.manual_seed(0)
    module = VisionLanguageFineTuner(load_base_model(model_dir), "full", lr=1e-3, weight_decay=0.01)
    optimizer = make_optimizer(module)
    for _ in range(3):
        module.model(**batch).loss.backward()
        torch.nn.utils.clip_grad_norm_(module.model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
    weights = b"".join(p.detach().numpy().tobytes() for p in module.model.parameters())
    return hashlib.sha256(weights).hexdigest()


print(json.dumps({
    "cpu": torch.backends.cpu.get_cpu_capability(),
    "trained": train(lambda m: m.configure_optimizers()),
    "control": train(lambda m: torch.optim.AdamW(m.model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)),
}))
"""


def _train(command: list[str], model_dir: Path, image: Path, **env: str) -> dict:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), **env}
    proc = subprocess.run([*command, "-c", STEPS, str(model_dir), str(image)], capture_output=True, text=True,
                          env=environ, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_training_gives_the_same_weights_on_an_amd_epyc(tiny_model_dir, shared_data):
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.fail("qemu-x86_64 not found: `bash .ci/install-test-tools` installs Debian's qemu-user")
    image = sorted((shared_data / "chestxray14" / "images").glob("*.png"))[0]
    python = os.path.realpath(sys.executable)
    here = _train([python], tiny_model_dir, image)
    # numpy's AVX2 kernels crashed under qemu 7.2 (in pandas' sorting); numpy does not enter these steps.
    epyc = _train([qemu, "-cpu", "EPYC", python], tiny_model_dir, image,
                  NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR")
    assert epyc["cpu"] == "DEFAULT" and here["cpu"] == "DEFAULT"
    assert epyc["control"] != here["control"], "the emulated CPU did not reach a CPU-dependent path: no check"
    assert epyc["trained"] == here["trained"]

