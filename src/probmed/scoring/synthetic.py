"""Generated question sets with the ProbMed release's shape, for benchmarks and property tests.

Not data: no image exists behind these questions. They let the scorers be timed
at full scale (6,303 images, 57,132 questions) and checked on many random shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from probmed.core.release_format import question_id
from probmed.core.records import QUESTION_COLUMNS
from probmed.core.vocab import ASKABLE_MODALITIES, ASKABLE_ORGANS, image_type

PROBMED_IMAGES = 6303
PROBMED_QUESTIONS = 57132


def synthetic_questions(
    n_images: int = PROBMED_IMAGES, n_questions: int = PROBMED_QUESTIONS, seed: int = 0
) -> pd.DataFrame:
    """A valid question table with exactly ``n_images`` images and ``n_questions`` questions.

    Every image has a modality pair, an organ pair and an abnormality question (5);
    the rest are condition pairs (with position pairs on some) on abnormal images
    and one single hallucinated condition question on normal images.
    """
    extra = n_questions - 5 * n_images
    if n_images < 1 or extra < 0:
        raise ValueError("need at least 5 questions per image")
    rng = np.random.default_rng(seed)
    # normal images take one single question each; parity of `extra` decides if we need an odd count
    n_normal = min(n_images // 6, extra)
    if (extra - n_normal) % 2:
        n_normal = n_normal - 1 if n_normal > 0 else n_normal + 1
    n_pairs = (extra - n_normal) // 2
    n_abnormal = n_images - n_normal
    if n_pairs and n_abnormal == 0:
        raise ValueError("cannot place condition pairs: every image is normal")
    is_normal = np.zeros(n_images, dtype=bool)
    is_normal[rng.choice(n_images, size=n_normal, replace=False)] = True
    abnormal_idx = np.flatnonzero(~is_normal)
    # each abnormal image gets >= 1 condition pair when there are enough pairs; the rest at random
    cond = np.zeros(n_images, dtype=np.int64)
    pos = np.zeros(n_images, dtype=np.int64)
    base = min(n_pairs, len(abnormal_idx))
    cond[abnormal_idx[:base]] = 1
    rest = n_pairs - base
    for i in rng.choice(abnormal_idx, size=rest, replace=True):
        if pos[i] < cond[i] and rng.random() < 0.55:
            pos[i] += 1
        else:
            cond[i] += 1
    mods = rng.choice(len(ASKABLE_MODALITIES), size=n_images, p=[0.45, 0.35, 0.20])
    orgs = rng.choice(len(ASKABLE_ORGANS), size=n_images)
    rows: list[dict[str, Any]] = []

    def add(img: str, itype: str, cat: str, pol: str, pair: str, qa: str, q: str, ans: str) -> None:
        rows.append(
            {
                "qid": question_id(img, qa, q),
                "image_id": img,
                "image_path": f"images/{img}.png",
                "source": "synthetic",
                "category": cat,
                "polarity": pol,
                "pair_id": f"{img}:{pair}",
                "question": q,
                "answer": ans,
                "entity": "",
                "image_type": itype,
                "qa_type": qa,
                "strategy": "gt" if pol == "gt" else "random",
                "evidence": "",
            }
        )

    for i in range(n_images):
        img = f"syn{i:05d}"
        mod, org = ASKABLE_MODALITIES[mods[i]], ASKABLE_ORGANS[orgs[i]]
        other_mod = ASKABLE_MODALITIES[(mods[i] + 1) % 3]
        other_org = ASKABLE_ORGANS[(orgs[i] + 1) % 4]
        itype = image_type(mod, org)
        add(img, itype, "modality", "gt", "modality", "modality_gt", f"Is this a {mod} image?", "yes")
        add(img, itype, "modality", "adversarial", "modality", "modality_hallu", f"Is this a {other_mod} image?", "no")
        add(img, itype, "organ", "gt", "body_part", "body_part_gt", f"Is the {org} shown?", "yes")
        add(img, itype, "organ", "adversarial", "body_part", "body_part_hallu", f"Is the {other_org} shown?", "no")
        add(img, itype, "abnormality", "single", "abnormality", "abnormality", "Is there an abnormality?",
            "no" if is_normal[i] else "yes")
        if is_normal[i]:
            add(img, itype, "condition", "single", "entity_hallu", "entity_hallu", "Is there a nodule?", "no")
        for k in range(1, cond[i] + 1):
            add(img, itype, "condition", "gt", f"entity_{k}", f"entity_gt_{k}", f"Is there finding {k}?", "yes")
            add(img, itype, "condition", "adversarial", f"entity_{k}", f"entity_hallu_{k}", f"Is there fake {k}?", "no")
        for k in range(1, pos[i] + 1):
            add(img, itype, "position", "gt", f"grounding_{k}", f"grounding_gt_{k}", f"Is finding {k} left?", "yes")
            add(img, itype, "position", "adversarial", f"grounding_{k}", f"grounding_hallu_{k}",
                f"Is finding {k} right?", "no")
    frame = pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))
    assert len(frame) == n_questions, (len(frame), n_questions)
    return frame


RESPONSE_TEXTS: dict[str, tuple[str, ...]] = {
    "yes": ("Yes.", "Yes, there is.", "The answer is yes.", "yes", "**Yes**"),
    "no": ("No.", "No, there is not.", "The answer is no.", "no", "Normal"),
    "refusal": ("I cannot determine this from the image.", "Please consult a radiologist."),
    "unparsed": ("Normal study", "Possibly."),
}


def synthetic_labels(questions: pd.DataFrame, seed: int = 0, accuracy: float = 0.7,
                     refusal: float = 0.03, unparsed: float = 0.02) -> np.ndarray:
    """Per-question labels of a model that is right with probability ``accuracy``."""
    rng = np.random.default_rng(seed)
    n = len(questions)
    answer = questions["answer"].to_numpy(dtype=object)
    wrong = np.where(answer == "yes", "no", "yes").astype(object)
    label = np.where(rng.random(n) < accuracy, answer, wrong).astype(object)
    u = rng.random(n)
    label[u < refusal] = "refusal"
    label[(u >= refusal) & (u < refusal + unparsed)] = "unparsed"
    return label


def synthetic_responses(labels: np.ndarray, seed: int = 0) -> list[str]:
    """Free-text responses for labels, in the styles models use."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, 1000, size=len(labels))
    return [RESPONSE_TEXTS[lab][k % len(RESPONSE_TEXTS[lab])] for lab, k in zip(labels, picks)]
