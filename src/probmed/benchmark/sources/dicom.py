"""DICOM -> ImageRecord + pixels: modality from the header (Modality tag),
organ from BodyPartExamined when present (otherwise ``unknown``, never guessed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pydicom

from probmed.benchmark.sources.base import SourceContext, SourceResult, relative_path
from probmed.core.errors import SourceError
from probmed.core.params_schema import CurateDicom
from probmed.core.records import ImageRecord

DICOM_MODALITY = {"CT": "ct", "MR": "mri", "CR": "x-ray", "DX": "x-ray", "RF": "x-ray", "MG": "x-ray", "XA": "x-ray"}
BODY_PART = {"CHEST": "chest", "THORAX": "chest", "LUNG": "chest", "HEAD": "brain", "BRAIN": "brain", "SKULL": "brain",
             "ABDOMEN": "abdomen", "PELVIS": "abdomen", "SPINE": "spine", "CSPINE": "spine", "TSPINE": "spine", "LSPINE": "spine"}


def read_dicom(path: Path) -> tuple[np.ndarray, str, str]:
    """(pixels as float32, modality, organ) of one DICOM file."""
    try:
        ds = pydicom.dcmread(path)
        pixels = ds.pixel_array.astype(np.float32)
    except Exception as exc:
        raise SourceError(f"{path}: unreadable DICOM ({type(exc).__name__}: {exc})") from None
    modality = DICOM_MODALITY.get(str(getattr(ds, "Modality", "")).upper(), "other" if getattr(ds, "Modality", "") else "unknown")
    part = str(getattr(ds, "BodyPartExamined", "")).upper().replace(" ", "")
    organ = BODY_PART.get(part, "other" if part else "unknown")
    return pixels, modality, organ


def to_uint8(pixels: np.ndarray) -> np.ndarray:
    """Min-max window to 8 bit, for writing a PNG a vision model can read."""
    lo, hi = float(pixels.min()), float(pixels.max())
    scale = 255.0 / (hi - lo) if hi > lo else 0.0
    return ((pixels - lo) * scale).astype(np.uint8)


def load_dicom_dir(data_dir: Path, image_root: Path, licence: str | None = None) -> SourceResult:
    """Every readable DICOM file of a folder -> a record, all under the folder's licence."""
    result = SourceResult("DICOM")
    files = sorted(Path(data_dir).glob("*.dcm"))
    if not files:
        raise SourceError(f"{data_dir}: no .dcm file")
    for f in files:
        try:
            pixels, modality, organ = read_dicom(f)
        except SourceError as exc:
            result.exclude("unreadable DICOM", f"{f.name}: {exc}")
            continue
        result.records.append(
            ImageRecord(image_id=f"dicom-{f.stem}", source="DICOM", modality=modality, organ=organ,
                        image_path=relative_path(f, image_root), provenance={"origin": f.name, "shape": list(pixels.shape)},
                        licence=licence)
        )
    return result


def load(context: SourceContext) -> SourceResult:
    """The registry's loader: section `curate.dicom` (`licence`: the folder's licence, e.g. MIT for the pydicom samples)."""
    return load_dicom_dir(context.data_dir, context.image_root, context.options_as(CurateDicom).licence)
