from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from probmed.benchmark.curation.images import normalise_image, normalise_many


def test_rgba_and_jpeg_become_identical_format(shared_data: Path, tmp_path: Path) -> None:
    rgba = tmp_path / "a.png"
    Image.new("RGBA", (1024, 1024), (10, 20, 30, 255)).save(rgba)
    jpg = sorted((shared_data / "chestxray14" / "images_no_finding").glob("*.jpg"))[0]
    normalise_image(rgba, tmp_path / "o1.png")
    normalise_image(jpg, tmp_path / "o2.png")
    for p in ("o1.png", "o2.png"):
        with Image.open(tmp_path / p) as im:
            assert (im.format, im.mode, im.size) == ("PNG", "L", (256, 256))


def test_unreadable_reported_and_bad_filter(tmp_path: Path) -> None:
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"xx")
    errors = normalise_many([(bad, tmp_path / "out" / "bad.png")], tmp_path / "out", workers=1)
    assert list(errors) == [str(bad)]
    assert not (tmp_path / "out" / "bad.png").exists()
    with pytest.raises(ValueError, match="resampling filter"):
        normalise_many([], tmp_path / "out", resample="nearest-ish")
