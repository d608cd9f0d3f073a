"""Text-only models scored by the project scorer's rules beside the exact random baseline.

Two text-only models: the oracle (majority answer per question text, learnt on
other images: audit.oracle) and the blind baseline (the project's question-only
classifier, models.blind: a logistic regression over sentence embeddings,
cross-fitted over images). Both answer where they have evidence and guess where
they have none: the oracle guesses on texts without a majority, the blind model
answers "yes" with the probability it gives. Their strict accuracy is the exact
expectation over those guesses (a unit is right with the product of its
questions' chances), on the scorer's own units, weights (``num``) and random
baseline, so a set of 11 pairs is not judged by one lucky draw.

Why not threshold the blind model at 0.5: on a set whose every text is answered
yes exactly as often as no, the training folds' majority of a text is decided by
the held-out fold's own imbalance, and the pair structure then rewards it (a
pair is right whenever its image belongs to the fold's minority). That number is
kept as ``blind.argmax`` for reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from probmed.benchmark.audit.oracle import OracleSettings, oracle_votes
from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES

_EMPTY = {"qid": pd.Series([], dtype=object), "label": pd.Series([], dtype=object)}


def _expected_accuracy(prep: Any, p_correct: np.ndarray, rows: np.ndarray, category: str) -> float | None:
    """Expected strict accuracy (%) of one category on ``rows``: units for a paired category, singles otherwise."""
    rows = rows[prep.cat[rows] == CATEGORIES.index(category)]
    units = prep.unit[rows]
    if category in PAIRED_CATEGORIES:
        paired = rows[units >= 0]
        if not len(paired):
            return None
        prod = np.ones(prep.n_units)
        np.multiply.at(prod, prep.unit[paired], p_correct[paired])
        return float(100.0 * prod[np.unique(prep.unit[paired])].mean())
    singles = rows[units < 0]
    return None if not len(singles) else float(100.0 * p_correct[singles].mean())


def expected_scores(questions: pd.DataFrame, p_correct: np.ndarray) -> dict[str, Any]:
    """Expected strict accuracy per category, overall (original weighting) and per image type, beside exact random."""
    from probmed.scoring.metrics import prepare, score

    empty = pd.DataFrame(_EMPTY)
    base = score(questions, empty, resamples=0)
    prep = prepare(questions, empty)
    rnd = base["random_baseline"]
    everything = np.arange(len(questions))
    out: dict[str, Any] = {"by_category": {}, "by_image_type": {}}
    tot = den = 0.0
    for cat in CATEGORIES:
        if cat not in base["by_category"]:
            continue
        acc = _expected_accuracy(prep, p_correct, everything, cat)
        out["by_category"][cat] = {"accuracy": acc, "random": rnd["by_category"][cat]["accuracy_adv_pairs"]}
        num = base["by_category"][cat]["num"]
        if acc is not None and num:
            tot, den = tot + acc * num, den + num
    out["overall"] = {"accuracy": tot / den if den else None,
                      "random": rnd["overall"]["accuracy_adv_pairs_original_weighting"]}
    types = questions["image_type"].astype(str).to_numpy()
    for itype in sorted(set(types)):
        rows = np.flatnonzero(types == itype)
        out["by_image_type"][itype] = {
            cat: {"accuracy": _expected_accuracy(prep, p_correct, rows, cat), "random": m["accuracy_adv_pairs"]}
            for cat, m in rnd["by_image_type"][itype].items()
        }
    return out


def chance_correct(questions: pd.DataFrame, p_yes: np.ndarray) -> np.ndarray:
    """Each question's chance of being answered right by a model that says yes with probability ``p_yes``."""
    yes = (questions["answer"] == "yes").to_numpy()
    return np.where(yes, p_yes, 1.0 - p_yes)


def oracle_scores(questions: pd.DataFrame, settings: OracleSettings) -> dict[str, Any]:
    """The cross-fitted text-only oracle scored like a model: per category, overall and per image type."""
    votes = oracle_votes(questions, settings)
    return expected_scores(questions, chance_correct(questions, np.where(votes > 0, 1.0, np.where(votes < 0, 0.0, 0.5))))


