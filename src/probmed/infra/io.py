"""File helpers every stage shares: atomic writes, and required inputs that say what is missing.

Every output is written to a hidden temporary file beside its destination
(``.<name>.<random>.tmp``) and renamed over it only when complete, so a crash or
a full disk never leaves half a table or a truncated PNG under the real name.
A failed write removes its temporary file; one a killed process left behind is
removed by the next run of its stage (:func:`remove_stale_temps`), and git and
DVC ignore the pattern (.gitignore, .dvcignore).

Standard library only: commands that write JSON (score-official) stay free of pandas.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from probmed.core.errors import MissingFileError

if TYPE_CHECKING:
    import pandas as pd

TEMP_SUFFIX = ".tmp"  # every atomic writer writes ".<name>.<random>.tmp" beside its target, then renames


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A fresh hidden temporary path beside `path`, renamed over `path` when the block ends, removed if it fails.

    The temporary name ends in ``.tmp``, not the destination's suffix: writers that
    infer a format from the name (matplotlib, PIL) are given it explicitly.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}{TEMP_SUFFIX}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def folder_for(path: str | Path) -> Iterator[Path]:
    """`path` made (with its missing parents) for a block that writes into it; when the block fails, the folders
    made here are removed again if they are empty, so a refused or failed writer leaves no empty folder behind."""
    path = Path(path)
    made = [p for p in (path, *path.parents) if not p.exists()]  # deepest first: the order they are removed in
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # not empty (another writer's, or what this one keeps): leave it and its parents
                break
        raise


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
    """JSON, CSV, Markdown and HTML outputs."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_atomic(obj: Any, path: str | Path) -> None:
    """Write indented JSON atomically (readers never see half a file)."""
    write_text_atomic(json.dumps(obj, indent=2, sort_keys=False) + "\n", path)


def write_parquet(frame: "pd.DataFrame", path: str | Path) -> None:
    """A table written whole or not at all: a crash never leaves half a table."""
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def require_file(path: str | Path, what: str = "input file") -> Path:
    """`path` as a Path if it is a file; otherwise a MissingFileError naming it."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"{what} {path} not found")
    return path
