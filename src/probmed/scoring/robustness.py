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

from probmed.core.params_schema import Score
from probmed.scoring.metrics import Prepared, prepare, score_rows

DEFAULT_FRACTIONS: tuple[float, ...] = tuple(Score().subset_fractions)  # params score.subset_fractions


def subset_robustness(
    questions: pd.DataFrame,
    predictions: pd.DataFrame,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Scores on nested seeded random subsets of the images."""
    return subset_robustness_prepared(prepare(questions, predictions), fractions, seed)


def subset_robustness_prepared(
    p: Prepared, fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: int = 0
) -> list[dict[str, Any]]:
    """:func:`subset_robustness` on already joined questions (image codes are sorted ids,
    so the subsets do not depend on the table's row order)."""
    for frac in fractions:
        if not 0 < frac <= 1:
            raise ValueError(f"subset fraction {frac} is not in (0, 1]")
    order = np.random.default_rng(seed).permutation(p.n_images)
    rank = np.empty(p.n_images, dtype=np.int64)
    rank[order] = np.arange(p.n_images)
    rows_all = np.arange(len(p.frame))
    out = []
    for frac in fractions:
        k = max(1, int(round(frac * p.n_images))) if p.n_images else 0
        rows = rows_all[rank[p.img] < k]
        _cats, overall, _rnd = score_rows(p, rows, resamples=0, seed=0, level=0.95)
        out.append(
            {
                "fraction": float(frac),
                "n_images": k,
                "n_questions": int(len(rows)),
                "accuracy_adv_pairs_original_weighting": overall["accuracy_adv_pairs_original_weighting"],
                "accuracy_adv_pairs_question_weighting": overall["accuracy_adv_pairs_question_weighting"],
                "averaged_accuracy": overall["averaged_accuracy"],
            }
        )
    return out
