"""The image-type mix of a question set: seeded sampling of images per image type under caps.

Why: one source can dominate a benchmark (chest X-rays were 84% of the images before the new
sources), and a type that holds most of the images lets a model answer "Is this an X-ray?" from the
prior. Caps (``datasets.question_sets.<set>.image_types``):

* ``max_share``: no image type holds more than this share of the set's images;
* ``max_images``: at most this many images of any one type (null: no such cap).

Both are :class:`probmed.core.params_schema.ImageTypeCaps` fields, with their defaults.

Every type keeps at least one image, so every type with images is represented. The largest
per-type count ``c`` that satisfies both caps is found (types with fewer images keep all of
theirs), and within a type images are ordered by a seeded hash of their id, so adding images to one
type never changes which images another keeps. Records, not questions, are sampled: generation then
balances its answers over the set it will be.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any, Mapping, Sequence

from probmed.core.errors import ConfigError
from probmed.core.params_schema import ImageTypeCaps
from probmed.core.records import ImageRecord
from probmed.core.vocab import image_type


def capped_counts(counts: Mapping[str, int], caps: ImageTypeCaps) -> dict[str, int]:
    """Images kept per type: min(n, c, max_images) with the largest c meeting max_share."""
    if not counts:
        return {}
    limit = caps.max_images or max(counts.values())

    def kept(c: int) -> dict[str, int]:
        return {t: min(n, c, limit) for t, n in counts.items()}

    def ok(c: int) -> bool:
        k = kept(c)
        return max(k.values()) <= caps.max_share * sum(k.values()) + 1e-9

    if len(counts) == 1 or not ok(1):
        if len(counts) == 1:
            return kept(limit)
        raise ConfigError(
            f"image_types.max_share = {caps.max_share} cannot hold with {len(counts)} image types "
            f"(each type keeps at least one image): raise it to at least {1 / len(counts):.3f}"
        )
    lo, hi = 1, max(counts.values())
    while lo < hi:  # the largest c with ok(c); ok is monotone decreasing in c
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return kept(lo)


def _rank(seed: int, image_id: str) -> str:
    return hashlib.sha256(f"mix:{seed}:{image_id}".encode()).hexdigest()


def sample_records(records: Sequence[ImageRecord], caps: ImageTypeCaps, seed: int) -> tuple[list[ImageRecord], dict[str, Any]]:
    """(kept records in their original order, report with counts per type before and after)."""
    with_image = [r for r in records if r.image_path]
    by_type: dict[str, list[ImageRecord]] = {}
    for rec in with_image:
        by_type.setdefault(image_type(rec.modality, rec.organ), []).append(rec)
    target = capped_counts({t: len(v) for t, v in by_type.items()}, caps)
    keep: set[str] = set()
    for t, recs in by_type.items():
        keep.update(r.image_id for r in sorted(recs, key=lambda r: _rank(seed, r.image_id))[: target[t]])
    kept = [r for r in records if not r.image_path or r.image_id in keep]
    before = Counter({t: len(v) for t, v in by_type.items()})
    report = {
        "caps": {"max_share": float(caps.max_share), "max_images": caps.max_images},
        "seed": seed,
        "images_before": dict(sorted(before.items())),
        "images_after": dict(sorted(target.items())),
        "largest_share_after": round(max(target.values()) / sum(target.values()), 4) if target else None,
    }
    return kept, report
