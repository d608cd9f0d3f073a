"""Subset robustness (paper Appendix C): accuracy on seeded random image subsets.

If the accuracy on 20/40/60/80/100% of the images barely moves, the headline
number does not hinge on a few images. Subsets are nested prefixes of one seeded
permutation of the images, so a larger subset always contains the smaller ones.

Output: a list of rows ``{"fraction", "n_images", "n_questions",
"accuracy_adv_pairs_original_weighting", "accuracy_adv_pairs_question_weighting",
"averaged_accuracy"}``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from probmed.scoring.metrics import prepare, score_prepared

DEFAULT_FRACTIONS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)


def subset_robustness(
    questions: pd.DataFrame,
    predictions: pd.DataFrame,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Scores on nested seeded random subsets of the images."""
    images = pd.unique(questions["image_id"].astype(str))
    order = np.random.default_rng(seed).permutation(len(images))
    rows = []
    for frac in fractions:
        if not 0 < frac <= 1:
            raise ValueError(f"subset fraction {frac} is not in (0, 1]")
        k = max(1, int(round(frac * len(images)))) if len(images) else 0
        keep = set(images[order[:k]])
        sub = questions[questions["image_id"].astype(str).isin(keep)]
        overall = score_prepared(prepare(sub, predictions), resamples=0, by_image_type=False)["overall"]
        rows.append(
            {
                "fraction": float(frac),
                "n_images": k,
                "n_questions": int(len(sub)),
                "accuracy_adv_pairs_original_weighting": overall["accuracy_adv_pairs_original_weighting"],
                "accuracy_adv_pairs_question_weighting": overall["accuracy_adv_pairs_question_weighting"],
                "averaged_accuracy": overall["averaged_accuracy"],
            }
        )
    return rows
