"""Build metrics.json dicts in the shape `probmed score` writes (see probmed.scoring docs).

Used by the tracking and report tests so they do not depend on the scorer's
numbers, only on its documented shape.
"""

from __future__ import annotations

import random
from typing import Any

from probmed.vocab import CATEGORIES

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
        "yes_ratio": round(rng.uniform(0.2, 0.9), 4),
        "refusal_rate": round(rng.uniform(0, 0.1), 4),
        "unparsed_rate": round(rng.uniform(0, 0.1), 4),
        "missing": 0,
        "n_images": n_images,
        "n_questions": 2 * n_images,
        "ci95_low": round(max(0.0, strict - 8), 2),
        "ci95_high": round(min(100.0, strict + 8), 2),
    }


def make_metrics(seed: int = 0, image_types: tuple[str, ...] = IMAGE_TYPES) -> dict[str, Any]:
    rng = random.Random(seed)
    by_category = {c: category_block(rng) for c in CATEGORIES}
    by_image_type = {it: {c: category_block(rng, 5) for c in CATEGORIES} for it in image_types}
    return {
        "overall": {
            "accuracy_original_weighting": round(rng.uniform(20, 60), 2),
            "accuracy_question_weighting": round(rng.uniform(20, 60), 2),
            "n_images": 60,
            "n_questions": 400,
        },
        "by_category": by_category,
        "by_image_type": by_image_type,
        "random_baseline": {c: {"accuracy_adv_pairs": 25.0} for c in CATEGORIES},
        "procedural": {
            "abnormality": {"accuracy": 60.0, "n": 10, "errors": {"wrong_answer": 0.7, "refusal": 0.3}},
            "condition": {
                "accuracy": 30.0,
                "n": 8,
                "errors": {"deny_gt": 0.4, "accept_hallucination": 0.5, "refusal": 0.1},
            },
            "position": {
                "accuracy": None,
                "n": 0,
                "errors": {"deny_gt": 0.0, "accept_hallucination": 0.0, "refusal": 0.0},
            },
        },
        "subset_robustness": [],
    }
