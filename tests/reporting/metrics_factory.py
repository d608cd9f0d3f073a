"""Build metrics.json dicts in the shape `probmed score` writes (see probmed.scoring docs).

Used by the tracking and report tests so they do not depend on the scorer's
numbers, only on its documented shape.
"""

from __future__ import annotations

import random
from typing import Any

from probmed.core.categories import CATEGORIES

IMAGE_TYPES = ("X-ray - Chest", "CT Scan - Brain", "MRI - Abdomen")


def category_block(rng: random.Random, n_images: int = 20) -> dict[str, Any]:
    strict = round(rng.uniform(10, 60), 2)
    averaged = round(min(100.0, strict + rng.uniform(5, 30)), 2)
    return {
        "accuracy_adv_pairs": strict,
        "averaged_accuracy": averaged,
        "gt_only_accuracy": round(rng.uniform(40, 95), 2),
        "precision": round(rng.uniform(0.3, 0.9), 4),
        "recall": round(rng.uniform(0.3, 0.9), 4),
        "f1": round(rng.uniform(0.3, 0.9), 4),
        "yes_ratio": round(rng.uniform(20, 90), 2),  # rates in percent, as the scorer writes them
        "refusal_rate": round(rng.uniform(0, 10), 2),
        "unparsed_rate": round(rng.uniform(0, 10), 2),
        "missing": 0,
        "n_images": n_images,
        "n_questions": 2 * n_images,
        "n_units": n_images,
        "ci95_low": round(max(0.0, strict - 8), 2),
        "ci95_high": round(min(100.0, strict + 8), 2),
    }


def make_metrics(seed: int = 0, image_types: tuple[str, ...] = IMAGE_TYPES) -> dict[str, Any]:
    rng = random.Random(seed)
    by_category = {c: category_block(rng) for c in CATEGORIES}
    by_image_type = {it: {c: category_block(rng, 5) for c in CATEGORIES} for it in image_types}
    return {
        "overall": {
            "accuracy_adv_pairs_original_weighting": round(rng.uniform(20, 60), 2),
            "accuracy_adv_pairs_question_weighting": round(rng.uniform(20, 60), 2),
            "accuracy_adv_pairs": round(rng.uniform(20, 40), 2),
            "averaged_accuracy": round(rng.uniform(40, 70), 2),
            "num_original_weighting": {c: 10 for c in CATEGORIES},
            "n_images": 60,
            "n_questions": 400,
        },
        "by_category": by_category,
        "by_image_type": by_image_type,
        "random_baseline": {
            "overall": {"accuracy_adv_pairs": 20.0, "averaged_accuracy": 50.0},
            "by_category": {c: {"accuracy_adv_pairs": 25.0, "averaged_accuracy": 50.0} for c in CATEGORIES},
            "by_image_type": {it: {c: {"accuracy_adv_pairs": 25.0} for c in CATEGORIES} for it in image_types},
        },
        "procedural": {
            "abnormality": {"n_images": 10, "accuracy": 60.0, "n_errors": 4, "e_wrong_answer": 75.0,
                            "e_reject_to_answer": 25.0, "e_unparsed_or_missing": 0.0},
            "condition": {"n_images": 8, "accuracy": 30.0, "n_errors": 5, "e_deny_ground_truth": 40.0,
                          "e_accept_hallucination": 60.0, "e_reject_to_answer": 0.0, "e_unparsed_or_missing": 0.0},
            "position": {"n_images": 0, "accuracy": None, "n_errors": 0, "e_deny_ground_truth": None,
                         "e_accept_hallucination": None, "e_reject_to_answer": None, "e_unparsed_or_missing": None},
        },
        "subset_robustness": [],
    }
