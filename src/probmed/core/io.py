"""File helpers every stage shares: required inputs that say what is missing, atomic text and JSON writes.

Standard library only: commands that write JSON (score-official) stay free of pandas.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from probmed.core.errors import MissingFileError


def require_file(path: str | Path, what: str = "input file") -> Path:
    """`path` as a Path if it is a file; otherwise a MissingFileError naming it."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"{what} {path} not found")
    return path


TEMP_SUFFIX = ".tmp"  # every atomic writer writes ".<name>.<random>.tmp" beside its target, then renames


def remove_stale_temps(directory: str | Path) -> list[Path]:
    """Delete the hidden temporary files a killed writer left under `directory` (ours only: hidden,
    ending in .tmp), so no half-written file lingers in a DVC output; returns what was removed."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    stale = [p for p in directory.rglob(f".*{TEMP_SUFFIX}") if p.is_file()]
    for p in stale:
        p.unlink(missing_ok=True)
    return stale


def write_text_atomic(text: str, path: str | Path) -> None:
    """Write via a temporary file and rename, so a crash never leaves half a file (JSON, CSV, Markdown)."""
    import tempfile  # here, not at the top: it pulls in random and shutil, which `probmed --help` never needs

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json_atomic(obj: Any, path: str | Path) -> None:
    write_text_atomic(json.dumps(obj, indent=2, sort_keys=False) + "\n", path)
