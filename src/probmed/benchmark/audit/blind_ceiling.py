"""The blind ceiling: the best strict accuracy a model that never looks at the image can learn.

A model without the image can still commit to one answer per question text
("Is this an X-ray? yes", "Is the brain shown? no"). On a set whose pairs have
structure (every organ pair pits the brain against a body organ; every X-ray
image asks "X-ray?") such a fixed policy beats exact random although each text
is answered yes exactly as often as no, which is why a text-majority oracle
that only acts on significant majorities can sit at random while the set is
still passable blind.

The policy is fitted on 4/5 of the images and scored on the held-out fifth
(folds by image id, audit.oracle.image_fold), so the ceiling is what a blind
model can *learn*, not what it could pick with the answers in hand (that is the
in-sample bound, reported beside it). It is fitted per category on the
scorer's own units (a pair, or all pairs of an image for per-image categories,
or a single question; scoring.metrics.prepare): exhaustively when a category
has at most ``exhaustive_max`` keys, otherwise from each key's majority answer
by flipping one key at a time while the training score rises. The key is the
normalised text, or (image type, text) for a model that recognises the image
type (trivial) but reads nothing else. A key the training folds never saw is
guessed: each of its questions counts 0.5 (an exact expectation, no draw).

Two scoring units (``UNITS``): ``pair``, the paper's within-image pair (the
scorer's units above), and ``contrast``, two questions of one normalised text on
two images, one yes and one no (the question table's ``contrast_id``, when it has
one). A contrast unit's fold is that of its first image (by id). On the pair unit a
category whose unit is one pair of n values has a floor no design can remove
(:func:`pair_floor`); the contrast unit has none: a policy keyed on the text alone
scores 0 on it, and only one keyed on the image type can win.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from probmed.benchmark.audit.oracle import image_fold, normalise_text
from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES, PER_IMAGE_CATEGORIES

KEYINGS = ("text", "type_text")  # what a fixed policy may condition on
UNITS = ("pair", "contrast")  # what a policy must get right together: a within-image pair, or a contrast pair
UNIT_LABELS = {"pair": "within-image pairs (the paper's unit)", "contrast": "contrast pairs (one text, two images)"}


@dataclass(frozen=True)
class CategoryRows:
    """One category's questions as arrays: the policy key, the scoring unit, the answer and the fold of each."""

    key: np.ndarray  # key code per row (0..n_keys-1)
    n_keys: int
    unit: np.ndarray  # unit code per row (0..n_units-1)
    n_units: int
    yes: np.ndarray  # bool: the true answer is yes
    unit_fold: np.ndarray  # fold of each unit (its image's)
    unit_type: np.ndarray  # image type of each unit


