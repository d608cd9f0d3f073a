"""The portable CPU kernels are put in force before torch loads, in the stage's own process."""

from __future__ import annotations

import json
import subprocess
import sys

from probmed.finetune.cpu_kernels import NATIVE, PORTABLE, PORTABLE_ENV

CHECK = """
import json, os, sys
from probmed.finetune.cpu_kernels import use_portable_kernels
mode = use_portable_kernels(sys.argv[1])
import torch
print(json.dumps({"mode": mode, "capability": torch.backends.cpu.get_cpu_capability(),
                  "env": {k: os.environ.get(k) for k in %r}}))
""" % (list(PORTABLE_ENV),)


def _run(mode: str, **env: str) -> dict:
    import os

    proc = subprocess.run([sys.executable, "-c", CHECK, mode], capture_output=True, text=True, check=True,
                          env={**os.environ, **env}, timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_portable_overrides_what_the_caller_asked_for():
    """A machine's own ATEN_CPU_CAPABILITY / MKL_CBWR gave other weights: the stage forces the portable path."""
    got = _run(PORTABLE, ATEN_CPU_CAPABILITY="avx2", MKL_CBWR="AVX2")
    assert got["mode"] == PORTABLE and got["env"] == dict(PORTABLE_ENV)
    assert got["capability"] == "DEFAULT"


def test_native_leaves_the_environment_alone():
    got = _run(NATIVE, ATEN_CPU_CAPABILITY="avx2")
    assert got["mode"] == NATIVE and got["env"]["ATEN_CPU_CAPABILITY"] == "avx2"
