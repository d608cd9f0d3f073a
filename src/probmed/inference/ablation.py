"""Image-ablation controls: the image a `blank` or `shuffled` run shows instead of the real one.

Does the model look at the image? Ask it the same questions with the image
replaced and compare (probmed.scoring.compare). Two controls, chosen by the
setting's ``image`` kind (probmed.core.settings):

- ``blank``: a uniform image of the original's size, every pixel the original's
  mean grey (the mean of its 8-bit luminance, rounded to an integer), grey
  images as mode ``L``, all others as ``RGB``. It is written once as a PNG under
  the run's own answer store (``<store>/<model>/control-images/``), so it is
  part of the stage's persistent output and the answer key carries the blank
  image's content hash like any image's.
- ``shuffled``: the real image of another record of a *different* image type.
  Donors come from one seeded permutation over every image of the question
  table (never the shard, so sharding changes nothing): the images sorted by
  (image type, seeded hash of the id) and rotated by the size of the largest
  image type. Whenever no image type holds more than half of the images this is
  a permutation in which every image gets one of another type and every image
  is shown exactly once; otherwise the images that would keep their own type
  take the next image of another type in the rotated order.

The substitution happens before a backend sees anything: an item simply points
at another file, so every backend, the one-decode-per-image path and per-image
batching work unchanged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from probmed.core.errors import ConfigError
from probmed.core.settings import Setting
from probmed.inference.images import open_image
from probmed.infra.io import atomic_path

CONTROL_DIR = "control-images"


def _rank(seed: int, image_id: str) -> str:
    return hashlib.sha256(f"{seed}:shuffle:{image_id}".encode()).hexdigest()


def shuffle_donors(images: pd.DataFrame, seed: int) -> dict[str, str]:
    """image_id -> the image_id whose picture a `shuffled` run shows instead (of another image type).

    `images` has one row per image with ``image_id`` and ``image_type``. A set with
    a single image type has no donor of another type: ConfigError.
    """
    table = images[["image_id", "image_type"]].drop_duplicates("image_id")
    types = table["image_type"].astype(str)
    if types.nunique() < 2:
        only = types.iat[0] if len(types) else "none"
        raise ConfigError(
            f"setting=shuffled needs images of at least two image types; this question set has one ({only})"
        )
    order = sorted(zip(types, table["image_id"].astype(str)), key=lambda t: (t[0], _rank(seed, t[1])))
    n = len(order)
    shift = int(types.value_counts().max())
    donors: dict[str, str] = {}
    for k, (image_type, image_id) in enumerate(order):
        for step in range(n):  # the rotation, or the next image of another type after it
            donor_type, donor = order[(k + shift + step) % n]
            if donor_type != image_type:
                donors[image_id] = donor
                break
    return donors


def mean_grey(path: Path) -> int:
    """The mean of the image's 8-bit luminance, rounded: the blank control's uniform value."""
    from PIL import ImageStat

    grey = open_image(path).convert("L")  # decoded within the pixel budget, as every image a run sees
    return int(round(ImageStat.Stat(grey).mean[0]))


def blank_image(path: Path, out_dir: Path, image_hash: str) -> Path:
    """A uniform image of `path`'s size at its mean grey (PNG, written once under `out_dir`)."""
    from PIL import Image

    out = out_dir / f"blank-{image_hash[:32]}.png"
    if out.is_file():
        return out
    with Image.open(path) as im:
        size, mode = im.size, ("L" if im.mode in ("1", "L", "LA", "I", "I;16", "F") else "RGB")
    value = mean_grey(path)
    blank = Image.new(mode, size, value if mode == "L" else (value, value, value))
    with atomic_path(out) as tmp:  # parallel shards may write the same blank: each renames a whole file
        blank.save(tmp, format="PNG")
    return out


def control_images(
    setting: Setting,
    questions: pd.DataFrame,
    image_paths: Mapping[str, Path],
    resolve: Callable[[pd.DataFrame], dict[str, Path]],
    out_dir: Path,
    seed: int,
    file_hash: Callable[[Path], str],
) -> dict[str, Path]:
    """image_id -> the file the model sees in `setting`: the real image, a blank or another record's image.

    `questions` is the whole question table (donors are drawn from all of it),
    `image_paths` the real images of the shard being asked, `resolve` finds the
    real files of donor images outside the shard.
    """
    if setting.image == "real":
        return dict(image_paths)
    if setting.image == "blank":
        return {img: blank_image(path, out_dir / CONTROL_DIR, file_hash(path)) for img, path in image_paths.items()}
    if setting.image == "shuffled":
        donors = shuffle_donors(questions.drop_duplicates("image_id"), seed)
        wanted = {donors[img] for img in image_paths}
        missing = questions[questions["image_id"].isin(wanted - set(image_paths))].drop_duplicates("image_id")
        donor_paths = {**image_paths, **(resolve(missing) if len(missing) else {})}
        return {img: donor_paths[donors[img]] for img in image_paths}
    raise ConfigError(f"setting {setting.name!r}: unknown image kind {setting.image!r}")
