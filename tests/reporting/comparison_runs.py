"""Scored runs for the comparison tests: real `probmed score` outputs over a synthetic question set.

One question set, two models. "looker" answers from an image-dependent
difficulty; with a blank or shuffled image it answers at chance, so its visual
reliance is large; its `described` run repeats its vanilla answers exactly.
"blind" gives the same answers whatever the image (blank and shuffled equal vanilla).
(A unique module name, unlike conftest.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from probmed.core.params_schema import Score
from probmed.scoring.run import evaluate, per_image, write_run
from probmed.scoring.synthetic import synthetic_questions

QUESTION_SET = "probmed"


def _labels(questions: pd.DataFrame, p_right: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    right = rng.random(len(questions)) < p_right
    truth = questions["answer"].to_numpy()
    return np.where(right, truth, np.where(truth == "yes", "no", "yes"))


def runs(questions: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    rng = np.random.default_rng(0)
    ease = dict(zip(questions["image_id"].unique(), rng.uniform(0.5, 0.99, questions["image_id"].nunique())))
    vanilla = _labels(questions, questions["image_id"].map(ease).to_numpy(), rng)
    cot = vanilla.copy()
    flip = rng.random(len(cot)) < 0.05
    cot[flip] = np.where(cot[flip] == "yes", "no", "yes")
    blind = _labels(questions, np.full(len(questions), 0.5), np.random.default_rng(1))
    return {
        ("looker", "vanilla"): vanilla, ("looker", "cot"): cot, ("looker", "described"): vanilla.copy(),
        ("looker", "blank"): _labels(questions, np.full(len(questions), 0.5), rng),
        ("looker", "shuffled"): _labels(questions, np.full(len(questions), 0.5), rng),
        ("blind", "vanilla"): blind, ("blind", "blank"): blind.copy(), ("blind", "shuffled"): blind.copy(),
    }


MODALITY_NAMES = ("X-ray", "CT Scan", "MRI", "Ultrasound", "Unknown")
ORGAN_NAMES = ("Chest", "Abdomen", "Brain", "Spine", "Pelvis", "Knee", "Hand", "Head and Neck")


def many_image_types(questions: pd.DataFrame, count: int) -> pd.DataFrame:
    """The questions spread over `count` image types (an extended set's ~35), the first ones with the most images."""
    names = [f"{m} - {o}" for o in ORGAN_NAMES for m in MODALITY_NAMES][:count]
    images = questions["image_id"].unique()
    weights = np.linspace(3.0, 0.2, len(names))
    pick = np.random.default_rng(5).choice(len(names), size=len(images), p=weights / weights.sum())
    return questions.assign(image_type=questions["image_id"].map(dict(zip(images, [names[i] for i in pick]))))


def write_scores(root: Path, n_images: int = 80, resamples: int = 200, image_types: int = 0) -> pd.DataFrame:
    """Score every run into ``root/<set>/<model>/<setting>/`` (metrics.json, per_image.parquet); the questions
    (over `image_types` image types when given)."""
    questions = synthetic_questions(n_images=n_images, n_questions=9 * n_images, seed=2)
    if image_types:
        questions = many_image_types(questions, image_types)
    for (model, setting), labels in runs(questions).items():
        preds = pd.DataFrame({"qid": questions["qid"].to_numpy(), "model": model, "setting": setting, "label": labels})
        metrics = evaluate(questions, preds, Score(bootstrap_resamples=resamples, subset_fractions=[1.0]),
                           name=f"{model} ({setting})")
        write_run(metrics, root / QUESTION_SET / model / setting, per_image_sums=per_image(questions, preds))
    return questions
