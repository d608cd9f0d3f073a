"""The blind ceiling: the best strict accuracy a model that never looks at the image can learn, per unit.

A model without the image can still commit to one answer per question text
("Is this an X-ray? yes", "Is there a glioma? yes, a meningioma? no"). Per-text
majority says nothing once every text is answered yes as often as no; what
matters is whether a *fixed answer table* wins whole units. Think of a set's
pairs as a directed graph from the true value to the false one: a table
answering yes to the values in S wins every pair it cuts (truth in S, adversary
not), so "X-ray? yes, CT? no, MRI? no" wins every X-ray pair of a set that never
asks an X-ray image about anything but CT and MRI.

So the ceiling is a *search*, not a majority. Per category and unit
(:data:`UNITS`: each within-image pair, the paper's per-image all-or-nothing
unit for condition and position, single questions, contrast pairs), the best
fixed table key -> yes/no for that unit's accuracy is fitted on 4/5 of the
images and scored on the rest. The folds are stratified (:func:`stratified_folds`):
images with the same questions and answers in the category are dealt to the folds
in turn. Why: on a design balanced exactly (as many "left? yes" as "right? yes"),
folds split at random mirror each other, so a table fitted on four of them answers
the fifth the wrong way round, and the estimate falls below what "left? yes,
anything else no", fixed in advance, scores (32.5% against 50% on 40 such pairs).
The learners:

* keys (:data:`KEYS`): the normalised text; (image type, text); (source, text).
  Each table is used trusting every key, or only keys the training folds asked
  at least 5 or 20 times (:data:`SUPPORTS`); an untrusted key backs off to the
  text table, then to a guess (0.5 per question, an exact expectation) or, in
  two more variants, to a fixed no or a fixed yes (:data:`UNSEEN`);
* the search (:func:`best_table`): every table when there are at most
  ``exhaustive_max`` keys, else coordinate ascent on whole units right (flip the
  key that rights more units than it breaks) from several starts (each key's
  majority, all yes, all no, seeded random ones), keeping the best;
* each table fitted twice: the best on the training folds, and the first in a
  fixed order among those within :data:`NEAR_TIE` of it (a near tie is fold noise);
  for the per-image unit, each also fitted to win the image's pairs one by one
  (``:pairs``): that objective is smoother, and its table can win more images
  than the one fitted on whole images (36.2 against 34.5 on the default subset's
  condition images);
* a learnt text-only model (``words``): a logistic regression over the words and
  word pairs of the text, cross-fitted alike, answering its more likely answer;
  and the project's blind baseline (``blind``) where the audit ran it;
* for a subset, with ``reference`` (the full set it was drawn from): every table
  fitted on the full set's other images (``:reference``). A subset of a released
  set is answerable by what the rest of it teaches, and a few dozen of its own
  units teach little (the default subset's condition pairs: 25.0 learnt on its
  own folds, 34.9 learnt on the rest).

The ceiling is the highest of them (``reached_by`` names which). Two exceptions
are reported, never counted: a key that names the answer (the image type or
source tells modality and organ: that is looking at the image,
:func:`not_blind`), and a unit whose answer is fixed by construction
(:data:`BY_CONSTRUCTION`). Beside it: exact random, and for a unit of one pair
over n values the floor no design can go below, n/(4(n-1)) (:func:`pair_floor`).
The bar a ceiling is judged against (:attr:`CeilingCell.bar`) is that floor for
modality and organ pairs and exact random elsewhere.

:class:`BlindCeiling` is the typed result (``to_json`` / ``from_json``: the
audit's ``blind_ceiling`` section) that the gate, the report, the card and the
headline read.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from probmed.benchmark.audit.oracle import normalise_text
from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES, PER_IMAGE_CATEGORIES

UNITS = ("pair", "image", "single", "contrast")
UNIT_LABELS = {
    "pair": "within-image pairs, each on its own",
    "image": "per image, all pairs of the category together (the paper's unit for condition and position)",
    "single": "single questions",
    "contrast": "contrast pairs (one text, two images)",
}
KEYS = ("text", "type_text", "source_text")
KEY_LABELS = {"text": "text", "type_text": "image type + text", "source_text": "source + text"}
# a key is trusted where the training folds asked it this often (else: the text table, then a guess). Why more
# than one: a rare key's training answers are noise, so the table that trusts every key can score below one that
# trusts only the common ones; every variant is a learner and the best counts
SUPPORTS = (1, 5, 20)
# a second fit of every table takes, among the tables within this share of the training units of the best, the
# first in a fixed order (binary order of the keys; the first start of the ascent). Why: where two tables tie in
# the whole set ("left? yes" and "right? yes" on a two-sided design), the folds' counts differ from the tie by a
# unit or two, always against the held-out fold (58 of each side over 5 folds: 12/11 per fold), so the best
# training table is the held-out fold's worse one (48.3% against the 50% a fixed "left? yes" wins)
NEAR_TIE = 0.02
# what a key no trusted table answers gets: a guess (0.5 per question), or always no, or always yes. Why the fixed
# answers: a subset answered with a table learnt on the rest of its set meets texts the rest never asked, and these
# are not a coin toss (an independent auditor's "unseen -> yes", fitted on pairs, won 36.2% of the default subset's
# condition images against the estimator's 33.6%: 1.5 of 58 units, beyond the point an estimator may be beaten by)
UNSEEN: tuple[bool | None, ...] = (None, False, True)


def table_name(key: str, min_support: int, near_ties: bool = False, reference: bool = False,
               unseen: bool | None = None, on_pairs: bool = False) -> str:
    """A table learner's name: ``table:<key>`` (every key trusted) or ``table:<key>:<min support>``, then
    ``:ties`` for the fit that breaks near ties in a fixed order (:data:`NEAR_TIE`), ``:reference`` for one
    fitted on the reference set's other images (:func:`reference_scores`) and ``:unseen-no`` / ``:unseen-yes``
    for a fixed answer where no trusted key answers (:data:`UNSEEN`); ``:pairs`` for a per-image table fitted to
    win the image's pairs one by one (:attr:`UnitRows.pair`)."""
    name = f"table:{key}" if min_support == 1 else f"table:{key}:{min_support}"
    return (name + (":ties" if near_ties else "") + (":reference" if reference else "")
            + ("" if unseen is None else f":unseen-{'yes' if unseen else 'no'}") + (":pairs" if on_pairs else ""))


