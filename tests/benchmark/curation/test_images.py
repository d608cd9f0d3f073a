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


def _figshare(shared_data: Path, finding: str, n: int) -> list[Path]:
    import csv

    with (shared_data / "figshare-brain-tumor" / "metadata.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["findings"] == finding]
    return [shared_data / "figshare-brain-tumor" / r["file"] for r in rows[:n]]


def test_an_uncompressed_source_carries_nothing_in_its_file_size(shared_data: Path, tmp_path: Path) -> None:
    """Real figshare slices: compressed, pituitary and glioma PNGs differ in size (the imaging plane shows in it);
    stored uncompressed every 256 px slice has the same size, and the same pixels."""
    sources = _figshare(shared_data, "pituitary tumor", 4) + _figshare(shared_data, "glioma", 4)
    sizes = {}
    for level in (6, 0):
        pairs = [(src, tmp_path / str(level) / f"{src.stem}.png") for src in sources]
        assert normalise_many(pairs, tmp_path / str(level), 256, "lanczos", 1, "long_side", compress_level=level) == {}
        sizes[level] = {dst.stat().st_size for _, dst in pairs}
        if level == 0:
            for src, dst in pairs:
                with Image.open(dst) as a, Image.open(tmp_path / "6" / dst.name) as b:
                    assert a.tobytes() == b.tobytes()
    assert len(sizes[6]) > 1 and len(sizes[0]) == 1
