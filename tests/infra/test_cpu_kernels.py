"""The portable CPU kernels are put in force before torch and numpy load, in the command's own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from probmed.infra.cpu_kernels import NATIVE, PORTABLE, PORTABLE_ENV

CHECK = """
import json, os, sys
from probmed.infra.cpu_kernels import use_portable_kernels
mode = use_portable_kernels(sys.argv[1])
import torch
from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
from threadpoolctl import threadpool_info
import scipy.linalg  # loads scipy's own OpenBLAS
print(json.dumps({"mode": mode, "capability": torch.backends.cpu.get_cpu_capability(),
                  "env": {k: os.environ.get(k) for k in %r},
                  "numpy_dispatch": sorted(f for f in __cpu_dispatch__ if __cpu_features__.get(f)),
                  "openblas": sorted({(i.get("architecture"), i["num_threads"]) for i in threadpool_info()
                                      if i["internal_api"] == "openblas"})}))
""" % (list(PORTABLE_ENV),)


def _run(mode: str, **env: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHECK, mode], capture_output=True, text=True, check=True,
                          env={**os.environ, **env}, timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_portable_overrides_what_the_caller_asked_for():
    """A machine's own ATEN_CPU_CAPABILITY / MKL_CBWR gave other weights: the command forces the portable path."""
    got = _run(PORTABLE, ATEN_CPU_CAPABILITY="avx2", MKL_CBWR="AVX2", OPENBLAS_CORETYPE="Haswell")
    assert got["mode"] == PORTABLE and got["env"] == dict(PORTABLE_ENV)
    assert got["capability"] == "DEFAULT"


@pytest.mark.skipif("OPENBLAS_CORETYPE" not in PORTABLE_ENV, reason="x86-64 only: OpenBLAS and numpy run other kernels on ARM")
def test_portable_pins_numpy_and_both_openblas_libraries():
    """numpy's and scipy's OpenBLAS on one kernel and one thread, numpy's loops on its baseline: the blind
    baseline's logistic regression gave other P(yes) on an Intel Xeon (SkylakeX kernels) and an AMD EPYC (Haswell)."""
    got = _run(PORTABLE)
    assert got["numpy_dispatch"] == []
    assert got["openblas"] == [["Nehalem", 1]]
    assert _run(NATIVE, OPENBLAS_CORETYPE="")["openblas"] != [["Nehalem", 1]]


def test_native_leaves_the_environment_alone():
    got = _run(NATIVE, ATEN_CPU_CAPABILITY="avx2")
    assert got["mode"] == NATIVE and got["env"]["ATEN_CPU_CAPABILITY"] == "avx2"
