"""Bootstrap over images: the unit a benchmark samples is the image, not the question.

Questions of one image are correlated (same picture, same findings), so the
95% interval resamples whole images with replacement. Every metric we bootstrap
is a ratio of per-image sums, so one weight matrix (resample x image: how often
each image was drawn) turns the whole bootstrap into matrix products.
"""

from __future__ import annotations

import numpy as np


def resample_weights(n_images: int, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, n_images)`` counts: row b says how often each image is in resample b."""
    if resamples <= 0 or n_images == 0:
        return np.zeros((0, n_images), dtype=np.float32)
    # float32 is exact here (small integer counts and sums) and halves the memory traffic
    rng = np.random.default_rng(seed)
    weights = np.empty((resamples, n_images), dtype=np.float32)
    # Blocks of rows small enough for the cache: one flat bincount per block is much faster
    # than one bincount over everything (cache misses) or one per row (call overhead).
    rows = max(1, (1 << 18) // n_images)
    for start in range(0, resamples, rows):
        k = min(rows, resamples - start)
        idx = rng.integers(0, n_images, size=(k, n_images)) + (np.arange(k) * n_images)[:, None]
        weights[start : start + k] = np.bincount(idx.ravel(), minlength=k * n_images).reshape(k, n_images)
    return weights


def interval(samples: np.ndarray, level: float = 0.95) -> tuple[float | None, float | None]:
    """Percentile interval of bootstrap samples; (None, None) when there are none."""
    samples = samples[~np.isnan(samples)] if samples.size else samples
    if samples.size == 0:
        return None, None
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(samples, [tail, 100.0 - tail])
    return float(lo), float(hi)
