"""CPU training that gives the same weights on every x86-64 CPU, not only on the machine that trained.

Why a module of its own, free of torch: the choices below are read by torch and MKL
once, when they load, so they must be in the process environment before the first
``import torch``. The `probmed finetune` command calls :func:`use_portable_kernels`
before it imports the trainer; a process that already loaded torch (a test calling
the library) gets :data:`NATIVE` and says so in the stage summary.

What differs between CPUs, and what fixes it (``finetune.trainer.cpu_kernels: portable``):

- ATen picks vectorised kernels (AVX2, AVX-512) by the CPU it runs on; the sums in
  them are grouped differently per instruction set. ``ATEN_CPU_CAPABILITY=default``
  selects the portable kernels on every CPU;
- MKL picks its code path by CPU too; ``MKL_CBWR=COMPATIBLE`` is its conditional
  numerical reproducibility mode with the path every x86-64 CPU runs;
- intra-op threads split reductions by the number of cores: one thread
  (``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` / ``torch.set_num_threads(1)``);
- oneDNN (mkldnn) has CPU-specific kernels of its own: disabled; deterministic
  algorithms on (Lightning's ``deterministic``);
- MKL's vector math (VML), which ATen calls for ``sqrt``, ``exp``, ``log``... on large
  tensors, still depends on the CPU under ``MKL_CBWR=COMPATIBLE``: Adam's
  ``exp_avg_sq.sqrt()`` alone made an AMD EPYC and an Intel Xeon train other weights.
  The trainer uses the fused AdamW kernel (ATen's own, correctly rounded ``sqrt``);
  the forward and backward passes call no VML function whose result moved.
  tests/finetune/test_cpu_portability.py trains on an emulated AMD EPYC to keep it so.

ARM CPUs (and GPUs) run other kernels and other BLAS libraries: portable here
means across x86-64 CPUs, the same torch and the same MKL.
"""

from __future__ import annotations

import os
import sys
from typing import Mapping

PORTABLE = "portable"  # the same weights on every x86-64 CPU (slower: no AVX2 / AVX-512 kernels)
NATIVE = "native"  # the fastest kernels of this CPU: the same weights on this machine only
PORTABLE_ENV: Mapping[str, str] = {
    "ATEN_CPU_CAPABILITY": "default",
    "MKL_CBWR": "COMPATIBLE",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def use_portable_kernels(mode: str) -> str:
    """Put the portable kernels in force for this process when ``mode`` asks for them; returns the mode in force.

    Only before torch is imported: afterwards the kernels are chosen, so the mode in force is native."""
    if mode != PORTABLE:
        return NATIVE
    if "torch" in sys.modules:
        return PORTABLE if portable_in_force() else NATIVE
    os.environ.update(PORTABLE_ENV)
    return PORTABLE


def portable_in_force() -> bool:
    """Whether this process's environment selects the portable kernels."""
    return all(os.environ.get(key) == value for key, value in PORTABLE_ENV.items())


def configure_torch(mode: str) -> None:
    """The torch-side half of the portable mode (after import): one thread, no oneDNN kernels."""
    if mode != PORTABLE:
        return
    import torch

    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = False
