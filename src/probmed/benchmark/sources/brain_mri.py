"""Brain MRI slices with one tumour box each -> ImageRecords: the figshare brain tumour set (glioma,
meningioma, pituitary tumour; plane not recorded) and the BraTS 2015 sample (glioma, axial).

* modality MRI, organ brain, abnormal (both sets hold tumour slices only);
* the finding is the folder's tumour class with the position of its box
  (curation.brain_positions: hemisphere on axial/coronal slices by the radiological convention,
  the sellar region for pituitary tumours, none on sagittal or unknown planes, nor for a box touching the
  midline without straddling it, ``provenance.positions_withheld`` saying so; figshare planes are
  estimated from the mirror symmetry of the head outline and of what lies inside it, both recorded in
  ``provenance``, BraTS slices are axial);
* figshare labels are a three-way classification, so the two other tumour classes are known absent;
* pixels: every slice of a source written by one policy (curation.images: grayscale, long side
  ``image_size``, one filter, PNG), boxes kept in the source frame and scaled in ``boxes_curated``.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from probmed.benchmark.curation.brain_positions import BrainPosition, brain_box_position
from probmed.benchmark.curation.positions import Box
from probmed.benchmark.curation.vocabularies import CONDITION_SYNONYMS
from probmed.benchmark.sources.base import SourceContext, SourceResult, relative_path
from probmed.benchmark.sources.tabular import (
    ImagePolicy,
    parse_box,
    read_metadata,
    write_images,
)
from probmed.core.errors import SourceError
from probmed.core.records import Finding, ImageRecord
from probmed.infra.progress import progress

FIGSHARE = "figshare brain tumor"
BRATS = "BraTS 2015"
TUMOUR_CLASSES = ("glioma", "meningioma", "pituitary tumor")
REQUIRED = ("file", "modality", "body_part", "view", "findings", "finding_boxes", "normal", "licence")


def _position_job(args: tuple[str, tuple[float, float, float, float], str, str | None]) -> BrainPosition | str:
    path, box, condition, plane = args
    try:
        return brain_box_position(Path(path), Box(*box), condition, plane)
    except (OSError, ValueError) as exc:  # unreadable image: reported by the caller
        return f"{type(exc).__name__}: {exc}"


def _positions(jobs: list[tuple], workers: int) -> list[BrainPosition | str]:
    if workers > 1 and len(jobs) > 16:
        with ProcessPoolExecutor(workers) as pool:
            return list(progress(pool.map(_position_job, jobs, chunksize=max(1, len(jobs) // (workers * 8))),
                             total=len(jobs), desc="brain positions", leave=False))
    return [_position_job(j) for j in progress(jobs, desc="brain positions", unit="image", leave=False)]


def _row_record(
    row: dict[str, str], data_dir: Path, source: str, prefix: str, result: SourceResult
) -> tuple[ImageRecord, Path, Box, str | None] | None:
    """(record without position, image, box, stated plane) of one metadata row, or None with the row excluded."""
    stem = Path(row["file"]).stem
    image_id = f"{prefix}-{stem}"
    src = data_dir / row["file"]
    condition = CONDITION_SYNONYMS.get(row["findings"].lower())
    box = parse_box(row["finding_boxes"])
    checks = (
        (not src.is_file(), "missing image file"),
        (row["modality"].upper() != "MRI" or row["body_part"].lower() != "brain", "not a brain MRI row"),
        (condition not in TUMOUR_CLASSES, f"unknown tumour class {row['findings']!r}"),
        (box is None, "malformed tumour box"),
        (row["normal"].lower() != "no", "not labelled abnormal"),
        (not row["licence"], "no licence stated"),
    )
    for failed, reason in checks:
        if failed:
            result.exclude(reason, image_id)
            return None
    assert condition is not None and box is not None  # the checks above excluded the row otherwise
    rec = ImageRecord(
        image_id=image_id,
        source=source,
        modality="mri",
        organ="brain",
        abnormal=True,
        findings=[Finding(condition)],
        absent_conditions=[c for c in TUMOUR_CLASSES if c != condition] if source == FIGSHARE else [],
        patient_id=row.get("patient_id") or None,
        licence=row["licence"],
        provenance={"origin": row["file"], "sequence": row.get("sequence", ""),
                    "boxes": [{"label": condition, "x": box.x, "y": box.y, "w": box.w, "h": box.h}]},
    )
    view = row["view"].lower()
    return rec, src, box, view if view in ("axial", "coronal", "sagittal") else None


def load_brain_mri(
    data_dir: Path, policy: ImagePolicy, image_root: Path, source: str, prefix: str, write: bool = True
) -> SourceResult:
    """One of the two brain MRI tumour sets (their metadata.csv has the same columns)."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise SourceError(f"{source} directory not found: {data_dir}")
    result = SourceResult(source)
    built = [r for row in read_metadata(data_dir, REQUIRED, source) if (r := _row_record(row, data_dir, source, prefix, result))]
    jobs = [(str(src), (box.x, box.y, box.w, box.h), rec.findings[0].condition, plane) for rec, src, box, plane in built]
    pending = []
    for (rec, src, _, _), pos in zip(built, _positions(jobs, policy.workers)):
        if isinstance(pos, str):
            result.exclude("unreadable image file", f"{rec.image_id}: {pos}")
            continue
        rec.findings = [Finding(rec.findings[0].condition, pos.position)]
        rec.provenance.update(plane=pos.plane, outline_symmetry=pos.symmetry)
        if pos.interior is not None:  # measured where the plane was estimated
            rec.provenance["interior_symmetry"] = pos.interior
        if pos.withheld:
            rec.provenance["positions_withheld"] = [{"condition": rec.findings[0].condition, "position": None,
                                                     "why": pos.withheld}]
        rec.image_path = relative_path(policy.out_dir / f"{src.stem}.png", image_root)
        pending.append((rec, src))
    write_images(pending, policy, result, write)
    if not result.records:
        raise SourceError(f"{data_dir}: no usable {source} image")
    result.notes["planes"] = _count(r.provenance["plane"] for r in result.records)
    result.notes["positions"] = _count(r.findings[0].position or "none" for r in result.records)
    result.notes["positions_withheld"] = sum("positions_withheld" in r.provenance for r in result.records)
    return result


def _count(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def load_figshare_brain_tumor(data_dir: Path, policy: ImagePolicy, image_root: Path, write: bool = True) -> SourceResult:
    """The figshare brain tumour MRI table -> records, images written by the policy."""
    return load_brain_mri(data_dir, policy, image_root, FIGSHARE, "figshare", write)


def load_brats_sample(data_dir: Path, policy: ImagePolicy, image_root: Path, write: bool = True) -> SourceResult:
    """The BraTS 2015 sample's axial glioma slices -> records, images written by the policy."""
    return load_brain_mri(data_dir, policy, image_root, BRATS, "brats", write)


def load_figshare(context: SourceContext) -> SourceResult:
    """The registry's loader for `figshare` (image policy `curate.images`, folders `curate.figshare`)."""
    return load_figshare_brain_tumor(context.data_dir, ImagePolicy.from_context(context), context.image_root)


def load_brats(context: SourceContext) -> SourceResult:
    """The registry's loader for `brats` (image policy `curate.images`, folders `curate.brats`)."""
    return load_brats_sample(context.data_dir, ImagePolicy.from_context(context), context.image_root)
