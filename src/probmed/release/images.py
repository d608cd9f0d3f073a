"""The release's images: each image's file bytes once, under a name that is its image id.

The bytes are the curated file's own (no re-encoding: a released image decodes
to exactly the pixels `probmed predict` shows a model). Paths are confined to
the image root as everywhere else (probmed.inference.images.resolve_image).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from probmed.core.errors import RecordError
from probmed.inference.images import resolve_image

IMAGES_DIR = "images"
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def image_sources(questions: pd.DataFrame, image_root: str | Path) -> dict[str, Path]:
    """image_id -> the image file, in question order; RecordError naming an image with two paths or an unsafe id."""
    out: dict[str, Path] = {}
    seen: dict[str, str] = {}
    for image_id, rel in zip(questions["image_id"].astype(str), questions["image_path"]):
        if image_id in seen:
            if seen[image_id] != rel:
                raise RecordError(f"questions: image {image_id}: field 'image_path' = {rel!r} differs from {seen[image_id]!r}")
            continue
        if not _SAFE_ID.match(image_id):
            raise RecordError(f"questions: image {image_id!r}: field 'image_id' is not a safe file name ([A-Za-z0-9._-])")
        seen[image_id] = rel
        out[image_id] = resolve_image(image_root, rel, image_id)
    return out


def release_name(image_id: str, source: Path) -> str:
    """The file name of an image in the release: its id with the source file's suffix."""
    return f"{image_id}{source.suffix.lower()}"


def copy_images(sources: dict[str, Path], folder: Path) -> dict[str, str]:
    """Every image's bytes into ``folder/images/``; image_id -> its path relative to ``folder``."""
    (folder / IMAGES_DIR).mkdir(parents=True, exist_ok=True)
    out = {}
    for image_id, source in sources.items():
        rel = f"{IMAGES_DIR}/{release_name(image_id, source)}"
        (folder / rel).write_bytes(source.read_bytes())
        out[image_id] = rel
    return out
