"""Seeded image-level subsets of a question set."""

from __future__ import annotations

import pandas as pd

from probmed.benchmark.subsets import subset_questions


def _questions(n_images: int) -> pd.DataFrame:
    rows = []
    for i in range(n_images):
        image_type = ("X-ray - Chest", "CT Scan - Brain", "MRI - Spine")[i % 3]
        for polarity in ("gt", "adversarial"):
            rows.append({"qid": f"q{i}{polarity}", "image_id": f"img{i:03d}", "image_type": image_type,
                         "polarity": polarity})
    return pd.DataFrame(rows)


def test_subset_is_seeded_whole_images_and_spread_over_types():
    frame = _questions(30)
    a, b = subset_questions(frame, 6, seed=1), subset_questions(frame, 6, seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert a["image_id"].nunique() == 6 and len(a) == 12
    assert a.groupby("image_type")["image_id"].nunique().tolist() == [2, 2, 2]
    assert list(a["qid"]) == [q for q in frame["qid"] if q in set(a["qid"])]  # original order kept
    assert set(subset_questions(frame, 6, seed=2)["image_id"]) != set(a["image_id"])
    assert len(subset_questions(frame, None, seed=0)) == len(frame)
    assert len(subset_questions(frame, 1000, seed=0)) == len(frame)
