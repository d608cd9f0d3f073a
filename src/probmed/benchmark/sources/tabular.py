"""What the sources with a ``metadata.csv`` (roco-images, covid-chestxray-ct, figshare-brain-tumor,
brats2015-deepmedic-sample) share: reading the table strictly, boxes, and writing their images by one
hygiene policy per source."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from PIL import Image

from probmed.benchmark.curation.images import DEFAULT_COMPRESSION, fitted_size, normalise_many, placement
from probmed.benchmark.curation.positions import Box
from probmed.benchmark.sources.base import SourceContext, SourceResult, require_file
from probmed.core.errors import SourceError
from probmed.core.params_schema import CurateImagePolicy, CurateImages
from probmed.core.records import ImageRecord


def read_metadata(data_dir: Path, required: Iterable[str], what: str) -> list[dict[str, str]]:
    """The rows of ``data_dir/metadata.csv``; a missing file or column is a SourceError naming it."""
    path = require_file(Path(data_dir) / "metadata.csv", f"{what} metadata table")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise SourceError(f"{path}: missing column(s) {missing}")
        rows = [{k: (v or "").strip() for k, v in row.items() if k is not None} for row in reader]
    if not rows:
        raise SourceError(f"{path}: no rows")
    return rows


def parse_box(text: str) -> Box | None:
    """``"x,y,w,h"`` in pixels -> Box; None when malformed, non-finite or without area."""
    try:
        x, y, w, h = (float(v) for v in text.split(","))
    except ValueError:
        return None
    if not all(math.isfinite(v) for v in (x, y, w, h)) or w <= 0 or h <= 0:
        return None
    return Box(x, y, w, h)


_DEFAULT = CurateImagePolicy()  # the policy's defaults are the params section's (curate.images)


@dataclass(frozen=True)
class ImagePolicy:
    """One format and size policy for every image of a source (curation.images)."""

    out_dir: Path
    size: int = _DEFAULT.image_size
    resample: str = _DEFAULT.resample
    fit: str = _DEFAULT.fit
    workers: int = _DEFAULT.workers
    uncompressed: bool = False  # PNG stored uncompressed: the file size depends on the dimensions alone

    def describe(self) -> str:
        return f"decode, grayscale, {self.fit} {self.size} px ({self.resample}), PNG" + (
            " stored uncompressed" if self.uncompressed else "")

    @classmethod
    def of(cls, options: CurateImages, images: CurateImagePolicy, source: str = "") -> "ImagePolicy":
        """The policy of one source: its `curate.<source>.images_dir` and the shared `curate.images`."""
        return cls(Path(options.images_dir), images.image_size, images.resample, images.fit, images.workers,
                   source in images.uncompressed)

    @classmethod
    def from_context(cls, context: SourceContext) -> "ImagePolicy":
        """The policy of the context's source (its section is a :class:`CurateImages`)."""
        return cls.of(context.options_as(CurateImages), context.images, context.name)


def write_images(
    pending: list[tuple[ImageRecord, Path]], policy: ImagePolicy, result: SourceResult, write: bool = True
) -> None:
    """Write every pending image by the policy; records whose image cannot be read are excluded.

    Each kept record gets ``provenance.original_size`` and ``provenance.curated_size`` (and
    ``boxes_curated`` scaled from ``boxes`` when it has boxes).
    """
    pairs = [(src, policy.out_dir / f"{Path(src).stem}.png") for _, src in pending]
    level = 0 if policy.uncompressed else DEFAULT_COMPRESSION
    errors = normalise_many(pairs, policy.out_dir, policy.size, policy.resample, policy.workers, policy.fit,
                            level) if write else {}
    for rec, src in pending:
        if str(src) in errors:
            result.exclude("unreadable image file", f"{rec.image_id}: {errors[str(src)]}")
            continue
        try:
            with Image.open(src) as im:
                width, height = im.size
        except OSError as exc:
            result.exclude("unreadable image file", f"{rec.image_id}: {exc}")
            continue
        curated = fitted_size(width, height, policy.size, policy.fit)
        rec.provenance["original_size"] = [width, height]
        rec.provenance["curated_size"] = list(curated)
        sx, sy, left, top = placement(width, height, policy.size, policy.fit)
        if rec.provenance.get("boxes"):
            moved = {"x": lambda v: v * sx + left, "y": lambda v: v * sy + top, "w": lambda v: v * sx, "h": lambda v: v * sy}
            rec.provenance["boxes_curated"] = [{k: (round(moved[k](v), 2) if k in moved else v) for k, v in b.items()}
                                               for b in rec.provenance["boxes"]]
        result.records.append(rec)
    result.notes["image_policy"] = policy.describe()