def blind_probabilities(questions: pd.DataFrame, cfg: dict[str, Any]) -> np.ndarray:
    """P(yes) per question from the project's blind model, cross-fitted over images (loads sentence-transformers)."""
    from probmed.inference.models.baselines import BlindBackend

    backend = BlindBackend("blind", {"backend": "blind", **cfg}, {})
    backend.prepare(questions)
    return np.array([backend._table[q][1] for q in questions["qid"].astype(str)], dtype=float)


def blind_from_predictions(questions: pd.DataFrame, predictions: pd.DataFrame) -> np.ndarray:
    """P(yes) per question from a blind model's prediction table (its ``p_yes``, else its yes/no labels)."""
    from probmed.core.errors import RecordError

    pred = predictions.drop_duplicates("qid").set_index(predictions["qid"].drop_duplicates().astype(str))
    missing = set(questions["qid"].astype(str)) - set(pred.index)
    if missing:
        raise RecordError(f"blind predictions: {len(missing)} question(s) have no prediction (e.g. qid {sorted(missing)[0]})")
    rows = pred.loc[questions["qid"].astype(str)]
    if "p_yes" in rows and rows["p_yes"].notna().all():
        return rows["p_yes"].to_numpy(dtype=float)
    return (rows["label"] == "yes").to_numpy(dtype=float)


def blind_scores(questions: pd.DataFrame, p_yes: np.ndarray) -> dict[str, Any]:
    """The blind model answering yes with its probability (exact expectation), and its 0.5 threshold for reference."""
    from probmed.scoring.metrics import score

    out = expected_scores(questions, chance_correct(questions, p_yes))
    labels = np.where(p_yes >= 0.5, "yes", "no").astype(object)
    argmax = score(questions, pd.DataFrame({"qid": questions["qid"].astype(str), "label": labels}), resamples=0)
    out["argmax"] = {"by_category": {c: m["accuracy_adv_pairs"] for c, m in argmax["by_category"].items()},
                     "overall": argmax["overall"]["accuracy_adv_pairs_original_weighting"]}
    return out



def fixed_policies(questions: pd.DataFrame, max_texts: int = 8) -> dict[str, Any]:
    """The best fixed answer per question text, chosen on the set itself: an upper bound on text-only models.

    A model that answers each text the same way on every image is right on a pair
    exactly when its fixed answers match the pair's. Averaged over every fixed
    choice that is exact random, but one choice can do better when the pairs
    have structure (in a truthful set a chest image may only be asked about the
    brain, so every organ pair involves the brain). Every choice is tried, in
    categories of at most ``max_texts`` texts: with more, a choice per text
    chosen with the answers in hand would fit the set's own noise. Reported
    beside the gate, never as one.
    """
    from probmed.benchmark.audit.oracle import normalise_text
    from probmed.scoring.metrics import prepare, score

    empty = pd.DataFrame(_EMPTY)
    base = score(questions, empty, resamples=0)
    prep = prepare(questions, empty)
    yes = (questions["answer"] == "yes").to_numpy()
    cats = questions["category"].to_numpy(dtype=object)
    texts = questions["question"].map(normalise_text).to_numpy(dtype=object)
    everything = np.arange(len(questions))
    out: dict[str, Any] = {"max_texts": max_texts, "by_category": {}}
    for cat in [c for c in CATEGORIES if c in base["by_category"]]:
        rows = np.flatnonzero(cats == cat)
        codes, uniques = pd.factorize(texts[rows])
        entry: dict[str, Any] = {"texts": int(len(uniques)), "accuracy": None, "random": base["random_baseline"]["by_category"][cat]["accuracy_adv_pairs"]}
        if len(uniques) <= max_texts:
            best = -1.0
            for choice in range(2 ** len(uniques)):
                bits = ((choice >> np.arange(len(uniques))) & 1).astype(float)
                p_correct = np.zeros(len(questions))
                p_correct[rows] = np.where(yes[rows], bits[codes], 1.0 - bits[codes])
                acc = _expected_accuracy(prep, p_correct, everything, cat)
                if acc is not None and acc > best:
                    best, entry["policy"] = acc, {str(t): ("yes" if b else "no") for t, b in zip(uniques, bits)}
            entry["accuracy"] = best if best >= 0 else None
        out["by_category"][cat] = entry
    return out
