"""Image hygiene: every curated image is written the same way.

In the raw ChestX-ray14 copy, file format and size leak the label (normal
images are mostly 1024 px JPEG re-encodes, abnormal ones PNG, most only 256 px).
Curation decodes each image, converts it to 8-bit grayscale, resizes it to one
size with one resampling filter and writes PNG, so downstream code cannot tell
normal from abnormal by anything but the pixels.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable

from PIL import Image
from tqdm import tqdm

FILTERS = {
    "lanczos": Image.Resampling.LANCZOS,
    "bilinear": Image.Resampling.BILINEAR,
    "bicubic": Image.Resampling.BICUBIC,
    "box": Image.Resampling.BOX,
}
MANIFEST = "hygiene.json"


def normalise_image(src: Path, dst: Path, size: int = 256, resample: str = "lanczos") -> None:
    """Decode, grayscale (mode L), resize to size x size, write PNG atomically."""
    with Image.open(src) as im:
        im.load()
        gray = im.convert("L")
    if gray.size != (size, size):
        gray = gray.resize((size, size), FILTERS[resample])
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.tmp")
    gray.save(tmp, format="PNG")
    os.replace(tmp, dst)


def _job(args: tuple[str, str, int, str]) -> str | None:
    src, dst, size, resample = args
    try:
        normalise_image(Path(src), Path(dst), size, resample)
    except Exception as exc:  # unreadable image: reported by the caller, never fatal
        return f"{type(exc).__name__}: {exc}"
    return None


def normalise_many(
    pairs: Iterable[tuple[Path, Path]], out_dir: Path, size: int = 256, resample: str = "lanczos", workers: int = 2
) -> dict[str, str]:
    """Normalise (src, dst) pairs; returns {src: error} for the unreadable ones.

    A destination newer than its source is reused when the output directory's
    manifest says it was made with the same size and filter.
    """
    if resample not in FILTERS:
        raise ValueError(f"resampling filter {resample!r} not in {sorted(FILTERS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = out_dir / MANIFEST
    settings = {"size": size, "resample": resample, "mode": "L", "format": "PNG"}
    reuse = manifest.exists() and json.loads(manifest.read_text()) == settings
    todo = [
        (str(s), str(d), size, resample)
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
                results = list(tqdm(pool.map(_job, todo, chunksize=chunks), total=len(todo), desc="images", leave=False))
        else:
            results = [_job(t) for t in tqdm(todo, desc="images", leave=False)]
        errors = {t[0]: r for t, r in zip(todo, results) if r is not None}
    manifest.write_text(json.dumps(settings))
    return errors
