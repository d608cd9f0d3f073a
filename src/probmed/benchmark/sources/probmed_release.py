"""The original (gated) ProbMed release: its question file imported as-is, so a
user who holds it can run and score it directly. Validation and conversion are
probmed.core.release_format' (strict; errors name record, image and field); an
image path that would leave the image root (absolute, ``..``) is refused."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from probmed.benchmark.contrast import assign_contrast_pairs
from probmed.core.records import check_image_paths
from probmed.core.release_format import read_question_file


def import_release(question_file: Path, image_root_prefix: str = "", seed: int = 0) -> pd.DataFrame:
    """The release's test.json as a question table; image paths get an optional prefix
    (the directory the release's images live in, relative to the image root). Its contrast pairs
    (benchmark.contrast) are drawn with `seed`, as for every question table."""
    frame = read_question_file(question_file)
    if image_root_prefix:
        prefix = image_root_prefix.rstrip("/") + "/"
        frame["image_path"] = [prefix + p if p else p for p in frame["image_path"]]
        check_image_paths(frame, f"{question_file} (image paths with prefix {image_root_prefix!r})")
    return assign_contrast_pairs(frame, seed)
