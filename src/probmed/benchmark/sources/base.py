"""What every source loader gets and returns.

Every loader has one signature, `load(context: SourceContext) -> SourceResult`
(see sources.registry): the context says where the raw files are, what image
paths are written relative to, the source's own params (`curate.<source>`) and
how captions become metadata; the result holds the records plus an explicit
account of everything excluded, so nothing is ever silently dropped."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TypeVar

from probmed.core.errors import ConfigError, SourceError
from probmed.core.params_schema import CurateImagePolicy, Section
from probmed.core.records import ImageRecord

S = TypeVar("S", bound=Section)
CaptionExtractor = Callable[[str, str], Any]  # (caption id, caption) -> curation.extract_rules.Extraction


def _rule_extractor() -> CaptionExtractor:
    from probmed.benchmark.curation.extract_rules import extract

    return extract


@dataclass(frozen=True)
class SourceContext:
    """Everything a loader may need; `options` is the source's typed params section (`curate.<name>`),
    `images` the image policy every source shares (`curate.images`)."""

    name: str
    data_dir: Path
    image_root: Path
    options: Section | None = None
    images: CurateImagePolicy = field(default_factory=CurateImagePolicy)
    make_extractor: Callable[[], CaptionExtractor] = _rule_extractor

    def options_as(self, kind: type[S]) -> S:
        """The source's section as the kind its loader reads; ConfigError names `curate.<source>` otherwise."""
        if not isinstance(self.options, kind):
            raise ConfigError(f"params: curate.{self.name} is missing or not a {kind.__name__} section")
        return self.options

    def extractor(self) -> CaptionExtractor:
        """The caption -> metadata extractor the run is configured with (params `extract.method`)."""
        return self.make_extractor()


@dataclass
class SourceResult:
    """A loader's output: the records, every exclusion with its ids, and notes for the report."""

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
    """A path relative to the image root, POSIX style, as question tables store it.

    The image must lie under the image root (question tables never point outside it);
    symlinks are not followed here, prediction checks where they lead."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(image_root))
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        raise SourceError(
            f"image {path} is outside the image root {image_root}: set curate.image_root (--image-root) "
            "to a directory that holds the data"
        )
    return Path(rel).as_posix()


def require_file(path: Path, what: str) -> Path:
    """The path, when it is a file; otherwise a SourceError naming what is missing."""
    if not Path(path).is_file():
        raise SourceError(f"{what} not found: {path}")
    return Path(path)