def _scored_rows(questions: pd.DataFrame, category: str, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(row positions, unit label per row) of `category` on the scoring unit `unit`."""
    cats = questions["category"].to_numpy(dtype=object)
    if unit == "contrast":
        if "contrast_id" not in questions.columns:
            return np.array([], dtype=np.int64), np.array([], dtype=object)
        ids = questions["contrast_id"].to_numpy(dtype=object)
        rows = np.flatnonzero((cats == category) & pd.notna(ids))
        return rows, ids[rows].astype(str)
    from probmed.scoring.metrics import prepare

    prep = prepare(questions, pd.DataFrame({"qid": pd.Series([], dtype=object), "label": pd.Series([], dtype=object)}))
    rows = np.flatnonzero(prep.cat == CATEGORIES.index(category))
    if category in PAIRED_CATEGORIES:
        rows = rows[prep.unit[rows] >= 0]
        return rows, prep.unit[rows]
    return rows, rows


def category_rows(questions: pd.DataFrame, category: str, keying: str, folds: int, unit: str = "pair") -> CategoryRows | None:
    """The scored questions of `category` on `unit`, keyed by `keying`; None when the category has no such unit."""
    if unit not in UNITS:
        raise ValueError(f"blind ceiling: unknown unit {unit!r}; known: {', '.join(UNITS)}")
    rows, unit_of = _scored_rows(questions, category, unit)
    if not len(rows):
        return None
    sub = questions.iloc[rows]
    text = sub["question"].map(normalise_text).to_numpy(dtype=object)
    itype = sub["image_type"].astype(str).to_numpy(dtype=object)
    keys = text if keying == "text" else itype + "\x1f" + text
    key, uniques = pd.factorize(keys, sort=True)
    unit_values, unit_code = np.unique(unit_of, return_inverse=True)
    image_ids = sub["image_id"].astype(str).to_numpy(dtype=object)
    order = np.lexsort((image_ids, unit_code))  # per unit, its rows by image id: the first is the unit's image
    first_row = order[np.unique(unit_code[order], return_index=True)[1]]
    fold = np.array([image_fold(i, folds) for i in image_ids[first_row]], dtype=np.int64)
    return CategoryRows(key=key.astype(np.int64), n_keys=len(uniques), unit=unit_code.astype(np.int64), n_units=len(unit_values),
                        yes=(sub["answer"] == "yes").to_numpy(dtype=bool), unit_fold=fold, unit_type=itype[first_row])


def pair_floor(n_values: int) -> float | None:
    """The in-sample ceiling no design can go below on a unit of one pair over `n_values` values (percent).

    Why: answer yes to a set S of k values and no to the rest; a pair (true value,
    adversary) is won when the true value is in S and the adversary not. Over all
    k-subsets that happens with chance k(n-k)/(n(n-1)) for every pair, whatever the
    design, so the best S wins at least max_k of it: n/(4(n-1)) for even n
    (33.3% with 4 modalities, against 25% random).
    """
    if n_values < 2:
        return None
    k = n_values // 2
    return 100.0 * k * (n_values - k) / (n_values * (n_values - 1))


def _units_right(data: CategoryRows, policy: np.ndarray, rows: np.ndarray) -> int:
    """How many units all of whose questions (among `rows`) the policy answers right."""
    wrong = np.zeros(data.n_units, dtype=np.int64)
    np.add.at(wrong, data.unit[rows], (policy[data.key[rows]] != data.yes[rows]).astype(np.int64))
    return int((wrong[np.unique(data.unit[rows])] == 0).sum())


def fit_policy(data: CategoryRows, rows: np.ndarray, exhaustive_max: int = 10) -> np.ndarray:
    """The fixed answer per key (True = yes) that answers the most units of `rows` right.

    Exhaustive over every policy when there are at most `exhaustive_max` keys;
    otherwise each key's majority answer on `rows` (ties: no), then single-key
    flips in key order while the count of right units rises.
    """
    if data.n_keys <= exhaustive_max:
        best, best_right = np.zeros(data.n_keys, dtype=bool), -1
        for choice in range(2 ** data.n_keys):
            policy = ((choice >> np.arange(data.n_keys)) & 1).astype(bool)
            right = _units_right(data, policy, rows)
            if right > best_right:
                best, best_right = policy, right
        return best
    yes_votes = np.bincount(data.key[rows], weights=data.yes[rows], minlength=data.n_keys)
    totals = np.bincount(data.key[rows], minlength=data.n_keys)
    policy = 2 * yes_votes > totals
    return _local_search(data, rows, policy)


def _local_search(data: CategoryRows, rows: np.ndarray, policy: np.ndarray, max_passes: int = 50) -> np.ndarray:
    """Flip one key at a time while it answers more units right (deterministic: key order, first improvement)."""
    policy = policy.copy()
    wrong = np.zeros(data.n_units, dtype=np.int64)
    np.add.at(wrong, data.unit[rows], (policy[data.key[rows]] != data.yes[rows]).astype(np.int64))
    rows_of_key = [rows[data.key[rows] == k] for k in range(data.n_keys)]
    for _ in range(max_passes):
        improved = False
        for k, krows in enumerate(rows_of_key):
            if not len(krows):
                continue
            now_wrong = policy[k] != data.yes[krows]
            change = np.where(now_wrong, -1, 1)  # a flip rights what was wrong and wrongs what was right
            units, inverse = np.unique(data.unit[krows], return_inverse=True)
            delta_units = np.bincount(inverse, weights=change, minlength=len(units)).astype(np.int64)
            before, after = wrong[units] == 0, (wrong[units] + delta_units) == 0
            if int(after.sum()) > int(before.sum()):
                policy[k] = ~policy[k]
                wrong[units] += delta_units
                improved = True
        if not improved:
            break
    return policy


def _expected_right(data: CategoryRows, policy: np.ndarray, known: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per unit: the chance the policy answers all its questions (among `rows`) right; unknown keys count 0.5."""
    p = np.where(known[data.key[rows]], (policy[data.key[rows]] == data.yes[rows]).astype(float), 0.5)
    prod = np.ones(data.n_units)
    np.multiply.at(prod, data.unit[rows], p)
    return prod


def ceilings(data: CategoryRows, folds: int, exhaustive_max: int = 10) -> dict[str, np.ndarray]:
    """Per unit: right with the cross-fitted policy (expected), with the in-sample policy, and at random."""
    unit_fold_of_row = data.unit_fold[data.unit]
    crossed = np.zeros(data.n_units)
    for k in range(folds):
        held = np.flatnonzero(unit_fold_of_row == k)
        if not len(held):
            continue
        train = np.flatnonzero(unit_fold_of_row != k)
        known = np.bincount(data.key[train], minlength=data.n_keys) > 0
        policy = fit_policy(data, train, exhaustive_max)
        held_units = np.unique(data.unit[held])
        crossed[held_units] = _expected_right(data, policy, known, held)[held_units]
    everything = np.arange(len(data.key))
    in_sample = _expected_right(data, fit_policy(data, everything, exhaustive_max), np.ones(data.n_keys, bool), everything)
    sizes = np.bincount(data.unit, minlength=data.n_units)
    return {"cross_fitted": crossed, "in_sample": in_sample, "random": 0.5 ** sizes.astype(float)}


def _pct(values: np.ndarray) -> float | None:
    return float(100.0 * values.mean()) if len(values) else None


def _category_entry(by_text: CategoryRows, text_units: dict[str, np.ndarray], type_units: dict[str, np.ndarray],
                    category: str, unit: str) -> dict[str, Any]:
    """One category's figures; on the pair unit with one pair per unit, the floor no design can remove."""
    entry: dict[str, Any] = {"units": by_text.n_units, "questions": len(by_text.key), "keys": by_text.n_keys,
                             "random": _pct(text_units["random"]), "cross_fitted": _pct(text_units["cross_fitted"]),
                             "in_sample": _pct(text_units["in_sample"]), "type_keyed": _pct(type_units["cross_fitted"]),
                             "type_keyed_in_sample": _pct(type_units["in_sample"])}
    if unit == "pair" and category in PAIRED_CATEGORIES and category not in PER_IMAGE_CATEGORIES:
        entry["floor"] = pair_floor(by_text.n_keys)
    return entry


def blind_ceiling(questions: pd.DataFrame, folds: int = 5, exhaustive_max: int = 10, unit: str = "pair") -> dict[str, Any]:
    """The blind ceiling on `unit` per category, overall (categories weighted by their questions) and per image type.

    Every figure is a strict accuracy in percent: ``random`` (exact), ``cross_fitted``
    and ``in_sample`` for a policy keyed on the text, ``type_keyed`` (cross-fitted) and
    ``type_keyed_in_sample`` for one keyed on (image type, text); ``units`` is how many
    scored units, ``keys`` how many distinct texts, ``floor`` (pair unit, one pair per
    unit) the in-sample ceiling any design of that many values has (:func:`pair_floor`).
    """
    out: dict[str, Any] = {"unit": unit, "folds": folds, "exhaustive_max": exhaustive_max, "by_category": {},
                           "by_image_type": {}}
    names = ("random", "cross_fitted", "in_sample", "type_keyed")
    totals = {name: 0.0 for name in names}
    weight = units = 0
    for cat in CATEGORIES:
        by_text = category_rows(questions, cat, "text", folds, unit)
        if by_text is None:
            continue
        by_type = category_rows(questions, cat, "type_text", folds, unit)
        assert by_type is not None
        text_units = ceilings(by_text, folds, exhaustive_max)
        type_units = ceilings(by_type, folds, exhaustive_max)
        entry = _category_entry(by_text, text_units, type_units, cat, unit)
        out["by_category"][cat] = entry
        for name in names:
            totals[name] += float(entry[name] or 0.0) * entry["questions"]
        weight += entry["questions"]
        units += by_text.n_units
        for itype in sorted(set(by_text.unit_type.tolist())):
            mask = by_text.unit_type == itype
            out["by_image_type"].setdefault(itype, {})[cat] = {
                "units": int(mask.sum()), "random": _pct(text_units["random"][mask]),
                "cross_fitted": _pct(text_units["cross_fitted"][mask]),
                "type_keyed": _pct(type_units["cross_fitted"][by_type.unit_type == itype]),
            }
    out["overall"] = {name: (value / weight if weight else None) for name, value in totals.items()}
    out["overall"].update(questions=weight, units=units)
    return out


def blind_ceilings(questions: pd.DataFrame, folds: int = 5, exhaustive_max: int = 10) -> dict[str, Any]:
    """The blind ceiling on both units: ``pair`` always, ``contrast`` when the table has contrast pairs (else None)."""
    contrast = None
    if "contrast_id" in questions.columns and questions["contrast_id"].notna().any():
        contrast = blind_ceiling(questions, folds, exhaustive_max, "contrast")
    return {"pair": blind_ceiling(questions, folds, exhaustive_max, "pair"), "contrast": contrast}


def ceiling_failures(ceiling: dict[str, Any], max_margin: float) -> list[str]:
    """The gate's reasons: the cross-fitted ceiling above exact random by more than `max_margin` points in a
    category or overall, or the type-keyed one for condition or position."""
    failures = []
    label = UNIT_LABELS.get(ceiling.get("unit", "pair"), "")
    entries = [*ceiling["by_category"].items(), ("overall", ceiling["overall"])]
    for name, entry in entries:
        checks = [("cross_fitted", "a blind fixed answer per text")]
        if name in ("condition", "position"):
            checks.append(("type_keyed", "a blind fixed answer per (image type, text)"))
        for field, what in checks:
            acc, rnd = entry.get(field), entry.get("random")
            if acc is not None and rnd is not None and acc - rnd > max_margin:
                failures.append(f"{name}: {what}, learnt on {ceiling['folds'] - 1}/{ceiling['folds']} of the images, "
                                f"scores {acc:.1f}% strict on the rest, {acc - rnd:.1f} points above exact random "
                                f"({rnd:.1f}%; audit.max_oracle_margin = {max_margin:g}; unit: {label})")
    return failures
