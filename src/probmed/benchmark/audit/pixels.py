"""Format and source leaks: can simple pixel statistics tell normal from abnormal images?

Within one image type, normal and abnormal images should differ in anatomy,
not in file format, size, grey levels or sharpness. A logistic regression on
simple statistics of the file and its pixels (size, format, grey-level
percentiles, saturation, edge strength, entropy), cross-validated over images,
scores an AUC: near 0.5 nothing but the anatomy separates them; high values
mean the images carry their label in how they were stored (e.g. normal
ChestX-ray14 images are JPEG re-encodes, abnormal ones PNG thumbnails) or in
what they show (dense, white lungs are brighter). The storage statistics alone
(size, format, bytes per pixel, channels) are scored apart: high there is a
format or source leak, whatever the anatomy. The single most separating
statistic is reported beside them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

FEATURES: tuple[str, ...] = (
    "width", "height", "aspect", "bytes_per_pixel", "is_jpeg", "channels", "mean", "std",
    "p01", "p50", "p99", "dark_share", "bright_share", "edge_strength", "entropy",
)
STORAGE = FEATURES[:6]  # how the file is stored, not what it shows
MIN_PER_CLASS = 10


def image_features(path: Path, image_id: str = "") -> list[float]:
    """The FEATURES of one image file, decoded as predict decodes it (RecordError naming a bad image)."""
    from PIL import Image

    from probmed.inference.images import open_image

    im = open_image(path, image_id)  # a bomb, a truncated file or a non-image: exit 2 naming the image
    with Image.open(path) as header:  # its format only: the decoded copy has none
        fmt = header.format or ""
    mode, (w, h) = im.mode, im.size
    grey = np.asarray(im.convert("L"))  # uint8
    g = grey.astype(np.float64)
    hist = np.bincount(grey.ravel(), minlength=256) / g.size
    nz = hist[hist > 0]
    edges = np.abs(np.diff(g, axis=0)).mean() + np.abs(np.diff(g, axis=1)).mean()
    # the uint8 grey levels give the float64 percentiles bit for bit (the same order
    # statistics and interpolation), partitioned at an eighth of the memory traffic
    p01, p50, p99 = (float(v) for v in np.percentile(grey, [1, 50, 99]))
    return [
        float(w), float(h), w / h, path.stat().st_size / (w * h), float(fmt.upper() in ("JPEG", "JPG")),
        float(len(mode)), g.mean(), g.std(), p01, p50, p99,
        float((g <= 5).mean()), float((g >= 250).mean()), float(edges), float(-(nz * np.log2(nz)).sum()),
    ]


def _cv_auc(x: np.ndarray, y: np.ndarray, folds: int, seed: int) -> float:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    k = min(folds, int(np.bincount(y).min()))
    scores = np.zeros(len(y))
    for train, test in StratifiedKFold(k, shuffle=True, random_state=seed).split(x, y):
        model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
        model.fit(x[train], y[train])
        scores[test] = model.predict_proba(x[test])[:, 1]
    return float(roc_auc_score(y, scores))


def _best_feature(x: np.ndarray, y: np.ndarray) -> tuple[str, float]:
    from sklearn.metrics import roc_auc_score

    best = ("", 0.5)
    for j, name in enumerate(FEATURES):
        if np.ptp(x[:, j]) == 0:
            continue
        auc = roc_auc_score(y, x[:, j])
        auc = max(auc, 1 - auc)
        if auc > best[1]:
            best = (name, float(auc))
    return best


def pixel_leak(items: Sequence[tuple[str, str, Path, bool]], folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """Per image type: normal / abnormal counts, cross-validated AUC and the most separating statistic.

    ``items``: (image_id, image_type, image file, abnormal) for every image with a known label.
    """
    out: dict[str, Any] = {}
    by_type: dict[str, list[tuple[str, Path, bool]]] = {}
    for image_id, itype, path, abnormal in items:
        by_type.setdefault(itype, []).append((image_id, path, abnormal))
    for itype, rows in sorted(by_type.items()):
        y = np.array([int(a) for _, _, a in rows])
        entry: dict[str, Any] = {"normal": int((y == 0).sum()), "abnormal": int((y == 1).sum()), "auc": None}
        if min(entry["normal"], entry["abnormal"]) < MIN_PER_CLASS:
            entry["note"] = f"fewer than {MIN_PER_CLASS} images of a class"
            out[itype] = entry
            continue
        x = np.array([image_features(p, image_id) for image_id, p, _ in rows])
        entry["auc"] = _cv_auc(x, y, folds, seed)
        storage = x[:, : len(STORAGE)]
        entry["storage_auc"] = 0.5 if np.ptp(storage, axis=0).max() == 0 else _cv_auc(storage, y, folds, seed)
        entry["top_feature"], entry["top_feature_auc"] = _best_feature(x, y)
        out[itype] = entry
    return out
