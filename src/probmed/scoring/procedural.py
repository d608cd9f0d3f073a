"""Procedural diagnosis and error analysis (paper section 4.2, Table 4): one analysis.

A diagnosis goes from general to specific, so each stage is scored only on the
images that passed the stages before it:

* abnormality: images whose modality and organ pairs were both right;
* condition: images that also got abnormality right (an image without an
  abnormality question is conditioned on modality and organ only); a normal
  image's single hallucinated condition question is its condition stage;
* position: images that also got condition right.

An image that has no question of an earlier stage is not conditioned on it.
Within each stage the *wrong questions* are split into shares (percent of the
stage's wrong questions): abnormality into ``e_wrong_answer`` / ``e_reject_to_answer``;
condition and position into ``e_deny_ground_truth`` (a gt question answered
"no"), ``e_accept_hallucination`` (an adversarial or single hallucinated question
answered "yes"), ``e_reject_to_answer`` (refusal). Unparsed and missing answers go
to ``e_unparsed_or_missing`` so the shares always add up to 100.

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

from probmed.scoring.metrics import Prepared, _pct
from probmed.core.vocab import CATEGORIES

_CAT = {c: i for i, c in enumerate(CATEGORIES)}


def procedural(p: Prepared) -> dict[str, Any]:
    """Table 4 for one run: stage accuracies on the images that passed earlier stages."""
    n = p.n_images
    has: dict[str, np.ndarray] = {}
    ok: dict[str, np.ndarray] = {}
    for cat in CATEGORIES:
        rows = p.cat == _CAT[cat]
        cnt = np.bincount(p.img[rows], minlength=n)
        right = np.bincount(p.img[rows], weights=p.correct[rows], minlength=n)
        has[cat] = cnt > 0
        ok[cat] = has[cat] & (right == cnt)  # every question of the stage right (= all pairs/units)

    def passed(cat: str) -> np.ndarray:
        return ~has[cat] | ok[cat]

    eligible = {
        "abnormality": has["abnormality"] & passed("modality") & passed("organ"),
    }
    eligible["condition"] = has["condition"] & passed("modality") & passed("organ") & passed("abnormality")
    eligible["position"] = (
        has["position"] & passed("modality") & passed("organ") & passed("abnormality") & passed("condition")
    )

    out: dict[str, Any] = {}
    for stage in ("abnormality", "condition", "position"):
        imgs = eligible[stage]
        n_img = int(imgs.sum())
        acc = _pct(int((ok[stage] & imgs).sum()), n_img)
        rows = (p.cat == _CAT[stage]) & imgs[p.img] & ~p.correct
        label = p.label[rows]
        n_err = int(rows.sum())
        refusal = int((label == "refusal").sum())
        other = int(np.isin(label, ("unparsed", "missing")).sum())
        entry: dict[str, Any] = {"n_images": n_img, "accuracy": acc, "n_errors": n_err}
        if stage == "abnormality":
            entry["e_wrong_answer"] = _pct(int(np.isin(label, ("yes", "no")).sum()), n_err)
        else:
            gt = p.is_gt[rows]
            entry["e_deny_ground_truth"] = _pct(int((gt & (label == "no")).sum()), n_err)
            entry["e_accept_hallucination"] = _pct(int((~gt & (label == "yes")).sum()), n_err)
        entry["e_reject_to_answer"] = _pct(refusal, n_err)
        entry["e_unparsed_or_missing"] = _pct(other, n_err)
        out[stage] = entry
    return out

