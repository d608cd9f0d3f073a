"""Strict pair accuracy from released rows alone (standard library only): the harnesses' scorer.

Copied verbatim into every release (``harness/probmed_strict.py``) so lmms-eval and
inspect_ai score exactly as ``probmed score`` does without importing probmed:
a modality/organ pair counts when both of its questions are right; condition and
position are all-or-nothing per image over the image's pairs (VQA-RAD pairs,
``vqarad_<k>``, pair by pair); abnormality counts per question; a single question
of a paired category (a normal image's ``entity_hallu``) is outside its strict
accuracy. The paper's overall weights each category by ``num``: its units for
modality/organ, its questions for abnormality, every image of the scored rows for
condition/position. tests/release/test_harness_scoring.py holds this equal to
probmed.scoring.metrics on random answers, and CATEGORIES equal to probmed.core.categories.
"""

from __future__ import annotations

from typing import Any, Iterable

# name -> (paired, per_image), in the scorer's order; single questions' pair keys.
CATEGORIES: dict[str, tuple[bool, bool]] = {
    "modality": (True, False),
    "organ": (True, False),
    "abnormality": (False, False),
    "condition": (True, True),
    "position": (True, True),
}
SINGLE_KEYS: tuple[str, ...] = ("abnormality", "entity_hallu")
PAIR_BY_PAIR_PREFIX = "vqarad"


def _unit(row: dict[str, Any]) -> tuple[str, ...] | None:
    """The strict unit a row belongs to, or None for a single question."""
    key = str(row["pair_id"]).rpartition(":")[2]
    if key in SINGLE_KEYS:
        return None
    _, per_image = CATEGORIES[row["category"]]
    if per_image and not key.startswith(PAIR_BY_PAIR_PREFIX):
        return ("image", row["category"], str(row["image_id"]))
    return ("pair", row["category"], str(row["pair_id"]))


def strict_scores(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``{"by_category": {cat: {"accuracy", "num"}}, "overall": float | None}`` (percent) of rows carrying
    ``category, pair_id, image_id, answer`` and the model's parsed ``label``."""
    units: dict[str, dict[tuple[str, ...], bool]] = {}
    singles: dict[str, list[bool]] = {}
    images: set[str] = set()
    for row in rows:
        cat, right = row["category"], row["label"] == row["answer"]
        images.add(str(row["image_id"]))
        unit = _unit(row)
        if unit is None:
            singles.setdefault(cat, []).append(right)
        else:
            group = units.setdefault(cat, {})
            group[unit] = group.get(unit, True) and right
    by_category: dict[str, dict[str, Any]] = {}
    for cat, (paired, per_image) in CATEGORIES.items():
        cat_units, cat_singles = units.get(cat, {}), singles.get(cat, [])
        if not cat_units and not cat_singles:
            continue
        if paired:
            ok, n = sum(cat_units.values()), len(cat_units)
        else:
            ok, n = sum(cat_singles), len(cat_singles)
        accuracy = None if n == 0 else float(100.0 * ok / n)
        num = len(images) if per_image else n
        by_category[cat] = {"accuracy": accuracy, "num": num}
    total = weight = 0.0
    for entry in by_category.values():
        if entry["accuracy"] is None or not entry["num"]:
            continue
        total += entry["accuracy"] * entry["num"]
        weight += entry["num"]
    return {"by_category": by_category, "overall": None if weight == 0 else total / weight}
