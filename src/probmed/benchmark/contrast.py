"""Contrast pairs: one question text asked of an image where it is true and of one where it is false.

Why: the paper's unit pairs a ground-truth question with an adversarial one on
the SAME image. With n values asked uniformly, a model that answers a fixed
yes/no per text (never looking at the image) wins floor(n/2)ceil(n/2)/(n(n-1))
of those pairs (33.3% for 4 modalities against 25% random), whatever the
adversaries. A contrast pair (as NaturalBench's) asks one text twice: "yes" on
one image, "no" on another; it counts only when both answers are right, so any
answer that depends on the text alone scores exactly 0. Pairs are matched
within one image type and source wherever they have both answers, then within
the image type, then across types, so a model that recognises the image type or
the source and nothing else scores 0 on the first (a table keyed on the source
won 42.9% of the smoke set's abnormality contrast pairs when normal chest
radiographs came from one source and abnormal ones from another).

``assign_contrast_pairs`` is the last step of building every question table (a
generated set, an image subset, the VQA-RAD adversarial set): the pairs of a
table are drawn among its own questions, so a subset never keeps a pair whose
partner it left out. The pairing is seeded and does not depend on row order
(images are taken in a seeded permutation of their sorted ids).
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


def _match(group: np.ndarray, yes: np.ndarray, rank: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(yes rows, no rows) among `candidates`: within each group, the r-th yes (by `rank`) with the r-th no.

    Integer arrays only (a generated set of 100,000 images has ~650,000 questions): one lexsort, then each
    row's place among the rows of its (group, answer) and an intersection of (group, place) keys."""
    if not len(candidates):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    g, y = group[candidates], yes[candidates]
    order = np.lexsort((rank[candidates], y, g))
    rows, g, y = candidates[order], g[order], y[order]
    start = np.r_[True, (g[1:] != g[:-1]) | (y[1:] != y[:-1])]
    first = np.maximum.accumulate(np.where(start, np.arange(len(rows)), 0))
    key = g * (len(rows) + 1) + (np.arange(len(rows)) - first)  # (group, place) as one integer
    _, iy, ino = np.intersect1d(key[y], key[~y], assume_unique=True, return_indices=True)
    return rows[y][iy], rows[~y][ino]


def _codes(values: pd.Series) -> np.ndarray:
    return pd.factorize(values.astype(str), sort=True)[0].astype(np.int64)


def assign_contrast_pairs(questions: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The table with ``contrast_id`` set: shared by two questions of one text, one answered yes, one no, on two
    images; null for a question left without a partner. Same image type and source first, then the same image
    type, then across types for the rest.

    Each question is in at most one pair; an existing ``contrast_id`` is replaced (the pairs are the table's own).
    Partners meet in a seeded order of the images (sorted ids, then permuted), so row order never decides a pair.
    """
    frame = questions.reset_index(drop=True)
    n = len(frame)
    ids = np.full(n, None, dtype=object)
    if n:
        raw, texts = pd.factorize(frame["question"].astype(str))
        text = pd.factorize(pd.Index(texts).map(contrast_text))[0][raw].astype(np.int64)  # each text normalised once
        itype = _codes(frame["image_type"])
        source = _codes(frame["source"]) if "source" in frame.columns else np.zeros(n, dtype=np.int64)
        yes = (frame["answer"] == "yes").to_numpy(dtype=bool)
        qid = frame["qid"].astype(str)
        image = _codes(frame["image_id"])  # sorted ids: the codes do not depend on row order
        rank = np.random.default_rng([seed, 0x5EED]).permutation(int(image.max()) + 1)[image]  # a seeded image order
        free = np.ones(n, dtype=bool)
        by_type = text * (int(itype.max()) + 1) + itype
        for group in (by_type * (int(source.max()) + 1) + source, by_type, text):
            y, m = _match(group, yes, rank, np.flatnonzero(free))
            ok = image[y] != image[m]  # one text of one image is asked once; a table that repeats it pairs less
            y, m = y[ok], m[ok]
            names = "contrast:" + qid.to_numpy(dtype=object)[y]
            ids[y] = names
            ids[m] = names
            free[y] = free[m] = False
    return frame.assign(**{CONTRAST_COLUMN: pd.array(ids, dtype="string")})


__all__ = ["CONTRAST_COLUMN", "assign_contrast_pairs", "contrast_text"]
