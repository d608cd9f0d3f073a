"""CPU kernels that give the same numbers on every x86-64 CPU, not only on the machine that computed them.

Why a module of its own, free of torch and numpy: the choices below are read by torch,
MKL, numpy and OpenBLAS once, when they load, so they must be in the process environment
before the first ``import numpy``. `probmed` puts them in force before a command that
computes with a model runs (``finetune.trainer.cpu_kernels`` for training,
``predict.cpu_kernels`` for answering: predict, describe, the audit's blind baseline, the
transfer study); a process that already loaded torch or numpy (a test calling the library)
gets :data:`NATIVE` and says so.

What differs between CPUs, and what fixes it (``portable``):

- ATen picks vectorised kernels (AVX2, AVX-512) by the CPU it runs on; the sums in
  them are grouped differently per instruction set. ``ATEN_CPU_CAPABILITY=default``
  selects the portable kernels on every CPU;
- MKL picks its code path by CPU too; ``MKL_CBWR=COMPATIBLE`` is its conditional
  numerical reproducibility mode with the path every x86-64 CPU runs;
- OpenBLAS (numpy's and scipy's: the blind baseline's logistic regression) picks a kernel
  per CPU (Haswell on an AMD EPYC, SkylakeX on an AVX-512 Xeon): ``OPENBLAS_CORETYPE=Nehalem``
  is one every x86-64 CPU numpy runs on has; numpy's own loops dispatch to AVX2 / AVX-512
  too: ``NPY_DISABLE_CPU_FEATURES`` keeps them on numpy's baseline (x86-64-v2);
- intra-op threads split reductions by the number of cores: one thread
  (``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``torch.set_num_threads(1)``);
- oneDNN (mkldnn) has CPU-specific kernels of its own: disabled (:func:`configure_torch`); the
  trainer also turns on deterministic algorithms (Lightning's ``deterministic``);
- MKL's vector math (VML), which ATen calls for ``sqrt``, ``exp``, ``log``... on large
  tensors, still depends on the CPU under ``MKL_CBWR=COMPATIBLE``: Adam's
  ``exp_avg_sq.sqrt()`` alone made an AMD EPYC and an Intel Xeon train other weights.
  The trainer uses the fused AdamW kernel (ATen's own, correctly rounded ``sqrt``).

tests/finetune/test_cpu_portability.py trains on an emulated AMD EPYC and
tests/inference/models/test_cpu_kernels_in_force.py answers under the kernels another CPU
would pick, to keep it so. Portable here means across x86-64 CPUs with AVX2 and FMA, the same
wheels and the same glibc: glibc's libm picks FMA variants of ``exp``, ``log``... by the CPU, so a
CPU without FMA gives other last bits (seen emulating a Nehalem). ARM CPUs (and GPUs) run other
kernels and other BLAS libraries.
"""

from __future__ import annotations

import os
import platform
import sys
from typing import Mapping

PORTABLE = "portable"  # the same numbers on every x86-64 CPU (slower: no AVX2 / AVX-512 kernels)
NATIVE = "native"  # the fastest kernels of this CPU: the same numbers on this machine only
# numpy 2.4's dispatched x86 targets above its baseline (numpy._core._multiarray_umath.__cpu_dispatch__)
NUMPY_DISPATCHED = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
PORTABLE_ENV: Mapping[str, str] = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    **({"OPENBLAS_CORETYPE": "Nehalem", "NPY_DISABLE_CPU_FEATURES": NUMPY_DISPATCHED}
       if platform.machine().lower() in ("x86_64", "amd64") else {}),
}
LOADS_KERNELS = ("torch", "numpy")  # importing either fixes the kernels of this process


def use_portable_kernels(mode: str) -> str:
    """Put the portable kernels in force for this process when ``mode`` asks for them; returns the mode in force.

    Only before torch or numpy is imported: afterwards the kernels are chosen, so the mode in force is native
    unless the environment already selected the portable ones."""
    if mode != PORTABLE:
        return NATIVE
    if any(module in sys.modules for module in LOADS_KERNELS):
        return kernels_in_force()
    os.environ.update(PORTABLE_ENV)
    return PORTABLE


def portable_in_force() -> bool:
    """Whether this process's environment selects the portable kernels."""
    return all(os.environ.get(key) == value for key, value in PORTABLE_ENV.items())


def kernels_in_force() -> str:
    """:data:`PORTABLE` or :data:`NATIVE`, as this process's environment selects."""
    return PORTABLE if portable_in_force() else NATIVE


def configure_torch() -> None:
    """The torch-side half of the portable mode (after import): one thread, no oneDNN kernels; nothing under native."""
    if not portable_in_force():
        return
    import torch

    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