def table_key(name: str) -> str | None:
    """The key a table learner is keyed on (``table:source_text:5:ties`` -> ``source_text``); None for another."""
    return name.split(":")[1] if name.startswith("table:") else None


def learner_label(name: str) -> str:
    """What a learner is, in words."""
    if (key := table_key(name)) is not None:
        rest = name.split(":")[2:]
        support = [r for r in rest if r.isdigit()]
        return (f"a fixed answer table keyed on {KEY_LABELS.get(key, key.replace('_', ' + '))}"
                + (f" (keys asked at least {support[0]} times in training)" if support else "")
                + (" (near ties broken in a fixed order)" if "ties" in rest else "")
                + (", learnt on the full set's other images" if "reference" in rest else "")
                + "".join(f", answering {r[len('unseen-'):]} to a text it was not taught" for r in rest
                          if r.startswith("unseen-"))
                + (", fitted to win each pair" if "pairs" in rest else ""))
    return {"words": "a logistic regression on the text's words", "blind": "the project's blind baseline"}.get(name, name)


def not_blind(category: str, name: str) -> bool:
    """Whether a learner sees what the question asks: the image type and the source name the modality and organ."""
    return category in ("modality", "organ") and table_key(name) in ("type_text", "source_text")
BY_CONSTRUCTION = {
    ("condition", "single"): "a normal image's hallucinated finding is always no: always-no scores 100 on these "
                             "questions, which is why the scorer reports them beside the pairs, never in strict accuracy",
}
FLOOR_CATEGORIES = ("modality", "organ")  # pairs over a handful of values: judged against the floor, not random


def paper_unit(category: str) -> str:
    """The unit the scorer's strict accuracy uses for `category` (scoring.metrics)."""
    if category not in PAIRED_CATEGORIES:
        return "single"
    return "image" if category in PER_IMAGE_CATEGORIES else "pair"


def category_units(category: str) -> tuple[str, ...]:
    """The units a category is scored on: its pairs, per image, its single questions, contrast pairs."""
    if category not in PAIRED_CATEGORIES:
        return ("single", "contrast")
    own = ("pair", "image") if category in PER_IMAGE_CATEGORIES else ("pair",)
    return (*own, "single", "contrast")


# --- one category on one unit as arrays ------------------------------------------------------------------------


