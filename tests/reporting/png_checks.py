"""Shared check that a written figure is a real, non-blank PNG (report tests and the end-to-end pipeline test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image


def assert_nontrivial_png(path: Path) -> None:
    """Exists, is a real PNG of reasonable size, and is not a blank canvas."""
    assert path.is_file() and path.stat().st_size > 5_000, path
    with Image.open(path) as img:
        assert img.format == "PNG" and img.width >= 300 and img.height >= 200
        pixels = np.asarray(img.convert("RGB"))
    assert pixels.std() > 10 and len(np.unique(pixels.reshape(-1, 3), axis=0)) > 20, f"{path} looks blank"
