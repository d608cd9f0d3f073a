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


def test_padded_and_uncompressed_every_file_has_one_size_and_the_picture_keeps_its_aspect(
        shared_data: Path, tmp_path: Path) -> None:
    """Real ROCO figures of different shapes: stored padded and uncompressed, every file has the same dimensions
    and the same size (in ROCO both told the modality); the picture sits centred, scaled by its long side, on
    black, where placement() says it is."""
    from probmed.benchmark.curation.images import placement

    sources = sorted((shared_data / "roco-extended" / "images").glob("*.jpg"))[:6]
    shapes = set()
    pairs = [(src, tmp_path / "out" / f"{src.stem}.png") for src in sources]
    assert normalise_many(pairs, tmp_path / "out", 256, "lanczos", 1, "pad", compress_level=0) == {}
    for src, dst in pairs:
        with Image.open(src) as original, Image.open(dst) as curated:
            shapes.add(original.size)
            assert (curated.mode, curated.size) == ("L", (256, 256))
            sx, sy, left, top = placement(*original.size, 256, "pad")
            w, h = round(original.width * sx), round(original.height * sy)
            assert max(w, h) == 256 and abs(w / h - original.width / original.height) < 0.02
            pixels = curated.load()
            if left >= 1:  # a bar left and right of the picture: black
                assert pixels[0, 128] == 0 and pixels[255, 128] == 0
            if top >= 1:
                assert pixels[128, 0] == 0 and pixels[128, 255] == 0
    assert len(shapes) > 1 and len({dst.stat().st_size for _, dst in pairs}) == 1
