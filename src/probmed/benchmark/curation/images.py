"""Image hygiene: every curated image of a source is written the same way.

In the raw ChestX-ray14 copy, file format and size leak the label (normal
images are mostly 1024 px JPEG re-encodes, abnormal ones PNG, most only 256 px).
Curation decodes each image, converts it to 8-bit grayscale, resizes it with one
resampling filter and writes PNG, so downstream code cannot tell normal from
abnormal by anything but the pixels. Three size policies (``fit``): ``square``
(size x size, the ChestX-ray14 policy), ``long_side`` (aspect kept, the long
side exactly ``size``) and ``pad`` (aspect kept, the long side ``size``,
centred on a black size x size square: every file has the same dimensions).
A source can be stored uncompressed (``compress_level`` 0: deflate's stored
blocks), so that a file's size is a function of its dimensions alone: a
compressed size follows the content, and in figshare the imaging plane, which
differs by tumour type, showed in it. Padded and uncompressed, every file of a
source has one size: in ROCO the size and the dimensions told the modality
(an ultrasound frame is wide, a radiograph tall), 53.5% of its modality pairs
against 22.3% for the text alone.
"""

from __future__ import annotations

import json
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable

from PIL import Image

from probmed.infra.io import atomic_path
from probmed.infra.progress import progress

FILTERS = {
    "lanczos": Image.Resampling.LANCZOS,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "box": Image.Resampling.BOX,
}
MANIFEST = "hygiene.json"
DEFAULT_COMPRESSION = 6  # PIL's; 0 stores the pixels uncompressed (the file size then depends on the dimensions only)


FITS = ("square", "long_side", "pad")


def _long_side(width: int, height: int, size: int) -> tuple[int, int]:
    scale = size / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def fitted_size(width: int, height: int, size: int, fit: str = "square") -> tuple[int, int]:
    """The curated image's (width, height) under a size policy."""
    if fit in ("square", "pad"):
        return size, size
    if fit == "long_side":
        return _long_side(width, height, size)
    raise ValueError(f"image fit {fit!r} not in {FITS}")


def placement(width: int, height: int, size: int, fit: str = "square") -> tuple[float, float, float, float]:
    """Where the original's pixels land in the curated image: (x scale, y scale, left, top); a box (x, y, w, h)
    of the original is at (x * sx + left, y * sy + top, w * sx, h * sy) in it."""
    if fit == "pad":
        w, h = _long_side(width, height, size)
        return w / width, h / height, float((size - w) // 2), float((size - h) // 2)
    w, h = fitted_size(width, height, size, fit)
    return w / width, h / height, 0.0, 0.0


def normalise_image(src: Path, dst: Path, size: int = 256, resample: str = "lanczos", fit: str = "square",
                    compress_level: int = DEFAULT_COMPRESSION) -> None:
    """Decode, grayscale (mode L), resize by the size policy, write PNG atomically (at `compress_level`)."""
    with Image.open(src) as im:
        im.load()
        gray = im.convert("L")
    sx, sy, left, top = placement(gray.width, gray.height, size, fit)
    target = (round(gray.width * sx), round(gray.height * sy))  # the picture's own size in the curated image
    if gray.size != target:
        gray = gray.resize(target, FILTERS[resample])
    if gray.size != fitted_size(*gray.size, size, fit):  # padded: the picture centred on a black square
        canvas = Image.new("L", (size, size), 0)
        canvas.paste(gray, (int(left), int(top)))
        gray = canvas
    with atomic_path(dst) as tmp:
        gray.save(tmp, format="PNG", compress_level=compress_level)


def _job(args: tuple[str, str, int, str, str, int]) -> str | None:
    src, dst, size, resample, fit, compress_level = args
    try:
        normalise_image(Path(src), Path(dst), size, resample, fit, compress_level)
    except Exception as exc:  # unreadable image: reported by the caller, never fatal
        return f"{type(exc).__name__}: {exc}"
    return None


def normalise_many(
    pairs: Iterable[tuple[Path, Path]], out_dir: Path, size: int = 256, resample: str = "lanczos", workers: int = 2,
    fit: str = "square", compress_level: int = DEFAULT_COMPRESSION,
) -> dict[str, str]:
    """Normalise (src, dst) pairs; returns {src: error} for the unreadable ones.

    A destination newer than its source is reused when the output directory's
    manifest says it was made with the same size and filter.
    """
    if resample not in FILTERS:
        raise ValueError(f"resampling filter {resample!r} not in {sorted(FILTERS)}")
    if fit not in FITS:
        raise ValueError(f"image fit {fit!r} not in {FITS}")
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / MANIFEST
    settings = {"size": size, "resample": resample, "mode": "L", "format": "PNG"}
    if fit != "square":  # the square policy's manifest stays as it was, so its images are reused
        settings["fit"] = fit
    if compress_level != DEFAULT_COMPRESSION:  # likewise: only a source stored otherwise says so
        settings["compress_level"] = compress_level
    reuse = manifest.exists() and json.loads(manifest.read_text()) == settings
    todo = [
        (str(s), str(d), size, resample, fit, compress_level)
        for s, d in pairs
        if not (reuse and d.exists() and d.stat().st_mtime >= s.stat().st_mtime)
    ]
    errors: dict[str, str] = {}
    if todo:
        if manifest.exists():
            manifest.unlink()
        chunks = max(1, len(todo) // (workers * 8))
        if workers > 1 and len(todo) > 16:
            with ProcessPoolExecutor(workers) as pool:
                results = list(progress(pool.map(_job, todo, chunksize=chunks), total=len(todo), desc="images", unit="image", leave=False))
        else:
            results = [_job(t) for t in progress(todo, desc="images", unit="image", leave=False)]
        errors = {t[0]: r for t, r in zip(todo, results) if r is not None}
    manifest.write_text(json.dumps(settings))
    return errors
