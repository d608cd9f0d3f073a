"""ChestX-ray14 -> ImageRecords (box list + label table + the images present).

* Abnormal images: every image of the box list. Conditions come from the box
  labels (``Infiltrate`` normalised to ``infiltration``) with positions from
  positional reasoning on the 1024 px box (zones of the lung field located on
  the film itself, ``curation.lung_field``, kept in ``provenance.lung_field``
  with the reason when it fell back to a frame; a position not known well enough to ask, on an
  implausible or fallback field or a box not within its zone or side with a margin, is withheld:
  the finding has no position and ``provenance.positions_withheld`` says why; pleural findings get pleural
  positions; the cells each condition's boxes reach, plus the other lung of a
  one-sided box of a condition that can be bilateral, which one box per label
  cannot rule out, are kept in ``provenance.extents``: no "no" names them);
  labels the label table gives the
  image without a box are known present with no position (never hallucinated);
  the 14 labels the table does not give the image are known absent.
* Normal images: the ``No Finding`` images (all 14 labels known absent).
* Pixels: the 1024 px original where present, else the 256 px thumbnail (boxes
  are always kept in the 1024 px frame; ``provenance.boxes_256`` holds them
  scaled by 0.25 for the curated 256 px image). Both kinds are normalised
  identically (curation.images), so format and size carry no label.
"""

from __future__ import annotations

import csv
import gzip
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from probmed.benchmark.curation.images import normalise_many
from probmed.benchmark.curation.lung_field import LungField, fixed_field, locate_file
from probmed.benchmark.curation.positions import Box, place_box, unsure
from probmed.benchmark.curation.vocabularies import CXR14_CONDITIONS, CXR14_LABELS
from probmed.benchmark.sources.base import (
    SourceContext,
    SourceResult,
    relative_path,
    require_file,
)
from probmed.core.errors import SourceError
from probmed.core.licences import CHESTXRAY14 as LICENCE
from probmed.core.params_schema import CurateImagePolicy, CurateImages
from probmed.core.records import Finding, ImageRecord

SOURCE = "ChestX-ray14"
BOX_FILE = "BBox_List_2017.csv"
LABEL_FILE = "Data_Entry_2017_v2020.csv.gz"


@dataclass
class RawBox:
    """One row of the ChestX-ray14 box list: image, label and box."""

    image: str
    label: str
    box: Box


def read_boxes(path: Path, result: SourceResult) -> list[RawBox]:
    """Parse the box list; malformed rows and unknown labels are excluded by row number."""
    boxes: list[RawBox] = []
    with open(require_file(path, "ChestX-ray14 box list"), newline="", encoding="utf-8") as fh:
        rows = csv.reader(fh)
        header = next(rows, None)
        if not header or not header[0].startswith("Image Index"):
            raise SourceError(f"{path}: header {header!r} is not the box list's")
        for lineno, row in enumerate(rows, start=2):
            values = [v.strip() for v in row if v.strip() != ""]
            if not values:
                continue
            tag = f"line {lineno} ({values[0]})"
            if len(values) != 6:
                result.exclude("malformed box row (expected 6 values)", tag)
                continue
            name, label, *coords = values
            if label not in CXR14_LABELS:
                result.exclude("unknown box label", f"{tag}: {label}")
                continue
            try:
                x, y, w, h = (float(c) for c in coords)
            except ValueError:
                result.exclude("malformed box row (non-numeric box)", tag)
                continue
            if not all(math.isfinite(v) for v in (x, y, w, h)) or w <= 0 or h <= 0:
                result.exclude("malformed box row (empty or non-finite box)", tag)
                continue
            boxes.append(RawBox(name, label, Box(x, y, w, h)))
    if not boxes:
        raise SourceError(f"{path}: no usable box rows")
    return boxes


