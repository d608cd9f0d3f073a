"""Virtual environments of their own for tools that cannot live beside the project's pins.

cffconvert (jsonschema<4), mlcroissant (pulls pandas-stubs, which would change what mypy sees), inspect-ai
(fsspec<=2026.6) and lmms-eval (protobuf<7 through wandb) are installed from the package index into
``build/test-venvs/<name>-<hash of the requirements>/`` (git-ignored), once; a folder without its
``.complete`` marker (an install that was killed) is rebuilt.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "build" / "test-venvs"

CFFCONVERT = ("cffconvert==2.0.0",)
MLCROISSANT = ("mlcroissant==1.1.1", "pyarrow==25.0.1", "pillow==13.0.0")


def venv(name: str, requirements: tuple[str, ...], timeout: int = 1500, fixes: tuple[tuple[str, ...], ...] = ()) -> Path:
    """The bin/ folder of a venv holding ``requirements`` (created on first use), then each pip command of ``fixes``."""
    key = hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:10]
    folder = ROOT / f"{name}-{key}"
    if (folder / ".complete").is_file():
        return folder / "bin"
    shutil.rmtree(folder, ignore_errors=True)
    folder.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, timeout=120)
    subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", *requirements], check=True,
                   timeout=timeout, capture_output=True)
    for fix in fixes:
        subprocess.run([str(folder / "bin" / "python"), "-m", "pip", *fix], check=True, timeout=600, capture_output=True)
    (folder / ".complete").write_text("\n".join(requirements) + "\n")
    return folder / "bin"

INSPECT_AI = ("inspect-ai==0.3.285", "openai==3.57.0", "datasets==5.2.0", "pillow==13.0.0")
LMMS_EVAL = ("lmms-eval==0.7.3", "torch==2.13.0", "datasets==5.2.0", "pillow==13.0.0")
# torchvision (which lmms-eval pulls) cannot load beside torch 2.13 and transformers runs without it;
# lmms-eval 0.7.3 imports filelock._api, which filelock 4 no longer has.
LMMS_EVAL_FIXES = (("uninstall", "-y", "-q", "torchvision"), ("install", "-q", "filelock==3.32.7"))
