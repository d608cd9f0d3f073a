"""Seeded image-level subsets of a question set."""

from __future__ import annotations

import pandas as pd
import pytest

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


def _modality_design(kinds: dict[tuple[str, str], int]) -> pd.DataFrame:
    """Modality pairs (truth, adversary) x count; the image type names the truth."""
    rows, i = [], 0
    for (truth, adversary), n in kinds.items():
        for _ in range(n):
            for polarity, value in (("gt", truth), ("adversarial", adversary)):
                rows.append({"qid": f"q{i}-{polarity}", "image_id": f"img{i:03d}", "image_type": f"{truth} - Chest",
                             "category": "modality", "polarity": polarity, "pair_id": f"img{i:03d}:modality",
                             "entity": value, "question": f"Is this a {value} image?",
                             "answer": "yes" if polarity == "gt" else "no"})
            i += 1
    return pd.DataFrame(rows)


def _best_fixed_share(frame: pd.DataFrame) -> float:
    from collections import Counter

    from probmed.benchmark.balance import fixed_policy_share
    from probmed.benchmark.subsets import designed_pairs

    return fixed_policy_share(Counter((t, a[0]) for _, t, a in designed_pairs(frame, "modality")))


def test_the_subset_keeps_its_modality_pairs_on_a_fair_design():
    """A lopsided draw ("X-ray? yes, others no" wins 40 of 80 pairs) loses the pairs that tip it: every text is yes
    as often as no again and no fixed answer wins more than the least a design of these pairs allows plus slack."""
    from probmed.benchmark.subsets import balance_designed_pairs

    lopsided = _modality_design({("x-ray", "ct"): 30, ("ct", "x-ray"): 10, ("mri", "x-ray"): 10, ("x-ray", "mri"): 10,
                                 ("ct", "mri"): 10, ("mri", "ct"): 10})
    assert _best_fixed_share(lopsided) == pytest.approx(0.5)
    balanced = balance_designed_pairs(lopsided, seed=0)
    answers = balanced.groupby("question")["answer"].value_counts().unstack()
    assert (answers["yes"] == answers["no"]).all()
    assert _best_fixed_share(balanced) <= 1 / 3 + 0.02 and balanced["pair_id"].nunique() >= 50
    assert balanced.groupby("pair_id").size().eq(2).all()  # whole pairs go, never one question of a pair


def test_the_balanced_subset_still_meets_its_minimums():
    frame = _modality_design({("x-ray", "ct"): 60, ("ct", "x-ray"): 20, ("mri", "x-ray"): 20, ("x-ray", "mri"): 20,
                              ("ct", "mri"): 20, ("mri", "ct"): 20})
    subset = subset_questions(frame, 10, seed=0, min_units_per_category=30)
    assert subset_counts(subset)["units"]["modality"] >= 30
    assert _best_fixed_share(subset) <= 1 / 3 + 0.02


def test_vqarad_twins_are_no_design_and_stay_whole():
    frame = _modality_design({("x-ray", "ct"): 30, ("ct", "x-ray"): 10})
    frame["category"] = "organ"
    frame["qa_type"] = "vqarad_gt_0"
    from probmed.benchmark.subsets import balance_designed_pairs

    assert len(balance_designed_pairs(frame, seed=0)) == len(frame)


def _condition_design(kinds: dict[tuple[str, str, str], int]) -> pd.DataFrame:
    """Condition pairs (source, truth, adversary) x count, all on chest X-rays."""
    rows, i = [], 0
    for (source, truth, adversary), n in kinds.items():
        for _ in range(n):
            for polarity, value in (("gt", truth), ("adversarial", adversary)):
                rows.append({"qid": f"q{i}-{polarity}", "image_id": f"img{i:03d}", "image_type": "X-ray - Chest",
                             "source": source, "category": "condition", "polarity": polarity,
                             "pair_id": f"img{i:03d}:condition:0", "entity": value,
                             "question": f"Is there evidence of {value} in this image?",
                             "answer": "yes" if polarity == "gt" else "no"})
            i += 1
    return pd.DataFrame(rows)


def test_the_subset_balances_condition_texts_within_each_source():
    """Effusion is asked against nodule three times as often in source A as the reverse (and the reverse in B):
    the texts balance over both sources together, not within either. The subset keeps, per source, the pairs
    whose texts balance again."""
    from probmed.benchmark.subsets import balance_designed_pairs

    frame = _condition_design({("A", "effusion", "nodule"): 30, ("A", "nodule", "effusion"): 10,
                               ("B", "effusion", "nodule"): 10, ("B", "nodule", "effusion"): 30})
    totals = frame.groupby("question")["answer"].value_counts().unstack()
    assert (totals["yes"] == totals["no"]).all()  # balanced over the sources together
    balanced = balance_designed_pairs(frame, seed=0)
    per_source = balanced.groupby(["source", "question"])["answer"].value_counts().unstack()
    assert (per_source["yes"] == per_source["no"]).all() and balanced["pair_id"].nunique() == 40
    assert balanced.groupby("pair_id").size().eq(2).all()