def read_label_table(path: Path, wanted: set[str]) -> dict[str, dict[str, str]]:
    """Label-table rows of the wanted image names (the table has 112,120 rows)."""
    out: dict[str, dict[str, str]] = {}
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(require_file(path, "ChestX-ray14 label table"), "rt", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "Finding Labels" not in reader.fieldnames:
            raise SourceError(f"{path}: no 'Finding Labels' column")
        for row in reader:
            if row["Image Index"] in wanted:
                out[row["Image Index"]] = row
    return out


def image_id(name: str) -> str:
    """A ChestX-ray14 image's id in the records."""
    return f"cxr14-{Path(name).stem}"


def _normal_files(data_dir: Path) -> dict[str, Path]:
    """The no-finding images by their label-table name (JPEG re-encodes carry the PNG's stem)."""
    out: dict[str, Path] = {}
    nf_dir = data_dir / "images_no_finding"
    for f in sorted(nf_dir.glob("*")) if nf_dir.is_dir() else []:
        if f.suffix.lower() in (".png", ".jpg", ".jpeg"):
            out.setdefault(f"{f.stem}.png", f)
    return out


def _field_note(field: LungField) -> dict[str, object]:
    """The located lung field as provenance: each lung's (top, bottom, x0, x1) and the fallback's reason."""
    lungs = {side: [round(float(v), 4) for v in vars(field.lung(side)).values()] for side in ("right", "left")}
    return {**lungs, "fallback": field.fallback}


def _abnormal_record(name: str, boxes: list[RawBox], row: dict[str, str], pixels: str, dst: Path, image_root: Path,
                     size: int, result: SourceResult, field: LungField) -> ImageRecord | None:
    """A boxed image's record: box findings with positions, then table labels without a box."""
    table_labels = {CXR14_LABELS[label] for label in row["Finding Labels"].split("|") if label in CXR14_LABELS}
    unknown = [label for label in row["Finding Labels"].split("|") if label not in CXR14_LABELS and label != "No Finding"]
    if unknown:
        result.exclude("unknown label in label table", f"{name}: {'|'.join(unknown)}")
        return None
    findings: list[Finding] = []
    extents: dict[str, set[str]] = {}
    unruled: dict[str, set[str]] = {}
    withheld: list[dict[str, str]] = []
    for b in boxes:
        condition = CXR14_LABELS[b.label]
        placed = place_box(b.box, condition, field=field)
        extents.setdefault(condition, set()).update(placed.extent | placed.unruled)
        unruled.setdefault(condition, set()).update(placed.unruled)
        why = unsure(b.box, placed, field)
        if why is not None:
            withheld.append({"condition": condition, "position": placed.position, "why": why})
        f = Finding(condition, None if why else placed.position)
        if f not in findings:
            findings.append(f)
    boxed = {f.condition for f in findings}
    findings += [Finding(c, None) for c in sorted(table_labels - boxed)]
    present = boxed | table_labels
    return ImageRecord(
        image_id=image_id(name),
        source=SOURCE,
        modality="x-ray",
        organ="chest",
        abnormal=True,
        findings=findings,
        absent_conditions=[c for c in CXR14_CONDITIONS if c not in present],
        image_path=relative_path(dst, image_root),
        patient_id=row["Patient ID"],
        licence=LICENCE,
        provenance={
            "origin": name,
            "pixels": pixels,
            "view": row.get("View Position"),
            "boxes": [{"label": b.label, "x": b.box.x, "y": b.box.y, "w": b.box.w, "h": b.box.h} for b in boxes],
            "boxes_256": [{"label": b.label, **vars(b.box.scaled(size / 1024.0))} for b in boxes],
            "table_labels": row["Finding Labels"],
            # every lung-field cell a condition may occupy (its boxes reach them, or one box per label cannot
            # rule them out: listed again under "unruled"): no hallucinated position touches them
            "extents": {c: sorted(cells) for c, cells in sorted(extents.items())},
            "unruled": {c: sorted(cells) for c, cells in sorted(unruled.items()) if cells},
            "lung_field": _field_note(field),
            # positions not known well enough to ask (curation.positions.unsure): the finding keeps its condition
            **({"positions_withheld": withheld} if withheld else {}),
        },
    )


def _normal_record(name: str, src: Path, row: dict[str, str], dst: Path, image_root: Path) -> ImageRecord:
    return ImageRecord(
        image_id=image_id(name),
        source=SOURCE,
        modality="x-ray",
        organ="chest",
        abnormal=False,
        findings=[],
        absent_conditions=list(CXR14_CONDITIONS),
        image_path=relative_path(dst, image_root),
        patient_id=row["Patient ID"],
        licence=LICENCE,
        provenance={"origin": src.name, "pixels": f"no_finding_{src.suffix.lstrip('.').lower()}", "view": row.get("View Position")},
    )


_DEFAULT = CurateImagePolicy()  # the loader's defaults are the params section's (curate.images)


def load_chestxray14(
    data_dir: Path,
    out_dir: Path,
    image_root: Path,
    size: int = _DEFAULT.image_size,
    resample: str = _DEFAULT.resample,
    workers: int = _DEFAULT.workers,
    write_images: bool = True,
) -> SourceResult:
    """Read the ChestX-ray14 copy under data_dir and write curated images to out_dir.

    ``write_images=False`` builds the records only (paths still point at out_dir),
    for callers that need metadata but not pixels."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SourceError(f"ChestX-ray14 directory not found: {data_dir}")
    result = SourceResult(SOURCE)
    by_image: dict[str, list[RawBox]] = {}
    for b in read_boxes(data_dir / BOX_FILE, result):
        by_image.setdefault(b.image, []).append(b)
    normal_files = _normal_files(data_dir)
    table = read_label_table(data_dir / LABEL_FILE, set(by_image) | set(normal_files))
    pending: list[tuple[ImageRecord, Path, Path]] = []  # (record, source pixels, curated image to write)
    for name in sorted(by_image):
        full, thumb = data_dir / "images" / name, data_dir / "thumbnails_256" / name
        src = full if full.is_file() else thumb if thumb.is_file() else None
        if src is None:
            result.exclude("missing image file", name)
            continue
        row = table.get(name)
        if row is None:
            result.exclude("not in label table", name)
            continue
        dst = Path(out_dir) / f"{Path(name).stem}.png"
        pixels = "original_1024" if src == full else "thumbnail_256"
        try:
            field = locate_file(src, row.get("View Position"))
        except OSError as err:  # an unreadable file is excluded when its pixels are written; its record needs a field
            field = fixed_field(row.get("View Position"), f"image unreadable ({type(err).__name__}): frame of the view")
        rec = _abnormal_record(name, by_image[name], row, pixels, dst, image_root, size, result, field)
        if rec is not None:
            pending.append((rec, src, dst))
    for name, src in sorted(normal_files.items()):
        row = table.get(name)
        if row is None:
            result.exclude("not in label table", src.name)
        elif row["Finding Labels"] != "No Finding":
            result.exclude("normal-folder image not labelled 'No Finding'", src.name)
        else:
            dst = Path(out_dir) / f"{Path(name).stem}.png"
            pending.append((_normal_record(name, src, row, dst, image_root), src, dst))
    pairs = [(src, dst) for _, src, dst in pending]
    errors = normalise_many(pairs, Path(out_dir), size=size, resample=resample, workers=workers) if write_images else {}
    for rec, src, _ in pending:
        if str(src) in errors:
            result.exclude("unreadable image file", f"{src.name}: {errors[str(src)]}")
        else:
            result.records.append(rec)
    if not result.records:
        raise SourceError(f"{data_dir}: no usable ChestX-ray14 image")
    fields = [r.provenance["lung_field"] for r in result.records if "lung_field" in r.provenance]
    result.notes["lung_field"] = {"located": sum(f["fallback"] is None for f in fields),
                                  "fallback": sum(f["fallback"] is not None for f in fields)}
    result.notes["positions_withheld"] = dict(Counter(w["why"].split(":")[0].split(" (")[0] for r in result.records
                                                      for w in r.provenance.get("positions_withheld", [])).most_common())
    result.notes["pixels"] = {
        k: sum(1 for r in result.records if r.provenance["pixels"] == k)
        for k in sorted({r.provenance["pixels"] for r in result.records})
    }
    return result


def load(context: SourceContext) -> SourceResult:
    """The registry's loader: `curate.chestxray14.images_dir` and the policy `curate.images` (square: the images are)."""
    options = context.options_as(CurateImages)
    policy = context.images
    return load_chestxray14(context.data_dir, Path(options.images_dir), context.image_root,
                            policy.image_size, policy.resample, policy.workers)
