"""Seeded image-level subsets of a question set."""

from __future__ import annotations

import pandas as pd

from probmed.benchmark.subsets import drop_training_images, subset_counts, subset_questions, subset_shortfalls


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


def _probing_set(n_images: int = 120, n_types: int = 10) -> pd.DataFrame:
    """Every image a modality pair; every 10th an abnormality question; every 15th a position pair (with its
    condition pair); consecutive image pairs share a contrast pair on modality."""
    rows = []

    def add(i: int, category: str, polarity: str, key: str, contrast: str | None = None) -> None:
        rows.append({"qid": f"q{i}-{key}-{polarity}", "image_id": f"img{i:03d}", "image_type": f"type{i % n_types}",
                     "category": category, "polarity": polarity, "pair_id": f"img{i:03d}:{key}", "contrast_id": contrast})

    for i in range(n_images):
        for polarity in ("gt", "adversarial"):
            add(i, "modality", polarity, "modality", f"c{i // 2}" if polarity == "gt" and i % 4 < 2 else None)
        if i % 10 == 0:
            add(i, "abnormality", "single", "abnormality")
        if i % 15 == 0:
            for polarity in ("gt", "adversarial"):
                add(i, "condition", polarity, "entity_0")
                add(i, "position", polarity, "grounding_0")
    return pd.DataFrame(rows)


def test_the_subset_grows_until_every_category_has_its_minimum_units_and_types():
    frame = _probing_set()
    a = subset_questions(frame, 5, seed=3, min_units_per_category=6, min_image_types=8)
    pd.testing.assert_frame_equal(a, subset_questions(frame, 5, seed=3, min_units_per_category=6, min_image_types=8))
    counts = subset_counts(a)
    assert counts["units"]["abnormality"] >= 6 and counts["units"]["position"] >= 6 and counts["units"]["condition"] >= 6
    assert counts["image_types"] >= 8 and counts["contrast_pairs"]["modality"] >= 6
    assert subset_shortfalls(a, 6, 8) == []
    assert counts["images"] < 120  # only what the minimums need
    # without minimums: exactly max_images, as before
    assert subset_questions(frame, 5, seed=3)["image_id"].nunique() == 5


def test_a_pool_that_cannot_fill_a_category_is_taken_whole_for_it_and_named():
    frame = _probing_set(n_images=60)  # 4 condition and 4 position units in all
    subset = subset_questions(frame, 5, seed=0, min_units_per_category=6)
    assert subset_counts(subset)["units"]["position"] == 4
    assert subset_shortfalls(subset, 6, 0) == ["condition: 4 scoring units (minimum 6)", "position: 4 scoring units (minimum 6)"]


def test_the_subset_respects_the_excluded_training_images():
    frame = _probing_set()
    trained = [f"img{i:03d}" for i in range(0, 120, 3)]
    splits = pd.DataFrame({"image_id": trained, "split": "train"})
    subset = subset_questions(drop_training_images(frame, splits), 5, seed=0, min_units_per_category=3, min_image_types=8)
    assert not set(subset["image_id"]) & set(trained) and subset_shortfalls(subset, 3, 8) == []
