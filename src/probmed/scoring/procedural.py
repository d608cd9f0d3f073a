"""Procedural diagnosis and error analysis (paper section 4.2, Table 4): one analysis.

A diagnosis goes from general to specific, so each stage is scored only on the
images that passed the stages before it:

* abnormality: images whose modality and organ pairs were both right;
* condition: images that also got abnormality right (an image without an
  abnormality question is conditioned on modality and organ only); a normal
  image's single hallucinated condition question is its condition stage;
* position: images that also got condition right.

An image that has no question of an earlier stage is not conditioned on it.
The stages and their order are ``CategorySpec.step`` (probmed.core.categories);
a stage of single questions splits its errors as abnormality does, a paired one
as condition does.
Within each stage the *wrong questions* are split into shares (percent of the
stage's wrong questions): abnormality into ``e_wrong_answer`` / ``e_reject_to_answer``;
condition and position into ``e_deny_ground_truth`` (a gt question answered
"no"), ``e_accept_hallucination`` (an adversarial or single hallucinated question
answered "yes"), ``e_reject_to_answer`` (refusal). Unparsed, failed (the backend
gave up) and missing answers go to ``e_unparsed_or_missing`` so the shares always
add up to 100 (the scorer's ``failed`` and ``missing`` counts tell them apart).

Output::

    {"abnormality": {"n_images", "accuracy", "n_errors", "e_wrong_answer",
                     "e_reject_to_answer", "e_unparsed_or_missing"},
     "condition":   {"n_images", "accuracy", "n_errors", "e_deny_ground_truth",
                     "e_accept_hallucination", "e_reject_to_answer", "e_unparsed_or_missing"},
     "position":    {...same as condition...}}
"""

from __future__ import annotations

from typing import Any

import numpy as np

from probmed.core.categories import CATEGORIES, PROCEDURAL_STAGES, category, prerequisites
from probmed.scoring.metrics import Prepared, _pct

_CAT = {c: i for i, c in enumerate(CATEGORIES)}


def _image_outcomes(p: Prepared) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per category, per image: has questions of it / got every one of them (= all pairs/units) right."""
    has: dict[str, np.ndarray] = {}
    ok: dict[str, np.ndarray] = {}
    for cat in CATEGORIES:
        rows = p.cat == _CAT[cat]
        cnt = np.bincount(p.img[rows], minlength=p.n_images)
        right = np.bincount(p.img[rows], weights=p.correct[rows], minlength=p.n_images)
        has[cat] = cnt > 0
        ok[cat] = has[cat] & (right == cnt)
    return has, ok


def error_keys(stage: str) -> tuple[str, ...]:
    """The shares a stage's wrong questions are split into, in output (and Table 4) order."""
    split = ("e_deny_ground_truth", "e_accept_hallucination") if category(stage).paired else ("e_wrong_answer",)
    return (*split, "e_reject_to_answer", "e_unparsed_or_missing")


def _error_shares(p: Prepared, stage: str, rows: np.ndarray) -> dict[str, Any]:
    """Percent of the stage's wrong questions (``rows``) in each of its error kinds."""
    label = p.label[rows]
    gt = p.is_gt[rows]
    counts = {
        "e_wrong_answer": np.isin(label, ("yes", "no")),
        "e_deny_ground_truth": gt & (label == "no"),
        "e_accept_hallucination": ~gt & (label == "yes"),
        "e_reject_to_answer": label == "refusal",
        "e_unparsed_or_missing": np.isin(label, ("unparsed", "failed", "missing")),
    }
    n_err = int(rows.sum())
    return {key: _pct(int(counts[key].sum()), n_err) for key in error_keys(stage)}


def procedural(p: Prepared) -> dict[str, Any]:
    """Table 4 for one run: stage accuracies on the images that passed earlier stages."""
    has, ok = _image_outcomes(p)
    out: dict[str, Any] = {}
    for stage in PROCEDURAL_STAGES:
        imgs = has[stage].copy()
        for before in prerequisites(stage):  # an image without questions of a stage is not conditioned on it
            imgs &= ~has[before] | ok[before]
        n_img = int(imgs.sum())
        rows = (p.cat == _CAT[stage]) & imgs[p.img] & ~p.correct
        entry: dict[str, Any] = {"n_images": n_img, "accuracy": _pct(int((ok[stage] & imgs).sum()), n_img),
                                 "n_errors": int(rows.sum())}
        entry.update(_error_shares(p, stage, rows))
        out[stage] = entry
    return out
