"""Shortcuts beyond the text: can how an image is stored, or its simplest pixel statistic, answer its questions?

The blind ceiling (audit.blind_ceiling) asks what the question text gives away. A
harness, a data loader or a model can also see the file: its size, format, mode
and dimensions, and the source they betray (VQA-RAD is all JPEG, MedICaT all RGB
PNG; compressed figshare PNGs were larger for pituitary tumours, whose slices are
mostly sagittal, than for gliomas). Per category, on the scorer's unit, fixed
answer tables keyed on the text and one file property each are searched and
cross-fitted exactly as the blind ceiling's are (:data:`PROPERTIES`):

* ``size``: the file's size quintile within its source (a stored-uncompressed
  source has one size per dimensions, so its quintiles carry nothing);
* ``storage``: format, mode and dimensions;
* ``grey``: the quintile of the mean grey level within the source and image type
  (a pixel statistic: it shows what the image shows, e.g. the imaging plane).

Each is reported beside exact random, the text-only table and the table keyed
on the source and the text (``source``): the size quintile is taken within the
source, so its table knows the source too, and a single-modality source (every
ChestX-ray14 image an X-ray) names the modality by itself. What the file size
gives away is its margin over the better of those two
(``audit_file_size_margin_<category>``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probmed.core.categories import CATEGORIES

PROPERTIES = ("size", "storage", "grey")
QUINTILES = 5


def file_properties(questions: pd.DataFrame, image_root: Path) -> pd.DataFrame:
    """Per image of the set with a file on disk: size in bytes, format, mode, width, height, mean grey level."""
    from PIL import Image

    from probmed.core.errors import MissingFileError
    from probmed.inference.images import open_image, resolve_image
    from probmed.infra.progress import progress

    first = questions.drop_duplicates("image_id")
    rows = []
    for image_id, path in progress(list(zip(first["image_id"].astype(str), first["image_path"])), desc="file properties",
                                   unit="image"):
        if not path:
            continue
        try:
            file = resolve_image(image_root, path, image_id)
        except MissingFileError:
            continue  # not on disk: not audited
        with Image.open(file) as header:
            fmt, mode, (width, height) = header.format or "", header.mode, header.size
        grey = float(np.asarray(open_image(file, image_id).convert("L"), dtype=np.float64).mean())
        rows.append({"image_id": image_id, "bytes": file.stat().st_size, "format": fmt, "mode": mode,
                     "width": width, "height": height, "grey": grey})
    return pd.DataFrame(rows, columns=["image_id", "bytes", "format", "mode", "width", "height", "grey"])


def _quintile(values: pd.Series, groups: pd.Series) -> pd.Series:
    """Each value's quintile within its group (ties share one; a group of one value is quintile 0)."""
    ranks = values.groupby(groups).rank(method="dense", pct=True)
    return np.minimum((ranks * QUINTILES).astype(int), QUINTILES - 1).astype(str)


def property_keys(questions: pd.DataFrame, props: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per question, the file property a table may key on besides the text (:data:`PROPERTIES`); images
    without a file share one key ("?")."""
    per_image = props.set_index("image_id")
    source = questions.drop_duplicates("image_id").set_index("image_id")
    joined = per_image.join(source[["source", "image_type"]] if "source" in source else source[["image_type"]].assign(source=""))
    size = joined["source"].astype(str) + "\x1fsize" + _quintile(joined["bytes"], joined["source"])
    storage = joined["format"] + "\x1f" + joined["mode"] + "\x1f" + joined["width"].astype(str) + "x" + joined["height"].astype(str)
    grey_group = joined["source"].astype(str) + "\x1f" + joined["image_type"].astype(str)
    grey = grey_group + "\x1fgrey" + _quintile(joined["grey"], grey_group)
    ids = questions["image_id"].astype(str)
    return {name: ids.map(values).fillna("?").to_numpy(dtype=object)
            for name, values in (("source", joined["source"].astype(str)), ("size", size), ("storage", storage),
                                 ("grey", grey))}


def file_shortcuts(questions: pd.DataFrame, image_root: Path, folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """Per category on the scorer's unit: exact random, the text-only table, and a table keyed on the text and
    each file property, cross-fitted over image folds (strict %)."""
    from probmed.benchmark.audit.blind_ceiling import learner_scores, paper_unit, table_key, unit_rows

    props = file_properties(questions, image_root)
    if props.empty:
        return {"images": 0, "by_category": {}}
    keys = property_keys(questions, props)
    out: dict[str, Any] = {"images": int(len(props)), "properties": list(PROPERTIES), "by_category": {}}
    for category in CATEGORIES:
        unit = paper_unit(category)
        data = unit_rows(questions, category, unit, folds, prefixes=keys)
        if data is None:
            continue
        scores = learner_scores(data, folds, seed)
        sizes = np.bincount(data.unit, minlength=data.n_units)
        pct = {name: float(100.0 * v.mean()) for name, v in scores.items()}
        best = {p: max(v for name, v in pct.items() if table_key(name) == p)
                for p in ("text", "source", *PROPERTIES)}  # every support and both fits
        out["by_category"][category] = {
            "unit": unit, "units": data.n_units, "random": float(100.0 * (0.5 ** sizes.astype(float)).mean()), **best}
    return out
