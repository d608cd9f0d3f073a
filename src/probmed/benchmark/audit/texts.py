"""How much each question text tells about its answer, duplicates, evidence and lint.

Per category (and per image type): how many distinct normalised texts there
are, the spread of their yes-ratios, and the share of questions whose text
has a clear majority over the whole set (a two-sided binomial test at
``alpha``): a text-only model answers those from the text alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from probmed.benchmark.audit.oracle import normalise_text, text_table
from probmed.benchmark.lint import lint_frame
from probmed.core.categories import CATEGORIES

EXAMPLES = 10


def _spread(table: pd.DataFrame, alpha: float) -> dict[str, Any]:
    from scipy.stats import binomtest

    if table.empty:
        return {"texts": 0, "questions": 0}
    n = table["questions"].to_numpy()
    ratio = table["yes_ratio"].to_numpy()
    decided = np.array([binomtest(int(k), int(t), 0.5).pvalue < alpha if 2 * k != t else False
                        for k, t in zip(table["yes"], table["questions"])])
    skewed = table.assign(skew=(table["yes_ratio"] - 0.5).abs()).sort_values(["skew", "questions"], ascending=False)
    return {
        "texts": int(len(table)),
        "questions": int(n.sum()),
        "yes_share": float(table["yes"].sum() / n.sum()),
        "yes_ratio_min": float(ratio.min()),
        "yes_ratio_median": float(np.median(np.repeat(ratio, n))),
        "yes_ratio_max": float(ratio.max()),
        "mean_abs_skew": float(np.average(np.abs(ratio - 0.5), weights=n)),
        "decided_texts": int(decided.sum()),
        "decided_question_share": float(n[decided].sum() / n.sum()),
        "most_skewed": [
            {"text": r.text, "questions": int(r.questions), "yes_ratio": round(float(r.yes_ratio), 3)}
            for r in skewed.head(5).itertuples()
        ],
    }


def text_stats(questions: pd.DataFrame, alpha: float) -> dict[str, Any]:
    """Distinct texts and yes-ratio spread per category, and per image type and category."""
    out: dict[str, Any] = {"by_category": {}, "by_image_type": {}}
    table = text_table(questions)
    for cat in CATEGORIES:
        sub = table[table["category"] == cat]
        if len(sub):
            out["by_category"][cat] = _spread(sub, alpha)
    for itype, group in questions.groupby("image_type", sort=True):
        t = text_table(group)
        out["by_image_type"][str(itype)] = {cat: _spread(t[t["category"] == cat], alpha) for cat in CATEGORIES if (t["category"] == cat).any()}
    return out


def duplicates(questions: pd.DataFrame) -> dict[str, Any]:
    """The same normalised text asked twice of one image (two pairs that are one, or a yes and a no)."""
    key = pd.DataFrame({"image_id": questions["image_id"].astype(str), "text": questions["question"].map(normalise_text),
                        "answer": questions["answer"]})
    dup = key[key.duplicated(["image_id", "text"], keep=False)]
    groups = dup.groupby(["image_id", "text"])
    conflicting = int((groups["answer"].nunique() > 1).sum())
    examples = [{"image_id": i, "text": t, "answers": sorted(g["answer"])} for (i, t), g in list(groups)[:EXAMPLES]]
    return {"count": int(groups.ngroups), "conflicting": conflicting, "examples": examples}


def evidence_shares(questions: pd.DataFrame) -> dict[str, Any]:
    """Evidence of every "no" answer per category: known_absent, assumed_absent, or not recorded."""
    no = questions[questions["answer"] == "no"]
    out: dict[str, Any] = {}
    for cat, group in [("all", no), *no.groupby("category", sort=True)]:
        ev = group["evidence"].fillna("").astype(str)
        known, assumed = int((ev == "known_absent").sum()), int((ev == "assumed_absent").sum())
        out[str(cat)] = {
            "no_answers": int(len(group)),
            "known_absent": known,
            "assumed_absent": assumed,
            "unrecorded": int(len(group) - known - assumed),
            "known_absent_share": None if not len(group) else known / len(group),
        }
    return out


def lint_stats(questions: pd.DataFrame) -> dict[str, Any]:
    """Grammar lint findings over the distinct texts (probmed.benchmark.lint)."""
    texts = questions["question"].astype(str)
    found = lint_frame(questions)  # the text rules and those that need the source (a disease newer than the images)
    counts = texts.value_counts()
    by_rule: dict[str, int] = {}
    for f in found:
        by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
    return {
        "texts": int(texts.nunique()),
        "findings": len(found),
        "questions_affected": int(sum(counts[t] for t in {f.question for f in found})),
        "by_rule": dict(sorted(by_rule.items())),
        "examples": [{"question": f.question, "rule": f.rule, "message": f.message} for f in found[:EXAMPLES]],
    }
