"""Virtual environments of their own for tools that cannot live beside the project's pins.

cffconvert (jsonschema<4), mlcroissant (pulls pandas-stubs, which would change what mypy sees), inspect-ai
(fsspec<=2026.6) and lmms-eval (protobuf<7 through wandb) are installed from the package index into
``build/test-venvs/<name>-<hash of the requirements>/`` (git-ignored), once; a folder without its
``.complete`` marker (an install that was killed) is rebuilt.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "build" / "test-venvs"

CFFCONVERT = ("cffconvert==2.0.0",)
MLCROISSANT = ("mlcroissant==1.1.1", "pyarrow==25.0.1", "pillow==13.0.0")


def venv(name: str, requirements: tuple[str, ...], timeout: int = 1500, fixes: tuple[tuple[str, ...], ...] = ()) -> Path:
    """The bin/ folder of a venv holding ``requirements`` (created on first use), then each `uv pip` command of ``fixes``."""
    key = hashlib.sha256("\n".join(requirements + tuple(" ".join(f) for f in fixes)).encode()).hexdigest()[:10]
    folder = ROOT / f"{name}-{key}"
    if (folder / ".complete").is_file():
        return folder / "bin"
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    _uv_pip(folder, ("install", *requirements), timeout)
    for fix in fixes:
        _uv_pip(folder, fix, 600)
    (folder / ".complete").write_text("\n".join(requirements) + "\n")
    return folder / "bin"


def _uv_pip(folder: Path, command: tuple[str, ...], timeout: int) -> None:
    """``uv pip <command>`` into the venv at ``folder``: uv (the project's installer, .ci/install) resolves and
    downloads in parallel, minutes faster than pip for lmms-eval's tree. uv reads neither pip's config nor
    ``PIP_*`` variables, so the local wheel folders pip is pointed at (the CPU torch wheel) are passed on."""
    links = [arg for place in os.environ.get("PIP_FIND_LINKS", "").split() for arg in ("--find-links", place)]
    extra = links if command[0] == "install" else []
    done = subprocess.run([sys.executable, "-m", "uv", "pip", *command[:1], "-q", "--python", str(folder / "bin" / "python"),
                           *extra, *command[1:]], timeout=timeout, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"uv pip {' '.join(command)} into {folder} failed:\n{done.stderr[-4000:]}")


INSPECT_AI = ("inspect-ai==0.3.285", "openai==3.57.0", "datasets==5.2.0", "pillow==13.0.0")
LMMS_EVAL = ("lmms-eval==0.7.3", "torch==2.13.0", "datasets==5.2.0", "pillow==13.0.0")
# torchvision (which lmms-eval pulls) cannot load beside torch 2.13 and transformers runs without it;
# lmms-eval 0.7.3 imports filelock._api, which filelock 4 no longer has.
LMMS_EVAL_FIXES = (("uninstall", "torchvision"), ("install", "filelock==3.32.7"))
