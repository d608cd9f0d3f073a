"""The images a run asks about: found inside the image root, decoded before any backend sees them.

A question's ``image_path`` is relative to the image root. :func:`resolve_image`
follows symlinks and refuses a file that ends up outside the (real) image root,
so no question can make probmed read, or upload, a file it was not meant to.
:class:`DecodedImages` decodes every image right before a backend first sees
it: a text file with a ``.png`` name stops the run there, naming the image
(answers to earlier images are on disk). Backends that upload images send :func:`png_bytes` (the decoded pixels
re-encoded), never the file's raw bytes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Iterable

from probmed.core.errors import MissingFileError, RecordError
from probmed.core.records import image_path_problem

MAX_IMAGE_PIXELS = 40_000_000  # per image: 12 x the largest image of the pinned data (VQA-RAD, 2321 x 1384)


def resolve_image(image_root: str | Path, rel: object, image_id: str) -> Path:
    """The real path of an image inside the image root; RecordError / MissingFileError naming the image."""
    if rel is None or (isinstance(rel, float) and rel != rel) or not str(rel):
        raise RecordError(f"questions: image {image_id}: field 'image_path' is empty")
    why = image_path_problem(rel)
    if why:
        raise RecordError(f"questions: image {image_id}: field 'image_path' = {rel!r} {why}")
    root = Path(image_root).resolve()
    path = root / str(rel)
    real = path.resolve()
    if not real.is_relative_to(root):
        raise RecordError(
            f"questions: image {image_id}: field 'image_path' = {rel!r} leads (through a symlink) to {real}, "
            f"outside the image root {root}; images are read only from inside the image root"
        )
    if not real.is_file():
        raise MissingFileError(f"image {image_id}: file {path} not found (image root {image_root})")
    return real


def open_image(path: str | Path, image_id: str = ""):
    """The decoded image (PIL), fully loaded; RecordError naming the image if it does not decode.

    An image over :data:`MAX_IMAGE_PIXELS` is refused from its header, before it is decoded: a small PNG
    can declare 12000 x 12000 pixels (under PIL's own bomb limit) and take 1.3 GB to decode, for every
    backend alike (API uploads are shrunk only after decoding, local models decode in full).
    """
    from PIL import Image

    who = f"image {image_id}: " if image_id else ""
    try:
        with Image.open(path) as im:
            width, height = im.size
            if width * height <= MAX_IMAGE_PIXELS:
                im.load()
                return im.copy()
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise RecordError(f"{who}{path} is not a decodable image ({type(exc).__name__}: {exc})") from None
    raise RecordError(f"{who}{path} is {width} x {height} pixels, over the budget of {MAX_IMAGE_PIXELS:,} pixels "
                      "per image (refused before decoding it): downscale it")


class DecodedImages:
    """The images of a run known to decode: each is decoded once, right before a backend first sees it
    (a fully cached re-run decodes nothing)."""

    def __init__(self) -> None:
        self._ok: set[Path] = set()

    def check(self, images: Iterable[tuple[str, Path | None]]) -> None:
        """Decode every (image_id, path) not checked yet; RecordError naming the first that does not decode."""
        for image_id, path in images:
            if path is not None and path not in self._ok:
                open_image(path, image_id).close()
                self._ok.add(path)


def png_bytes(path: str | Path, max_side: int | None = None, image_id: str = "") -> bytes:
    """The decoded image re-encoded as PNG (lossless), shrunk to `max_side` if larger."""
    from PIL import Image

    im = open_image(path, image_id)
    if im.mode not in ("L", "RGB", "RGBA"):
        im = im.convert("RGB")
    if max_side and max(im.size) > int(max_side):
        im.thumbnail((int(max_side), int(max_side)), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()
