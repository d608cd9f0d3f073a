"""Context leaks: what a model shown every question of an image at once could infer without looking.

A harness that puts several questions of one image into one prompt or one
conversation hands the model the other questions as evidence. Each leak is a
rule reading only the questions of the same image, never the image or an answer:

* ``position_names_condition``: a condition also named in a position question of
  the same image ("Is the effusion located on the left?") is present, so its
  condition question is yes;
* ``condition_pair_implies_abnormal``: an image with a condition pair (a
  ground-truth finding) is abnormal, so its abnormality question is yes;
* ``no_condition_pair_implies_normal``: an image whose condition questions are
  all single (a normal image's hallucinated finding) is normal, so its
  abnormality question and those single questions are no.

Per leak: how many questions it implies an answer for (and their share of all
questions), how often the implied answer is right, and the strict-accuracy gain
over exact random of a policy that answers by the rule where it applies and
guesses elsewhere (exact expectation, audit.scores).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from probmed.benchmark.audit.oracle import normalise_text

# per question: True (implied yes), False (implied no) or None (the rule says nothing)
Rule = Callable[[pd.DataFrame], list[bool | None]]


def _by_image(questions: pd.DataFrame) -> dict[str, np.ndarray]:
    """Row positions of each image's questions."""
    ids = questions["image_id"].astype(str).to_numpy(dtype=object)
    codes, uniques = pd.factorize(ids)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    return {str(uniques[i]): order[bounds[i]:bounds[i + 1]] for i in range(len(uniques))}


def position_names_condition(questions: pd.DataFrame) -> list[bool | None]:
    """Condition questions whose finding a position question of the same image names: implied yes."""
    out: list[bool | None] = [None] * len(questions)
    cats = questions["category"].to_numpy(dtype=object)
    texts = [f" {normalise_text(t)} " for t in questions["question"]]
    entities = [normalise_text(e) if isinstance(e, str) else "" for e in questions["entity"]] \
        if "entity" in questions.columns else [""] * len(questions)
    for rows in _by_image(questions).values():
        position_texts = [texts[i] for i in rows if cats[i] == "position"]
        if not position_texts:
            continue
        for i in rows:
            if cats[i] == "condition" and entities[i] and any(f" {entities[i]} " in t for t in position_texts):
                out[i] = True
    return out


def _condition_shape(questions: pd.DataFrame) -> dict[str, tuple[bool, bool]]:
    """Per image: (has a condition pair, has a single condition question)."""
    cond = questions[questions["category"] == "condition"]
    single = cond["polarity"].astype(str) == "single"
    paired_images = set(cond.loc[~single, "image_id"].astype(str))
    single_images = set(cond.loc[single, "image_id"].astype(str))
    return {i: (i in paired_images, i in single_images) for i in paired_images | single_images}


def condition_pair_implies_abnormal(questions: pd.DataFrame) -> list[bool | None]:
    """Abnormality questions on images with a condition pair: implied yes."""
    shape = _condition_shape(questions)
    return [True if c == "abnormality" and shape.get(str(i), (False, False))[0] else None
            for c, i in zip(questions["category"], questions["image_id"])]


def no_condition_pair_implies_normal(questions: pd.DataFrame) -> list[bool | None]:
    """Abnormality and single condition questions on images whose condition questions are all single: implied no."""
    shape = _condition_shape(questions)
    normal = {i for i, (paired, single) in shape.items() if single and not paired}
    return [False if str(i) in normal and (c == "abnormality" or (c == "condition" and p == "single")) else None
            for c, i, p in zip(questions["category"], questions["image_id"], questions["polarity"].astype(str))]


LEAKS: dict[str, tuple[str, Rule]] = {
    "position_names_condition": ("a condition named in a position question of the same image is yes",
                                 position_names_condition),
    "condition_pair_implies_abnormal": ("abnormality is yes on an image with a condition pair",
                                        condition_pair_implies_abnormal),
    "no_condition_pair_implies_normal": ("abnormality (and the hallucinated finding) is no on an image whose "
                                         "condition questions are all single", no_condition_pair_implies_normal),
}


def _gain(questions: pd.DataFrame, implied: np.ndarray, yes: np.ndarray) -> dict[str, Any]:
    """Strict accuracy of 'answer by the rule, guess elsewhere' minus exact random, per category and overall."""
    from probmed.benchmark.audit.scores import expected_scores

    p_correct = np.where(pd.isna(implied), 0.5, (implied == yes).astype(float))
    scores = expected_scores(questions, p_correct.astype(float))
    def margin(m: dict[str, Any]) -> float | None:
        return None if m["accuracy"] is None or m["random"] is None else round(m["accuracy"] - m["random"], 3)

    return {"by_category": {c: margin(m) for c, m in scores["by_category"].items()}, "overall": margin(scores["overall"])}


def context_leaks(questions: pd.DataFrame) -> dict[str, Any]:
    """Every leak of ``LEAKS`` measured on the set (module docstring), plus all of them together."""
    yes = (questions["answer"] == "yes").to_numpy(dtype=bool)
    cats = questions["category"].to_numpy(dtype=object)
    together = np.full(len(questions), None, dtype=object)
    out: dict[str, Any] = {"questions": int(len(questions)), "leaks": {}}
    for name, (what, rule) in LEAKS.items():
        implied = np.array(rule(questions), dtype=object)
        applies = np.array([v is not None for v in implied], dtype=bool)
        right = int(sum(1 for v, y in zip(implied[applies], yes[applies]) if v == y))
        together = np.where(applies & pd.isna(together), implied, together)
        out["leaks"][name] = {
            "what": what, "implied": int(applies.sum()), "right": right,
            "share_of_questions": float(applies.mean()) if len(questions) else 0.0,
            "by_category": {str(c): int(n) for c, n in zip(*np.unique(cats[applies], return_counts=True))},
            "strict_gain": _gain(questions, implied, yes),
        }
    applies = np.array([v is not None for v in together], dtype=bool)
    out["all"] = {"implied": int(applies.sum()), "share_of_questions": float(applies.mean()) if len(questions) else 0.0,
                  "strict_gain": _gain(questions, together, yes)}
    return out
