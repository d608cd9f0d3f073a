"""File helpers every stage shares: required inputs that say what is missing."""

from __future__ import annotations

from pathlib import Path

from probmed.core.errors import MissingFileError


def require_file(path: str | Path, what: str = "input file") -> Path:
    """`path` as a Path if it is a file; otherwise a MissingFileError naming it."""
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"{what} {path} not found")
    return path