@dataclass(frozen=True)
class UnitRows:
    """One category's questions on one unit: per row its text, its keys, its unit and answer; per unit its fold."""

    rows: np.ndarray  # the rows' positions in the question table
    text: np.ndarray  # normalised text per row
    keys: dict[str, np.ndarray]  # key name -> key code per row (text codes are the back-off of the others)
    labels: dict[str, np.ndarray]  # key name -> the key itself per row (a string: codes differ between sets)
    n_keys: dict[str, int]
    unit: np.ndarray  # unit code per row (0..n_units-1)
    n_units: int
    yes: np.ndarray  # bool: the true answer is yes
    unit_fold: np.ndarray  # fold of each unit (that of its first image by id: stratified_folds)
    unit_type: np.ndarray  # image type of each unit (that of its first image)
    unit_source: np.ndarray  # source of each unit (that of its first image)
    pair: np.ndarray | None = None  # per-image units: each row's within-image pair (a table is fitted on those too)

    @property
    def row_fold(self) -> np.ndarray:
        return self.unit_fold[self.unit]

    @property
    def objectives(self) -> tuple[bool, ...]:
        """What a table is fitted to win: the units (False) and, for per-image units, also their pairs (True)."""
        return (False, True) if self.pair is not None else (False,)

    def fit_unit(self, on_pairs: bool) -> np.ndarray:
        """The units a table is fitted to win: each row's pair when `on_pairs` (and there are pairs), else its unit."""
        return self.pair if on_pairs and self.pair is not None else self.unit


