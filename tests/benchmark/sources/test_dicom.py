from __future__ import annotations

from pathlib import Path

import pytest

from probmed.benchmark.sources.dicom import load_dicom_dir, read_dicom, to_uint8
from probmed.core.errors import SourceError


def test_real_dicom_samples(shared_data: Path) -> None:
    pixels, modality, organ = read_dicom(shared_data / "pydicom-samples" / "CT_small.dcm")
    assert (pixels.shape, modality, organ) == ((128, 128), "ct", "unknown")  # no BodyPartExamined: never guessed
    pixels, modality, _ = read_dicom(shared_data / "pydicom-samples" / "MR_small.dcm")
    assert (pixels.shape, modality) == ((64, 64), "mri")
    img = to_uint8(pixels)
    assert img.dtype.name == "uint8" and img.min() == 0 and img.max() == 255


def test_unreadable_dicom_is_excluded(shared_data: Path, tmp_path: Path) -> None:
    (tmp_path / "CT_small.dcm").write_bytes((shared_data / "pydicom-samples" / "CT_small.dcm").read_bytes())
    (tmp_path / "broken.dcm").write_bytes(b"nonsense")
    res = load_dicom_dir(tmp_path, tmp_path)
    assert [r.image_id for r in res.records] == ["dicom-CT_small"]
    assert list(res.excluded) == ["unreadable DICOM"] and res.excluded["unreadable DICOM"][0].startswith("broken.dcm")
    with pytest.raises(SourceError, match="no .dcm file"):
        load_dicom_dir(tmp_path / "empty", tmp_path)
