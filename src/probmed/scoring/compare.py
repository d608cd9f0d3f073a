"""Paired comparisons of two runs on the same questions, and visual reliance.

Every difference the project reports (cot - vanilla, described - vanilla,
adapted - base, model A - model B, real image - image control) is a difference
between two runs over the *same* images. Their errors are correlated (a hard
image is hard for both), so the interval of the difference comes from a paired
bootstrap: resample images once, score both runs on each resample, take the
percentile interval of the differences. It is narrower than two independent
intervals would suggest, and honest: an interval that includes 0 says the data
cannot tell the two runs apart.

The unit is the image, as in the scorer's own bootstrap
(probmed.scoring.bootstrap): a run is reduced to per-image sums per category
(:func:`per_image_table`, written by ``probmed score`` as ``per_image.parquet``),

- ``strict_right`` / ``strict_units``: right and scored units of the category's
  strict accuracy (pairs, or all-or-nothing images for per-image categories;
  single questions for a category of singles);
- ``averaged_right`` / ``averaged_questions``: right and asked questions of the
  category's pairs (the averaged accuracy),

and every accuracy of a resample is a ratio of weighted sums, one matrix
product for all of them. ``overall`` pools the paired categories' units and
questions (the scorer's ``overall.accuracy_adv_pairs`` / ``averaged_accuracy``).

Visual reliance (:func:`visual_reliance`) is the real-image run minus each image
control (``blank``, ``shuffled``); a model whose strict-accuracy drop has an
interval that includes 0 for every control in a category is marked as
answering *without looking* in that category.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES, category
from probmed.core.errors import RecordError
from probmed.core.params_schema import Score
from probmed.scoring.bootstrap import interval, resample_weights
from probmed.scoring.metrics import Prepared

OVERALL = "overall"
METRICS: tuple[str, ...] = ("strict", "averaged")  # accuracy with adversarial pairs, averaged accuracy
PER_IMAGE_COLUMNS: tuple[str, ...] = (
    "image_id", "image_type", "category", "strict_right", "strict_units", "averaged_right", "averaged_questions",
)
DIFF_COLUMNS: tuple[str, ...] = (
    "category", "metric", "a", "b", "diff", "ci_low", "ci_high", "n_images", "n", "resamples", "ci_level", "paired",
)


def per_image_table(p: Prepared) -> pd.DataFrame:
    """One row per (image, category) with the sums every accuracy of the category is a ratio of."""
    n_img, n_cat = p.n_images, len(CATEGORIES)
    paired = p.unit >= 0
    unit = p.unit[paired]
    n_q = np.bincount(unit, minlength=p.n_units)
    n_ok = np.bincount(unit, weights=p.correct[paired], minlength=p.n_units)
    unit_cat = np.zeros(p.n_units, dtype=np.int64)
    unit_cat[unit] = p.cat[paired]
    present = n_q > 0
    cell_unit = (p.unit_img * n_cat + unit_cat)[present]
    size = n_img * n_cat
    units = np.bincount(cell_unit, minlength=size)
    units_ok = np.bincount(cell_unit, weights=(n_ok == n_q)[present], minlength=size)
    cell = p.img * n_cat + p.cat
    questions = np.bincount(cell, minlength=size)
    pair_q = np.bincount(cell[paired], minlength=size)
    pair_ok = np.bincount(cell[paired], weights=p.correct[paired], minlength=size)
    single = np.bincount(cell[~paired], minlength=size)
    single_ok = np.bincount(cell[~paired], weights=p.correct[~paired], minlength=size)
    is_paired_cat = np.tile([category(c).paired for c in CATEGORIES], n_img)
    strict_right = np.where(is_paired_cat, units_ok, single_ok)
    strict_units = np.where(is_paired_cat, units, single)
    keep = np.flatnonzero(questions)
    image_ids = np.empty(n_img, dtype=object)
    image_types = np.empty(n_img, dtype=object)
    image_ids[p.img] = p.frame["image_id"].astype(str).to_numpy()
    image_types[p.img] = p.frame["image_type"].astype(str).to_numpy()
    return pd.DataFrame({
        "image_id": image_ids[keep // n_cat],
        "image_type": image_types[keep // n_cat],
        "category": np.array(CATEGORIES, dtype=object)[keep % n_cat],
        "strict_right": strict_right[keep].astype(np.int64),
        "strict_units": strict_units[keep].astype(np.int64),
        "averaged_right": pair_ok[keep].astype(np.int64),
        "averaged_questions": pair_q[keep].astype(np.int64),
    }, columns=list(PER_IMAGE_COLUMNS))


@dataclass(frozen=True)
class Bootstrap:
    """How differences are resampled (the ``score:`` section's bootstrap_resamples, seed, ci_level)."""

    resamples: int = Score().bootstrap_resamples
    seed: int = Score().seed
    level: float = Score().ci_level

    @classmethod
    def of(cls, score: Score) -> "Bootstrap":
        """The resampling the params' ``score`` section sets."""
        return cls(score.bootstrap_resamples, score.seed, score.ci_level)


def _aligned(a: pd.DataFrame, b: pd.DataFrame, image_type: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables on the same (image, category) rows; runs scored on different questions are refused."""
    if image_type is not None:
        a, b = a[a["image_type"] == image_type], b[b["image_type"] == image_type]
    key = ["image_id", "category"]
    a = a.sort_values(key).reset_index(drop=True)
    b = b.sort_values(key).reset_index(drop=True)
    same_rows = len(a) == len(b) and (a[key].to_numpy() == b[key].to_numpy()).all()
    dens = ["strict_units", "averaged_questions"]
    if not same_rows or not (a[dens].to_numpy() == b[dens].to_numpy()).all():
        raise RecordError("paired comparison: the two runs were not scored on the same questions")
    return a, b


def _sums(table: pd.DataFrame, images: pd.Index, cats: tuple[str, ...], metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-image (right, units) of the given categories, in `images` order."""
    rows = table[table["category"].isin(cats)]
    right, units = ("strict_right", "strict_units") if metric == "strict" else ("averaged_right", "averaged_questions")
    where = images.get_indexer(rows["image_id"])
    num = np.bincount(where, weights=rows[right].to_numpy(float), minlength=len(images))
    den = np.bincount(where, weights=rows[units].to_numpy(float), minlength=len(images))
    return num, den


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 100.0 * num / np.where(den > 0, den, 1), np.nan)


def _groups(table: pd.DataFrame) -> list[tuple[str, tuple[str, ...]]]:
    """(name, categories) pooled for each reported row: every category present, then ``overall``."""
    return [(c, (c,)) for c in CATEGORIES if (table["category"] == c).any()] + [(OVERALL, PAIRED_CATEGORIES)]


ACCURACY_COLUMNS: tuple[str, ...] = ("category", "metric", "accuracy", "ci_low", "ci_high", "n_images", "n")


def accuracies(table: pd.DataFrame, boot: Bootstrap = Bootstrap(), image_type: str | None = None) -> pd.DataFrame:
    """One run's strict and averaged accuracy per category (and ``overall``) with a bootstrap interval over
    images, from its per-image sums; the same resampling as the scorer's own interval."""
    if image_type is not None:
        table = table[table["image_type"] == image_type]
    images = pd.Index(sorted(set(table["image_id"])))
    weights = resample_weights(len(images), boot.resamples, boot.seed).astype(np.float64)
    rows = []
    for name, cats in _groups(table):
        for metric in METRICS:
            num, den = _sums(table, images, cats, metric)
            if den.sum() == 0:
                continue
            lo, hi = interval(_ratio(weights @ num, weights @ den), boot.level) if len(weights) else (None, None)
            rows.append({"category": name, "metric": metric, "accuracy": float(_ratio(num.sum(), den.sum())),
                         "ci_low": lo, "ci_high": hi, "n_images": int((den > 0).sum()), "n": int(den.sum())})
    return pd.DataFrame(rows, columns=list(ACCURACY_COLUMNS))


def paired_differences(
    a: pd.DataFrame, b: pd.DataFrame, boot: Bootstrap = Bootstrap(), paired: bool = True,
    image_type: str | None = None,
) -> pd.DataFrame:
    """The differences a - b per category (and ``overall``) for strict and averaged accuracy, with a bootstrap interval.

    `a` and `b` are per-image tables (:func:`per_image_table`) of two runs on the
    same questions. Paired (the default): one resample of images scores both runs.
    ``paired=False`` resamples each run independently (what two separate intervals
    assume; kept for comparison). Accuracies in percent, differences in points;
    ``n_images`` / ``n`` are the images and units (strict) or questions (averaged) behind them.
    """
    a, b = _aligned(a, b, image_type)
    images = pd.Index(sorted(set(a["image_id"])))
    w_a = resample_weights(len(images), boot.resamples, boot.seed).astype(np.float64)
    w_b = w_a if paired else resample_weights(len(images), boot.resamples, boot.seed + 1).astype(np.float64)
    rows = []
    for name, cats in _groups(a):
        for metric in METRICS:
            num_a, den = _sums(a, images, cats, metric)
            num_b, _ = _sums(b, images, cats, metric)
            if den.sum() == 0:
                continue
            acc_a, acc_b = _ratio(num_a.sum(), den.sum()), _ratio(num_b.sum(), den.sum())
            lo = hi = None
            if len(w_a):
                samples = _ratio(w_a @ num_a, w_a @ den) - _ratio(w_b @ num_b, w_b @ den)
                lo, hi = interval(samples, boot.level)
            rows.append({
                "category": name, "metric": metric, "a": float(acc_a), "b": float(acc_b),
                "diff": float(acc_a - acc_b), "ci_low": lo, "ci_high": hi,
                "n_images": int((den > 0).sum()), "n": int(den.sum()),
                "resamples": boot.resamples, "ci_level": boot.level, "paired": paired,
            })
    return pd.DataFrame(rows, columns=list(DIFF_COLUMNS))


def includes_zero(low: float | None, high: float | None) -> bool | None:
    """Whether an interval includes 0 (None when there is no interval)."""
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return None
    return bool(low <= 0.0 <= high)


RELIANCE_COLUMNS: tuple[str, ...] = (
    "category", "control", "metric", "real", "with_control", "drop", "ci_low", "ci_high", "n_images", "n",
)


def visual_reliance(real: pd.DataFrame, controls: Mapping[str, pd.DataFrame], boot: Bootstrap = Bootstrap()
                    ) -> tuple[pd.DataFrame, dict[str, bool | None]]:
    """(drops, without_looking): accuracy with the real image minus with each control, per category.

    `real` and each control are per-image tables of one model on the same
    questions. ``without_looking[category]`` is True when the strict-accuracy drop's
    interval includes 0 for every control (the data cannot show that the model
    used the image), False when some control's drop is distinguishable from 0,
    None without an interval.
    """
    rows = []
    for control, table in controls.items():
        diff = paired_differences(real, table, boot)
        for r in diff.itertuples(index=False):
            rows.append({"category": r.category, "control": control, "metric": r.metric, "real": r.a,
                         "with_control": r.b, "drop": r.diff, "ci_low": r.ci_low, "ci_high": r.ci_high,
                         "n_images": r.n_images, "n": r.n})
    drops = pd.DataFrame(rows, columns=list(RELIANCE_COLUMNS))
    return drops, without_looking(drops)


def without_looking(drops: pd.DataFrame) -> dict[str, bool | None]:
    """Per category: True when every control's strict drop has an interval that includes 0, False when one
    is distinguishable from 0, None without an interval (one model's rows of :func:`visual_reliance`)."""
    flags: dict[str, bool | None] = {}
    strict = drops[drops["metric"] == "strict"]
    for name, part in strict.groupby("category", sort=False):
        zero = [includes_zero(lo, hi) for lo, hi in zip(part["ci_low"], part["ci_high"])]
        flags[str(name)] = None if any(z is None for z in zero) else all(zero)
    return flags