def _unit_labels(questions: pd.DataFrame, category: str, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(row positions, unit label per row) of `category` on `unit`."""
    cats = questions["category"].to_numpy(dtype=object)
    single = (questions["polarity"].astype(str) == "single").to_numpy(dtype=bool)
    mine = cats == category
    if unit == "contrast":
        if "contrast_id" not in questions.columns:
            return np.array([], dtype=np.int64), np.array([], dtype=object)
        ids = questions["contrast_id"].to_numpy(dtype=object)
        rows = np.flatnonzero(mine & pd.notna(ids))
        return rows, ids[rows].astype(str)
    if unit == "single":
        rows = np.flatnonzero(mine & (single | (category not in PAIRED_CATEGORIES)))
        return rows, rows.astype(str)
    if category not in PAIRED_CATEGORIES or (unit == "image" and category not in PER_IMAGE_CATEGORIES):
        return np.array([], dtype=np.int64), np.array([], dtype=object)
    rows = np.flatnonzero(mine & ~single)
    if unit == "pair":
        return rows, questions["pair_id"].astype(str).to_numpy(dtype=object)[rows]
    from probmed.scoring.metrics import prepare  # the scorer's own units (VQA-RAD pairs stay pairs)

    prep = prepare(questions, pd.DataFrame({"qid": pd.Series([], dtype=object), "label": pd.Series([], dtype=object)}))
    rows = rows[prep.unit[rows] >= 0]
    return rows, prep.unit[rows].astype(str)


def unit_rows(questions: pd.DataFrame, category: str, unit: str, folds: int,
              prefixes: Mapping[str, np.ndarray] | None = None) -> UnitRows | None:
    """The questions of `category` on `unit` as arrays; None when the category has no such unit in the set.

    The keys are the text, (image type, text) and (source, text), or with `prefixes` (key name -> a string per
    question of the table) the text and (prefix, text) per prefix instead."""
    if unit not in UNITS:
        raise ValueError(f"blind ceiling: unknown unit {unit!r}; known: {', '.join(UNITS)}")
    rows, unit_of = _unit_labels(questions, category, unit)
    if not len(rows):
        return None
    sub = questions.iloc[rows]
    text = sub["question"].map(normalise_text).to_numpy(dtype=object)
    itype = sub["image_type"].astype(str).to_numpy(dtype=object)
    source = (sub["source"] if "source" in sub.columns else pd.Series([""] * len(sub))).astype(str).to_numpy(dtype=object)
    text_code, text_uniques = pd.factorize(text, sort=True)
    keys, n_keys, labels = {"text": text_code.astype(np.int64)}, {"text": len(text_uniques)}, {"text": text}
    named = {"type_text": itype, "source_text": source} if prefixes is None else \
        {name: np.asarray(values, dtype=object)[rows] for name, values in prefixes.items()}
    for name, prefix in named.items():
        labels[name] = prefix + "\x1f" + text
        code, uniques = pd.factorize(labels[name], sort=True)
        keys[name], n_keys[name] = code.astype(np.int64), len(uniques)
    unit_values, unit_code = np.unique(unit_of, return_inverse=True)
    image_ids = sub["image_id"].astype(str).to_numpy(dtype=object)
    order = np.lexsort((image_ids, unit_code))  # per unit, its rows by image id: the first is the unit's image
    first_row = order[np.unique(unit_code[order], return_index=True)[1]]
    yes = (sub["answer"] == "yes").to_numpy(dtype=bool)
    fold = stratified_folds(image_ids[first_row][unit_code], keys["text"], yes, folds)[first_row]
    pair = pd.factorize(sub["pair_id"].astype(str))[0].astype(np.int64) if unit == "image" else None
    return UnitRows(rows=rows, text=text, keys=keys, labels=labels, n_keys=n_keys, unit=unit_code.astype(np.int64),
                    n_units=len(unit_values), yes=yes, unit_fold=fold,
                    unit_type=itype[first_row], unit_source=source[first_row], pair=pair)


def stratified_folds(image: np.ndarray, text: np.ndarray, yes: np.ndarray, folds: int) -> np.ndarray:
    """The fold of each row's image: images with the same questions and answers (their sorted (text, answer)
    rows, the image's *pattern*) are dealt to the folds in turn, in the order of a hash of their id, one running
    count across patterns (so singletons spread too). Every fold then holds about 1/folds of each pattern, and a
    table fitted on the other folds sees the held-out fold's balance, not its mirror image."""
    pattern: dict[str, list[str]] = {}
    for i, t, y in zip(image.tolist(), text.tolist(), yes.tolist()):
        pattern.setdefault(i, []).append(f"{t}:{int(y)}")
    by_pattern: dict[str, list[str]] = {}
    for i, rows in pattern.items():
        by_pattern.setdefault(",".join(sorted(rows)), []).append(i)
    image_fold_of, turn = {}, 0
    for key in sorted(by_pattern):
        for i in sorted(by_pattern[key], key=lambda i: hashlib.sha256(i.encode()).hexdigest()):
            image_fold_of[i] = turn % folds
            turn += 1
    return np.array([image_fold_of[i] for i in image.tolist()], dtype=np.int64)


def design_floor(data: UnitRows, units: np.ndarray | None = None, key: str = "text") -> float | None:
    """The in-sample ceiling no design of these pairs' truths can go below (percent) for a table keyed on `key`,
    over `units` (a mask; default every unit): the pairs joined by their keys fall into separate groups of
    values (each brain tumour's sides; the three tumour types; the modalities), a table answers each group on
    its own, so the floor is each group's :func:`pair_floor`, weighted by its share of the units. "Is the glioma
    on the left?" and "Is the meningioma on the left?" are asked of different tumours: two groups of two
    values, floor 50, not the 33.3 of four values. A lower bound where a group's values are not all asked of
    each other (ChestX-ray14's overlap group: the least share is then higher)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    mask = np.ones(data.n_units, dtype=bool) if units is None else units
    rows = np.flatnonzero(mask[data.unit])
    if not len(rows):
        return None
    text, unit = data.keys[key][rows], data.unit[rows]
    order = np.lexsort((text, unit))
    text, unit = text[order], unit[order]
    same = unit[1:] == unit[:-1]  # consecutive rows of one unit: their texts are joined
    n = data.n_keys[key]
    graph = coo_matrix((np.ones(int(same.sum())), (text[:-1][same], text[1:][same])), shape=(n, n))
    _, group = connected_components(graph, directed=False)
    first = np.unique(unit, return_index=True)[1]
    unit_group = group[text[first]]
    values = np.bincount(group[np.unique(text)], minlength=group.max() + 1)
    floors = np.array([pair_floor(int(v)) or 0.0 for v in values])
    return float(floors[unit_group].mean())


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


# --- the search ------------------------------------------------------------------------------------------------


def units_right(key: np.ndarray, unit: np.ndarray, yes: np.ndarray, table: np.ndarray) -> int:
    """How many units all of whose rows the table (key -> answer yes) answers right."""
    wrong = np.bincount(unit, weights=(table[key] != yes), minlength=int(unit.max()) + 1 if len(unit) else 0)
    present = np.bincount(unit, minlength=len(wrong)) > 0
    return int(((wrong == 0) & present).sum())


def _exhaustive(key: np.ndarray, unit: np.ndarray, yes: np.ndarray, n_keys: int, tolerance: int = 0) -> np.ndarray:
    """The best table over every one of the 2^n_keys: the first in binary order within `tolerance` units of
    the most."""
    from scipy.sparse import csr_matrix

    _, unit = np.unique(unit, return_inverse=True)
    n_units = int(unit.max()) + 1
    member = csr_matrix((np.ones(len(unit)), (np.arange(len(unit)), unit)), shape=(len(unit), n_units))
    chunk, rights = 1024, []
    for start in range(0, 2 ** n_keys, chunk):
        tables = _tables(np.arange(start, min(start + chunk, 2 ** n_keys)), n_keys)
        wrong = (tables[:, key] != yes[None, :]).astype(float)  # (choices, rows)
        rights.append(((member.T @ wrong.T).T == 0).sum(axis=1))  # (choices,)
    right = np.concatenate(rights)
    first = int(np.flatnonzero(right >= right.max() - tolerance)[0])
    return _tables(np.array([first]), n_keys)[0]


def _tables(choices: np.ndarray, n_keys: int) -> np.ndarray:
    """Tables numbered in binary order (bit k: key k answered yes), one row per number."""
    return ((choices[:, None] >> np.arange(n_keys)[None, :]) & 1).astype(bool)


def _ascend(per_key: list[tuple[np.ndarray, np.ndarray, np.ndarray]], wrong: np.ndarray, table: np.ndarray,
            rng: np.random.Generator, max_passes: int = 100) -> np.ndarray:
    """Coordinate ascent: flip any key that rights more units than it breaks, in a seeded order, until none does."""
    table = table.copy()
    keys = [k for k, (u, _, _) in enumerate(per_key) if len(u)]
    for _ in range(max_passes):
        improved = False
        for k in rng.permutation(keys):
            units, n_yes, n_no = per_key[k]
            delta = (n_yes - n_no) if table[k] else (n_no - n_yes)  # a flip wrongs what was right, rights the rest
            gain = int(((wrong[units] + delta) == 0).sum()) - int((wrong[units] == 0).sum())
            if gain > 0:
                table[k] = ~table[k]
                wrong[units] += delta
                improved = True
        if not improved:
            break
    return table


def best_table(key: np.ndarray, unit: np.ndarray, yes: np.ndarray, n_keys: int, seed: int = 0,
               exhaustive_max: int = 12, restarts: int = 8, tolerance: int = 0) -> np.ndarray:
    """The fixed answer per key (True = yes) that answers the most whole units right.

    Exhaustive when there are at most `exhaustive_max` keys (the exact optimum);
    otherwise coordinate ascent from each key's majority, all no, all yes and
    `restarts` seeded random tables, the best of them. Ties, and tables within
    `tolerance` units of the best: the first in binary order, or the first start.
    """
    if not len(key):
        return np.zeros(n_keys, dtype=bool)
    if n_keys <= exhaustive_max:
        return _exhaustive(key, unit, yes, n_keys, tolerance)
    _, unit = np.unique(unit, return_inverse=True)
    n_units = int(unit.max()) + 1
    cells, inverse = np.unique(key * n_units + unit, return_inverse=True)  # (key, unit) cells, sorted by key
    n_yes = np.bincount(inverse, weights=yes).astype(np.int64)
    n_no = np.bincount(inverse, weights=~yes).astype(np.int64)
    bounds = np.searchsorted(cells // n_units, np.arange(n_keys + 1))
    per_key = [(cells[a:b] % n_units, n_yes[a:b], n_no[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    rng = np.random.default_rng(seed)
    votes, totals = np.bincount(key, weights=yes, minlength=n_keys), np.bincount(key, minlength=n_keys)
    starts = [2 * votes > totals, np.zeros(n_keys, bool), np.ones(n_keys, bool)]
    starts += [rng.random(n_keys) < 0.5 for _ in range(restarts)]
    tables, rights = [], []
    for start in starts:
        wrong = np.bincount(unit, weights=(start[key] != yes), minlength=n_units).astype(np.int64)
        tables.append(_ascend(per_key, wrong, start, rng))
        rights.append(units_right(key, unit, yes, tables[-1]))
    return tables[next(i for i, r in enumerate(rights) if r >= max(rights) - tolerance)]


# --- cross-fitting ---------------------------------------------------------------------------------------------


def _per_unit(data: UnitRows, p_correct: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per unit: the chance all its rows (among `rows`) are right, from each row's chance."""
    prod = np.ones(data.n_units)
    np.multiply.at(prod, data.unit[rows], p_correct)
    return prod


@dataclass(frozen=True)
class _Fitted:
    """A table fitted on some rows, and how often the rows asked each of its keys."""

    table: np.ndarray
    support: np.ndarray

    @classmethod
    def on(cls, data: UnitRows, name: str, train: np.ndarray, seed: int, exhaustive_max: int,
           near_ties: bool = False, on_pairs: bool = False) -> "_Fitted":
        key, n_keys, unit = data.keys[name], data.n_keys[name], data.fit_unit(on_pairs)
        tolerance = max(1, round(NEAR_TIE * len(np.unique(unit[train])))) if near_ties else 0
        return cls(best_table(key[train], unit[train], data.yes[train], n_keys, seed, exhaustive_max,
                              tolerance=tolerance), np.bincount(key[train], minlength=n_keys))


def _table_chances(data: UnitRows, name: str, fitted: Mapping[str, _Fitted], rows: np.ndarray,
                   min_support: int, unseen: bool | None = None) -> np.ndarray:
    """Each row of `rows` right with the table keyed on `name`, trusting a key only where the training folds asked
    it at least `min_support` times (else backing off to the text table, then to a guess, or to `unseen`)."""
    p = np.full(len(rows), np.nan)
    for each in (name, "text"):  # the table's own key first, then the text's
        key, table = data.keys[each][rows], fitted[each]
        trusted = np.isnan(p) & (table.support[key] >= min_support)
        p = np.where(trusted, (table.table[key] == data.yes[rows]).astype(float), p)
    fallback = 0.5 if unseen is None else (data.yes[rows] == unseen).astype(float)
    return np.where(np.isnan(p), fallback, p)


def _variant_scores(data: UnitRows, fitted: Mapping[str, _Fitted], rows: np.ndarray, supports: Sequence[int],
                    near_ties: bool = False, reference: bool = False, on_pairs: bool = False) -> dict[str, np.ndarray]:
    """Per table learner that uses these fitted tables (every key, support and :data:`UNSEEN` answer), per unit:
    the chance it is right on `rows`."""
    return {table_name(name, m, near_ties, reference, u, on_pairs):
            _per_unit(data, _table_chances(data, name, fitted, rows, m, u), rows)
            for name in data.keys for m in supports for u in UNSEEN}


def _words_chances(data: UnitRows, train: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each row of `rows` right with the more likely answer of a logistic regression on the words of the text."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    y = data.yes[train]
    if y.all() or not y.any():
        return (data.yes[rows] == bool(y.all())).astype(float) if len(y) else np.full(len(rows), 0.5)
    words = CountVectorizer(ngram_range=(1, 2), binary=True, token_pattern=r"[a-z0-9]+")
    x = words.fit_transform(data.text[train])
    model = LogisticRegression(C=1.0, solver="liblinear").fit(x, y)
    p = model.predict_proba(words.transform(data.text[rows]))[:, 1]
    return np.where(np.isclose(p, 0.5), 0.5, ((p > 0.5) == data.yes[rows]).astype(float))


def learner_scores(data: UnitRows, folds: int, seed: int = 0, exhaustive_max: int = 12,
                   blind_p_yes: np.ndarray | None = None, supports: Sequence[int] = SUPPORTS) -> dict[str, np.ndarray]:
    """Per learner, per unit: the chance it is right held out (each fold fitted on the others)."""
    keys = list(data.keys)
    fits = [(t, p) for p in data.objectives for t in (False, True)]
    names = [table_name(k, m, t, unseen=u, on_pairs=p) for k in keys for t, p in fits for m in supports
             for u in UNSEEN] + ["words"]
    out = {name: np.zeros(data.n_units) for name in names}
    row_fold = data.row_fold
    for k in range(folds):
        held = np.flatnonzero(row_fold == k)
        if not len(held):
            continue
        train = np.flatnonzero(row_fold != k)
        held_units = np.unique(data.unit[held])
        for near_ties, on_pairs in fits:
            fitted = {name: _Fitted.on(data, name, train, seed + k, exhaustive_max, near_ties, on_pairs)
                      for name in keys}
            for learner, per_unit in _variant_scores(data, fitted, held, supports, near_ties=near_ties,
                                                     on_pairs=on_pairs).items():
                out[learner][held_units] = per_unit[held_units]
        out["words"][held_units] = _per_unit(data, _words_chances(data, train, held), held)[held_units]
    if blind_p_yes is not None:  # cross-fitted by the blind backend itself: its more likely answer
        everything = np.arange(len(data.yes))
        p = np.where(np.isclose(blind_p_yes, 0.5), 0.5, ((blind_p_yes > 0.5) == data.yes).astype(float))
        out["blind"] = _per_unit(data, p, everything)
    return out


def reference_scores(data: UnitRows, reference: UnitRows, seed: int = 0, exhaustive_max: int = 12,
                     supports: Sequence[int] = SUPPORTS) -> dict[str, np.ndarray]:
    """Per table learner fitted on `reference` (another set's units: the full set's images outside an evaluated
    subset), per unit of `data`: the chance it is right. Why: a subset of a released set can be answered with a
    table learnt on the rest of it, and a few dozen units of the subset alone are too few to learn it from."""
    everything, out = np.arange(len(data.yes)), {}
    for on_pairs in reference.objectives:
        unit, fitted = reference.fit_unit(on_pairs), {}
        for name in data.keys:
            union, codes = np.unique(np.concatenate([reference.labels[name], data.labels[name]]), return_inverse=True)
            theirs, ours = codes[:len(reference.yes)], codes[len(reference.yes):]
            table = best_table(theirs, unit, reference.yes, len(union), seed, exhaustive_max)
            support = np.bincount(theirs, minlength=len(union))
            own_table = np.zeros(data.n_keys[name], dtype=bool)
            own_support = np.zeros(data.n_keys[name], dtype=np.int64)
            own_table[data.keys[name]], own_support[data.keys[name]] = table[ours], support[ours]
            fitted[name] = _Fitted(own_table, own_support)
        out.update(_variant_scores(data, fitted, everything, supports, reference=True, on_pairs=on_pairs))
    return out


def in_sample(data: UnitRows, seed: int = 0, exhaustive_max: int = 12) -> float:
    """The best text table chosen with every answer in hand (percent): an upper bound, not a model."""
    key = data.keys["text"]
    table = best_table(key, data.unit, data.yes, data.n_keys["text"], seed, exhaustive_max)
    return 100.0 * units_right(key, data.unit, data.yes, table) / data.n_units


# --- the typed result ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CeilingCell:
    """The blind ceiling of one category on one unit, beside exact random and the floor.

    ``learners``: every learner's cross-fitted strict accuracy (%); ``ceiling`` the highest of those that count
    (``not_blind`` names the ones that do not: their key names the answer), reached by ``reached_by``;
    ``bar`` is what the ceiling is judged against (``"floor"`` for modality and organ pairs, else ``"random"``),
    ``margin`` how far above it the ceiling is; ``exempt`` says why the gate does not check the cell.
    """

    category: str
    unit: str
    units: int
    questions: int
    texts: int
    random: float
    floor: float | None
    ceiling: float
    reached_by: str
    learners: dict[str, float]
    in_sample: float
    bar: str = "random"
    not_blind: tuple[str, ...] = ()
    exempt: str | None = None
    by_image_type: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_source: dict[str, dict[str, Any]] = field(default_factory=dict)  # units, random, floor, ceiling, reached_by

    @property
    def bar_value(self) -> float:
        return self.floor if self.bar == "floor" and self.floor is not None else self.random

    @property
    def margin(self) -> float:
        return self.ceiling - self.bar_value

    @property
    def paper_unit(self) -> bool:
        return paper_unit(self.category) == self.unit

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["not_blind"] = list(self.not_blind)
        out.update(bar_value=self.bar_value, margin=self.margin, paper_unit=self.paper_unit)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CeilingCell":
        names = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in names}
        values["not_blind"] = tuple(values.get("not_blind") or ())
        return cls(**values)


@dataclass(frozen=True)
class BlindCeiling:
    """Every (category, unit) cell of a set's blind ceiling: the audit's ``blind_ceiling`` section."""

    folds: int
    cells: tuple[CeilingCell, ...]
    learners: tuple[str, ...] = ()

    def cell(self, category: str, unit: str) -> CeilingCell | None:
        return next((c for c in self.cells if c.category == category and c.unit == unit), None)

    def paper(self, category: str) -> CeilingCell | None:
        """The cell of the unit the scorer's strict accuracy uses for `category`."""
        return self.cell(category, paper_unit(category))

    def to_json(self) -> dict[str, Any]:
        """JSON: the cells, and ``by_category`` (the paper unit's cell per category, for readers of one number)."""
        by_category = {c.category: {"unit": c.unit, "units": c.units, "random": c.random, "floor": c.floor,
                                    "ceiling": c.ceiling, "reached_by": c.reached_by, "bar_value": c.bar_value,
                                    "margin": c.margin} for c in self.cells if c.paper_unit}
        return {"folds": self.folds, "learners": list(self.learners), "units": list(UNITS),
                "cells": [c.to_json() for c in self.cells], "by_category": by_category}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> "BlindCeiling | None":
        """The typed result of an audit's ``blind_ceiling`` section; None for an audit without one (or older)."""
        if not data or "cells" not in data:
            return None
        return cls(folds=int(data["folds"]), cells=tuple(CeilingCell.from_json(c) for c in data["cells"]),
                   learners=tuple(data.get("learners") or ()))


def _pct(values: np.ndarray) -> float:
    return float(100.0 * values.mean()) if len(values) else 0.0


def _cell(data: UnitRows, category: str, unit: str, scores: Mapping[str, np.ndarray], seed: int,
          exhaustive_max: int) -> CeilingCell:
    sizes = np.bincount(data.unit, minlength=data.n_units)
    random = 0.5 ** sizes.astype(float)
    learners = {name: _pct(v) for name, v in scores.items()}
    looking = tuple(n for n in learners if not_blind(category, n))
    counted = {n: v for n, v in learners.items() if n not in looking}
    reached_by = max(counted, key=lambda n: (counted[n], -list(counted).index(n)))
    # the floor of the keys a counted table uses (a table keyed on the source keeps sources apart: higher)
    floor_keys = [k for k in data.keys if table_name(k, 1) not in looking] if unit == "pair" and \
        category in PAIRED_CATEGORIES else []

    def floor_of(mask: np.ndarray | None = None) -> float | None:
        return max((f for k in floor_keys if (f := design_floor(data, mask, k)) is not None), default=None)

    floor = floor_of()
    by_type: dict[str, dict[str, Any]] = {}
    for itype in sorted(set(data.unit_type.tolist())):
        mask = data.unit_type == itype
        by_type[itype] = {"units": int(mask.sum()), "random": _pct(random[mask]),
                          **{name: _pct(v[mask]) for name, v in scores.items()}}
    by_source: dict[str, dict[str, Any]] = {}
    for src in sorted(set(data.unit_source.tolist())):
        mask = data.unit_source == src
        best = max(counted, key=lambda n: (_pct(scores[n][mask]), -list(counted).index(n)))
        by_source[src] = {"units": int(mask.sum()), "random": _pct(random[mask]),
                          "floor": floor_of(mask),
                          "ceiling": _pct(scores[best][mask]), "reached_by": best}
    return CeilingCell(category=category, unit=unit, units=data.n_units, questions=len(data.yes),
                       texts=data.n_keys["text"], random=_pct(random), floor=floor, ceiling=counted[reached_by],
                       reached_by=reached_by, learners=learners, in_sample=in_sample(data, seed, exhaustive_max),
                       bar="floor" if category in FLOOR_CATEGORIES and unit == "pair" and floor is not None else "random",
                       not_blind=looking, exempt=BY_CONSTRUCTION.get((category, unit)), by_image_type=by_type,
                       by_source=by_source)


def blind_ceiling(questions: pd.DataFrame, folds: int = 5, seed: int = 0, exhaustive_max: int = 12,
                  blind_p_yes: np.ndarray | None = None, units: Sequence[str] = UNITS,
                  reference: pd.DataFrame | None = None) -> BlindCeiling:
    """The blind ceiling of every category on every unit it has (module docstring); with `reference` (the full
    set a subset was drawn from) the tables learnt on its images outside `questions` count too."""
    from probmed.infra.progress import progress

    cells = []
    plan = [(cat, unit) for cat in CATEGORIES for unit in category_units(cat) if unit in units]
    for cat, unit in progress(plan, desc="blind ceiling", unit="cell"):
        data = unit_rows(questions, cat, unit, folds)
        if data is None:
            continue
        blind = None if blind_p_yes is None else np.asarray(blind_p_yes, dtype=float)[data.rows]
        scores = learner_scores(data, folds, seed, exhaustive_max, blind)
        theirs = None if reference is None else unit_rows(reference, cat, unit, folds)
        if theirs is not None:
            scores.update(reference_scores(data, theirs, seed, exhaustive_max))
        cells.append(_cell(data, cat, unit, scores, seed, exhaustive_max))
    learners = tuple(dict.fromkeys(n for c in cells for n in c.learners))
    return BlindCeiling(folds=folds, cells=tuple(cells), learners=learners)


def beats_bar(cell: CeilingCell, alpha: float) -> bool:
    """Whether the cell's ceiling is above its bar beyond chance: a one-sided binomial test of its units right
    against the bar's rate (the highest of a dozen learners on a few units beats any bar by luck)."""
    from scipy.stats import binomtest

    right = int(round(cell.ceiling / 100.0 * cell.units))
    return bool(binomtest(right, cell.units, min(max(cell.bar_value / 100.0, 0.0), 1.0), "greater").pvalue < alpha)


def ceiling_failures(ceiling: BlindCeiling, max_margin: float, units: Sequence[str] = UNITS,
                     alpha: float = 1.0) -> tuple[list[str], list[str]]:
    """(the gate's reasons, cells too small to tell): a cell of `units` whose ceiling is more than `max_margin`
    points above its bar fails, unless a binomial test at `alpha` cannot tell it from the bar (then it is listed
    as unchecked; alpha 1 checks every cell)."""
    failures, unchecked = [], []
    for c in ceiling.cells:
        if c.unit not in units or c.exempt or c.margin <= max_margin:
            continue
        line = (f"{c.category} ({UNIT_LABELS[c.unit]}): {learner_label(c.reached_by)}, learnt on {ceiling.folds - 1}/"
                f"{ceiling.folds} of the images, scores {c.ceiling:.1f}% strict on the rest, {c.margin:.1f} points above "
                f"{'the floor' if c.bar == 'floor' else 'exact random'} ({c.bar_value:.1f}%")
        if alpha < 1.0 and not beats_bar(c, alpha):
            unchecked.append(f"{line}) on {c.units} units: too few to tell from chance (binomial test, alpha {alpha:g})")
        else:
            failures.append(f"{line}; audit.max_oracle_margin = {max_margin:g})")
    return failures, unchecked
