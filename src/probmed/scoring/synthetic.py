"""Generated question sets with the ProbMed release's shape, for benchmarks and property tests.

Not data: no image exists behind these questions. They let the scorers be timed
at full scale (6,303 images, 57,132 questions) and checked on many random shapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from probmed.core.categories import category
from probmed.core.records import QUESTION_COLUMNS
from probmed.core.release_format import question_id
from probmed.core.vocab import PAPER_MODALITIES, PAPER_ORGANS, image_type

PROBMED_IMAGES = 6303
PROBMED_QUESTIONS = 57132
# The release's scope (its three modalities and four organs) and how often each modality is drawn.
MODALITIES: tuple[str, ...] = PAPER_MODALITIES
ORGANS: tuple[str, ...] = PAPER_ORGANS
MODALITY_SHARES: dict[str, float] = {"x-ray": 0.45, "ct": 0.35, "mri": 0.20}


def _layout(n_images: int, n_questions: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(is_normal, condition pairs, position pairs) per image, adding up to ``n_questions``."""
    extra = n_questions - 5 * n_images
    if n_images < 1 or extra < 0:
        raise ValueError("need at least 5 questions per image")
    # normal images take one single question each; parity of `extra` decides if we need an odd count
    n_normal = min(n_images // 6, extra)
    if (extra - n_normal) % 2:
        n_normal = n_normal - 1 if n_normal > 0 else n_normal + 1
    n_pairs = (extra - n_normal) // 2
    if n_pairs and n_images == n_normal:
        raise ValueError("cannot place condition pairs: every image is normal")
    is_normal = np.zeros(n_images, dtype=bool)
    is_normal[rng.choice(n_images, size=n_normal, replace=False)] = True
    abnormal_idx = np.flatnonzero(~is_normal)
    # each abnormal image gets >= 1 condition pair when there are enough pairs; the rest at random
    cond = np.zeros(n_images, dtype=np.int64)
    pos = np.zeros(n_images, dtype=np.int64)
    base = min(n_pairs, len(abnormal_idx))
    cond[abnormal_idx[:base]] = 1
    for i in rng.choice(abnormal_idx, size=n_pairs - base, replace=True):
        if pos[i] < cond[i] and rng.random() < 0.55:
            pos[i] += 1
        else:
            cond[i] += 1
    return is_normal, cond, pos


def _image_questions(img: str, mod: int, org: int, normal: bool, n_cond: int, n_pos: int) -> list[dict[str, Any]]:
    """One image's rows: modality and organ pairs, abnormality, then condition / position pairs."""
    itype = image_type(MODALITIES[mod], ORGANS[org])
    rows: list[dict[str, Any]] = []

    def add(cat: str, pol: str, pair: str, qa: str, q: str, ans: str) -> None:
        rows.append({
            "qid": question_id(img, qa, q), "image_id": img, "image_path": f"images/{img}.png",
            "source": "synthetic", "category": cat, "polarity": pol, "pair_id": f"{img}:{pair}",
            "question": q, "answer": ans, "entity": "", "image_type": itype, "qa_type": qa,
            "strategy": "gt" if pol == "gt" else "random", "evidence": "",
        })

    def add_pair(cat: str, k: int | None, gt: str, adversary: str) -> None:
        spec = category(cat)
        add(cat, "gt", spec.pair_key(k), spec.gt_qa_type(k), gt, "yes")
        add(cat, "adversarial", spec.pair_key(k), spec.hallu_qa_type(k), adversary, "no")

    add_pair("modality", None, f"Is this a {MODALITIES[mod]} image?",
             f"Is this a {MODALITIES[(mod + 1) % len(MODALITIES)]} image?")
    add_pair("organ", None, f"Is the {ORGANS[org]} shown?", f"Is the {ORGANS[(org + 1) % len(ORGANS)]} shown?")
    add("abnormality", "single", "abnormality", "abnormality", "Is there an abnormality?", "no" if normal else "yes")
    if normal:
        add("condition", "single", "entity_hallu", "entity_hallu", "Is there a nodule?", "no")
    for k in range(1, n_cond + 1):
        add_pair("condition", k, f"Is there finding {k}?", f"Is there fake {k}?")
    for k in range(1, n_pos + 1):
        add_pair("position", k, f"Is finding {k} left?", f"Is finding {k} right?")
    return rows


def synthetic_questions(
    n_images: int = PROBMED_IMAGES, n_questions: int = PROBMED_QUESTIONS, seed: int = 0
) -> pd.DataFrame:
    """A valid question table with exactly ``n_images`` images and ``n_questions`` questions.

    Every image has a modality pair, an organ pair and an abnormality question (5);
    the rest are condition pairs (with position pairs on some) on abnormal images
    and one single hallucinated condition question on normal images.
    """
    rng = np.random.default_rng(seed)
    is_normal, cond, pos = _layout(n_images, n_questions, rng)
    mods = rng.choice(len(MODALITIES), size=n_images, p=[MODALITY_SHARES[m] for m in MODALITIES])
    orgs = rng.choice(len(ORGANS), size=n_images)
    rows: list[dict[str, Any]] = []
    for i in range(n_images):
        rows += _image_questions(f"syn{i:05d}", int(mods[i]), int(orgs[i]), bool(is_normal[i]), int(cond[i]), int(pos[i]))
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
