"""What every source loader returns: the records plus an explicit account of
everything it excluded, so nothing is ever silently dropped."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probmed.core.errors import SourceError
from probmed.core.records import ImageRecord



@dataclass
class SourceResult:
    source: str
    records: list[ImageRecord] = field(default_factory=list)
    # reason -> offending ids (image ids, row numbers, QA ids)
    excluded: dict[str, list[str]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def exclude(self, reason: str, item_id: str) -> None:
        self.excluded.setdefault(reason, []).append(str(item_id))

    def summary(self) -> dict[str, Any]:
        """JSON-ready counts: records, per-modality/organ, and each exclusion with its ids."""
        return {
            "source": self.source,
            "records": len(self.records),
            "abnormal": Counter(str(r.abnormal) for r in self.records),
            "modality": Counter(r.modality for r in self.records),
            "organ": Counter(r.organ for r in self.records),
            "excluded": {k: {"count": len(v), "ids": v} for k, v in sorted(self.excluded.items())},
            **self.notes,
        }


def relative_path(path: Path, image_root: Path) -> str:
    """A path relative to the image root, POSIX style, as question tables store it."""
    return Path(os.path.relpath(Path(path).resolve(), Path(image_root).resolve())).as_posix()


def require_file(path: Path, what: str) -> Path:
    if not Path(path).is_file():
        raise SourceError(f"{what} not found: {path}")
    return Path(path)
