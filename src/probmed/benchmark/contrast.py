"""Contrast pairs: one question text asked of an image where it is true and of one where it is false.

Why: the paper's unit pairs a ground-truth question with an adversarial one on
the SAME image. With n values asked uniformly, a model that answers a fixed
yes/no per text (never looking at the image) wins floor(n/2)ceil(n/2)/(n(n-1))
of those pairs (33.3% for 4 modalities against 25% random), whatever the
adversaries. A contrast pair (as NaturalBench's) asks one text twice: "yes" on
one image, "no" on another; it counts only when both answers are right, so any
answer that depends on the text alone scores exactly 0. Pairs are matched
within one image type wherever the type has both answers, so a model that
recognises the image type and nothing else scores 0 on those as well.

``assign_contrast_pairs`` is the last step of building every question table (a
generated set, an image subset, the VQA-RAD adversarial set): the pairs of a
table are drawn among its own questions, so a subset never keeps a pair whose
partner it left out. The pairing is seeded and does not depend on row order
(candidates are ordered by qid before the seeded shuffle).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

CONTRAST_COLUMN = "contrast_id"
_NON_WORD = re.compile(r"[^a-z0-9]+")


def contrast_text(question: str) -> str:
    """The text two questions must share: lower case, punctuation and spacing removed (as the audit keys texts)."""
    return _NON_WORD.sub(" ", str(question).lower()).strip()


def _match(frame: pd.DataFrame, candidates: np.ndarray, by: list[str], rank_key: np.ndarray) -> list[tuple[int, int]]:
    """(yes row, no row) pairs among `candidates`: the r-th yes of a group with the r-th no, groups keyed by `by`."""
    if not len(candidates):
        return []
    part = frame.iloc[candidates][by + ["answer"]].copy()
    part["_row"] = candidates
    part["_rank"] = rank_key[candidates]
    part = part.sort_values([*by, "answer", "_rank"], kind="stable")
    part["_nth"] = part.groupby([*by, "answer"], sort=False).cumcount()
    yes = part[part["answer"] == "yes"].set_index([*by, "_nth"])["_row"]
    no = part[part["answer"] == "no"].set_index([*by, "_nth"])["_row"]
    both = yes.index.intersection(no.index)
    return list(zip(yes.loc[both].to_numpy(dtype=np.int64).tolist(), no.loc[both].to_numpy(dtype=np.int64).tolist()))


def assign_contrast_pairs(questions: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The table with ``contrast_id`` set: shared by two questions of one text, one answered yes, one no, on two
    images; null for a question left without a partner. Same image type first, then across types for the rest.

    Each question is in at most one pair; an existing ``contrast_id`` is replaced (the pairs are the table's own).
    """
    frame = questions.reset_index(drop=True)
    n = len(frame)
    ids = np.full(n, None, dtype=object)
    if n:
        work = pd.DataFrame({"text": frame["question"].map(contrast_text), "image_type": frame["image_type"].astype(str),
                             "answer": frame["answer"].astype(str), "qid": frame["qid"].astype(str)})
        order = np.argsort(work["qid"].to_numpy(dtype=str), kind="stable")  # row order never decides a pair
        rank_key = np.empty(n, dtype=np.int64)
        rank_key[order] = np.random.default_rng([seed, 0x5EED]).permutation(n)
        image = frame["image_id"].astype(str).to_numpy(dtype=object)
        qid = work["qid"].to_numpy(dtype=object)
        free = np.ones(n, dtype=bool)
        for by in (["text", "image_type"], ["text"]):
            for y, m in _match(work, np.flatnonzero(free), by, rank_key):
                if image[y] != image[m]:  # one text of one image is asked once; a table that repeats it pairs less
                    ids[y] = ids[m] = f"contrast:{qid[y]}"
                    free[y] = free[m] = False
    return frame.assign(**{CONTRAST_COLUMN: pd.array(ids, dtype="string")})


__all__ = ["CONTRAST_COLUMN", "assign_contrast_pairs", "contrast_text"]
