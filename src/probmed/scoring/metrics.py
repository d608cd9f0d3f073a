"""The project's scorer: strict pair accuracy and everything reported beside it.

Input: a question table (records.QUESTION_COLUMNS) and a prediction table
(records.PREDICTION_COLUMNS; only ``qid`` and the parsed ``label`` are read).
A question without a prediction is *missing*: counted, reported, and scored
wrong; predictions for unknown qids are counted as ``extra_predictions``. A
prediction whose ``error`` is set (the backend gave up after every retry) is
*failed*: scored wrong like a missing answer and counted on its own, never as
``unparsed`` (which means the model answered something that is not yes/no).

Scoring units (this docstring is where the rules are stated):

* a pair (gt + adversarial) is right only if both are; a per-image category
  (``CategorySpec.per_image`` in probmed.core.categories: condition, position)
  is all-or-nothing per image over all its pairs of that category; VQA-RAD
  pairs (``qa_type`` ``vqarad_*``) are scored pair by pair;
* a contrast pair (``contrast_id``, benchmark.contrast: one text answered
  "yes" on one image and "no" on another) is right only if both are: any answer
  that depends on the text alone scores 0 on it. Every question may belong to
  one, singles included; it is scored beside the paper's unit, never instead.
  A block counts the pairs both of whose questions it holds (so a pair across
  two image types is in ``by_category`` and ``overall``, in no image type);
* single questions (polarity ``single``: abnormality, a normal image's
  hallucinated condition) count on their own. They are *not* mixed into a paired
  category's strict or averaged accuracy (so always-yes = 0 holds, and strict <=
  averaged holds for pair units; for per-image units it holds when images carry
  equally many pairs, since a small all-right image can outweigh a large
  all-wrong one); they are reported beside them as ``single_accuracy``.
  The category of singles (abnormality) reports its single-question
  accuracy as ``accuracy_adv_pairs`` (the paper's Table 3 column); a paired
  category with no pairs in a set (condition on normal images only) has none.

metrics.json (probmed.scoring.score_report.ScoreReport.to_dict; every accuracy / rate in percent, null
where undefined)::

    {
      "meta": {"model", "setting", "n_questions", "n_predictions", "extra_predictions", "n_failed", "n_missing",
               "bootstrap_resamples", "seed", "ci_level"},
      "overall": {
        "accuracy_adv_pairs_original_weighting",  # categories weighted by num (the paper's Overall)
        "accuracy_adv_pairs_question_weighting",  # categories weighted by their number of questions
        "accuracy_adv_pairs",                     # pooled over all paired units (VQA-RAD Table 2)
        "averaged_accuracy",                      # pooled over all questions of the pairs
        "gt_only_accuracy",                       # pooled over units: every gt question right
        "accuracy_contrast_pairs", "n_contrast_pairs",  # pooled over every contrast pair of the set
        "num_original_weighting": {CATEGORY: int},
        + the per-category keys below over all questions (ci95_* are for the original weighting)
      },
      "by_category": {CATEGORY: {
        "accuracy_adv_pairs", "averaged_accuracy", "gt_only_accuracy",
        "accuracy_contrast_pairs", "n_contrast_pairs",  # both questions of a contrast pair right
        "single_accuracy", "n_single",
        "precision", "recall", "f1", "yes_ratio",    # over every question; positive = "yes"
        "refusal_rate", "unparsed_rate",             # rates in % of questions
        "failed_rate", "failed", "missing",          # failed after retries (% and count), no prediction (count)
        "n_images", "n_questions", "n_units", "num",
        "ci95_low", "ci95_high",                     # bootstrap over images, accuracy_adv_pairs
        "ci95_contrast_low", "ci95_contrast_high"}}, # the same, accuracy_contrast_pairs (half a pair per image)
      "by_image_type": {IMAGE_TYPE: {CATEGORY: {...same keys...}}},
      "random_baseline": {"overall": {...}, "by_category": {...}, "by_image_type": {...}},
      "procedural": {...},           # probmed.scoring.procedural
      "subset_robustness": [...],    # probmed.scoring.robustness
      "known_absent": {...} | null   # probmed.scoring.evidence: the same, every "no" resting on evidence
    }

``num`` is the original's weight: images with a pair for modality/organ, questions for
abnormality, every image of the set for the per-image categories. precision / recall /
F1 / yes-ratio treat a refusal, unparsed or missing answer as "not yes".
The random baseline is the *exact* expectation under independent uniform yes/no
answers: a unit of m questions is right with probability 2**-m (25% for a contrast pair).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES, PER_IMAGE_CATEGORIES, category
from probmed.core.errors import RecordError
from probmed.core.params_schema import Score
from probmed.core.vocab import LABELS
from probmed.scoring.bootstrap import interval, resample_weights

_SCORE = Score()  # the defaults of params score.* (bootstrap resamples, seed, interval level)
RANDOM_CONTRAST = 25.0  # exact: both questions of a contrast pair right under uniform yes/no answers

METRIC_KEYS: tuple[str, ...] = (
    "accuracy_adv_pairs",
    "averaged_accuracy",
    "gt_only_accuracy",
    "accuracy_contrast_pairs",
    "n_contrast_pairs",
    "single_accuracy",
    "n_single",
    "precision",
    "recall",
    "f1",
    "yes_ratio",
    "refusal_rate",
    "unparsed_rate",
    "failed_rate",
    "failed",
    "missing",
    "n_images",
    "n_questions",
    "n_units",
    "num",
    "ci95_low",
    "ci95_high",
    "ci95_contrast_low",
    "ci95_contrast_high",
)


@dataclass
class Prepared:
    """Questions joined with labels, as flat arrays (one concern: the join)."""

    frame: pd.DataFrame  # questions + label, correct
    cat: np.ndarray  # category index into CATEGORIES
    img: np.ndarray  # image code
    unit: np.ndarray  # paired unit code, -1 for singles
    unit_img: np.ndarray  # unit code -> image code
    correct: np.ndarray  # bool
    is_gt: np.ndarray  # bool (paired gt question)
    contrast: np.ndarray  # contrast pair code, -1 for a question in none
    label: np.ndarray  # object: yes/no/refusal/unparsed, "failed" (error set) or "missing" (no prediction)
    answer: np.ndarray
    n_images: int
    n_units: int
    n_contrast: int
    n_predictions: int
    extra_predictions: int


def prepare(questions: pd.DataFrame, predictions: pd.DataFrame) -> Prepared:
    """Join predictions onto questions by qid (left join: every question stays)."""
    for col in ("qid", "label"):
        if col not in predictions.columns:
            raise RecordError(f"predictions: missing column {col!r}")
    dup = predictions["qid"].duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise RecordError(f"predictions: record {i}: duplicate qid {predictions['qid'].iat[i]!r}")
    bad = ~predictions["label"].isin(LABELS).to_numpy(dtype=bool)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise RecordError(
            f"predictions: record {i} (qid {predictions['qid'].iat[i]}): field 'label' = "
            f"{predictions['label'].iat[i]!r}, expected one of {list(LABELS)}"
        )
    pred_qids = pd.Index(predictions["qid"].astype(str).to_numpy(dtype=object))
    qids = pd.Index(questions["qid"].astype(str).to_numpy(dtype=object))
    where = pred_qids.get_indexer(qids)  # -1: no prediction for this question
    pred_labels = predictions["label"].to_numpy(dtype=object)
    if "error" in predictions.columns:  # the backend gave up: failed, not an answer that did not parse
        errors = predictions["error"].fillna("").astype(str).to_numpy(dtype=object) != ""
        pred_labels = np.where(errors, "failed", pred_labels).astype(object)
    label = np.where(where >= 0, pred_labels[np.maximum(where, 0)] if len(pred_labels) else "missing", "missing")
    label = label.astype(object)
    extra = int((qids.get_indexer(pred_qids) < 0).sum())
    answer = questions["answer"].to_numpy(dtype=object)
    correct = label == answer
    polarity = questions["polarity"].to_numpy(dtype=object)
    cat = pd.Categorical(questions["category"].to_numpy(dtype=object), categories=list(CATEGORIES)).codes
    cat = cat.astype(np.int64)
    if (cat < 0).any():
        i = int(np.flatnonzero(cat < 0)[0])
        raise RecordError(f"questions: record {i}: field 'category' = {questions['category'].iat[i]!r}")
    img, _ = pd.factorize(questions["image_id"].astype(str), sort=True)  # order-free bootstrap
    img = img.astype(np.int64)
    n_img = int(img.max()) + 1 if len(img) else 0
    pair, _ = pd.factorize(questions["pair_id"].astype(str))
    paired = polarity != "single"
    per_image_cats = [CATEGORIES.index(c) for c in PER_IMAGE_CATEGORIES]
    per_image = np.isin(cat, per_image_cats) & ~questions["qa_type"].astype(str).str.startswith("vqarad").to_numpy(
        dtype=bool
    )
    n_cat = len(CATEGORIES)
    # integer unit keys: (category, image) for per-image units, (pair, category) after them
    key = np.where(per_image, cat * n_img + img, n_cat * n_img + pair.astype(np.int64) * n_cat + cat)
    unit = np.full(len(questions), -1, dtype=np.int64)
    codes, uniques = pd.factorize(key[paired])
    unit[paired] = codes
    unit_img = np.zeros(len(uniques), dtype=np.int64)
    unit_img[codes] = img[paired]
    contrast, n_contrast = _contrast_codes(questions)
    frame = questions.reset_index(drop=True).copy()
    frame["label"] = label
    frame["correct"] = correct
    return Prepared(
        frame=frame,
        cat=cat,
        img=img,
        unit=unit,
        unit_img=unit_img,
        correct=correct,
        is_gt=(polarity == "gt"),
        contrast=contrast,
        label=label,
        answer=answer,
        n_images=n_img,
        n_units=len(uniques),
        n_contrast=n_contrast,
        n_predictions=len(predictions),
        extra_predictions=extra,
    )


def _contrast_codes(questions: pd.DataFrame) -> tuple[np.ndarray, int]:
    """(contrast pair code per question, -1 for none; number of pairs): a table without the column has none."""
    codes = np.full(len(questions), -1, dtype=np.int64)
    if "contrast_id" not in questions.columns:
        return codes, 0
    has = questions["contrast_id"].notna().to_numpy(dtype=bool)
    found, uniques = pd.factorize(questions["contrast_id"].to_numpy(dtype=object)[has])
    codes[has] = found
    return codes, len(uniques)


def _pct(num: float, den: float) -> float | None:
    return None if den == 0 else float(100.0 * num / den)


class _Group:
    """Per-image sums for one category (or all categories) of one set of rows."""

    def __init__(self, p: Prepared, rows: np.ndarray) -> None:
        n_img = p.n_images
        unit = p.unit[rows]
        paired = unit >= 0
        u = unit[paired]
        corr = p.correct[rows]
        gt = p.is_gt[rows]
        nq = np.bincount(u, minlength=p.n_units)
        nc = np.bincount(u, weights=corr[paired], minlength=p.n_units)
        ng = np.bincount(u, weights=gt[paired], minlength=p.n_units)
        ngc = np.bincount(u, weights=(gt & corr)[paired], minlength=p.n_units)
        present = nq > 0
        self.units = np.flatnonzero(present)
        ui = p.unit_img[self.units]
        ok = nc[self.units] == nq[self.units]
        gt_ok = ngc[self.units] == ng[self.units]
        self.n_units = len(self.units)
        self.unit_ok = int(ok.sum())
        self.unit_gt_ok = int(gt_ok.sum())
        self.unit_exact = float(np.power(0.5, nq[self.units]).sum())
        self.unit_gt_exact = float(np.power(0.5, ng[self.units]).sum())
        self.n_paired_q = int(paired.sum())
        self.paired_correct = int(corr[paired].sum())
        singles = ~paired
        self.n_single = int(singles.sum())
        self.single_correct = int(corr[singles].sum())
        img = p.img[rows]
        # per-image sums, for the bootstrap
        self.img_units = np.bincount(ui, minlength=n_img).astype(np.float64)
        self.img_ok = np.bincount(ui, weights=ok, minlength=n_img)
        self.img_single = np.bincount(img[singles], minlength=n_img).astype(np.float64)
        self.img_single_ok = np.bincount(img[singles], weights=corr[singles], minlength=n_img)
        self.img_questions = np.bincount(img, minlength=n_img).astype(np.float64)
        self.n_images = int(np.count_nonzero(self.img_questions))
        self._contrast(p, rows, corr)
        paired_codes = [CATEGORIES.index(c) for c in PAIRED_CATEGORIES]
        self._paired_category = bool(np.isin(p.cat[rows], paired_codes).any())

    def _contrast(self, p: Prepared, rows: np.ndarray, corr: np.ndarray) -> None:
        """Contrast pairs both of whose questions are among `rows`; each of its two images carries half of one."""
        code = p.contrast[rows]
        has = code >= 0
        held = np.bincount(code[has], minlength=p.n_contrast)
        right = np.bincount(code[has], weights=corr[has], minlength=p.n_contrast)
        complete = held == 2
        ok = complete & (right == 2)
        self.n_contrast = int(complete.sum())
        self.contrast_ok = int(ok.sum())
        mine = has.copy()
        mine[has] = complete[code[has]]
        img = p.img[rows][mine]
        self.img_contrast = np.bincount(img, minlength=p.n_images) * 0.5
        self.img_contrast_ok = np.bincount(img, weights=0.5 * ok[code[mine]], minlength=p.n_images)

    def contrast(self) -> float | None:
        return _pct(self.contrast_ok, self.n_contrast)

    @property
    def paired_category(self) -> bool:
        """A paired category's rows (singles beside its pairs are never its strict accuracy)."""
        return self._paired_category

    def strict(self) -> float | None:
        if self.paired_category:
            return _pct(self.unit_ok, self.n_units)
        return _pct(self.single_correct, self.n_single)

    def strict_parts(self) -> tuple[np.ndarray, np.ndarray]:
        if self.paired_category:
            return self.img_ok, self.img_units
        return self.img_single_ok, self.img_single

    def random_strict(self) -> float | None:
        if self.paired_category:
            return _pct(self.unit_exact, self.n_units)
        return _pct(self.n_single / 2.0, self.n_single)


def _label_metrics(p: Prepared, rows: np.ndarray) -> dict[str, Any]:
    label = p.label[rows]
    answer = p.answer[rows]
    n = len(rows)
    said_yes = label == "yes"
    is_yes = answer == "yes"
    tp = int((said_yes & is_yes).sum())
    fp = int((said_yes & ~is_yes).sum())
    fn = int((~said_yes & is_yes).sum())
    precision = _pct(tp, tp + fp)
    recall = _pct(tp, tp + fn)
    f1 = None
    if precision is not None and recall is not None and precision + recall > 0:
        f1 = 2 * precision * recall / (precision + recall)
    elif precision is not None and recall is not None:
        f1 = 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "yes_ratio": _pct(int(said_yes.sum()), n),
        "refusal_rate": _pct(int((label == "refusal").sum()), n),
        "unparsed_rate": _pct(int((label == "unparsed").sum()), n),
        "failed_rate": _pct(int((label == "failed").sum()), n),
        "failed": int((label == "failed").sum()),
        "missing": int((label == "missing").sum()),
    }


def _num(cat: str, g: _Group, n_images_in_set: int) -> int:
    """The original's weight of a category: all images (per-image), images (pairs), questions (singles)."""
    if category(cat).per_image:
        return n_images_in_set if g.n_units + g.n_single > 0 else 0
    if g.paired_category:
        return g.n_units
    return g.n_single


def _weighted(per_cat: dict[str, dict[str, Any]], by_cat: dict[str, dict[str, Any]], weight_key: str) -> float | None:
    """Accuracy with adversarial pairs averaged over categories, weighted by ``by_cat[cat][weight_key]``."""
    tot = den = 0.0
    for cat, m in per_cat.items():
        acc = m["accuracy_adv_pairs"]
        w = by_cat[cat][weight_key]
        if acc is None or not w:
            continue
        tot += acc * w
        den += w
    return None if den == 0 else tot / den


@dataclass
class _Bootstrap:
    """Resampled strict accuracy per category, and of the original weighting over categories."""

    samples: dict[str, np.ndarray]
    overall_num: np.ndarray
    overall_den: np.ndarray
    contrast: dict[str, np.ndarray]  # resampled accuracy_contrast_pairs per category
    contrast_overall: np.ndarray  # ... pooled over the categories' pairs


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """100 * num / den per resample, NaN where a resample holds no unit."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, 100.0 * num / np.where(den > 0, den, 1), np.nan)


def _bootstrap(groups: dict[str, _Group], images: np.ndarray, weights: np.ndarray) -> _Bootstrap:
    """One matrix product for the whole bootstrap: columns are (right, units) of the paper's unit and of
    contrast pairs per category, plus a column of ones (images, the original weight of the per-image categories)."""
    zeros = np.zeros(weights.shape[0])
    boot = _Bootstrap({}, zeros.copy(), zeros.copy(), {}, zeros.copy())
    if not weights.shape[0] or not groups:
        return boot
    cols = [a[images] for g in groups.values() for a in (*g.strict_parts(), g.img_contrast_ok, g.img_contrast)]
    cols.append(np.ones(len(images)))
    sums = (weights @ np.column_stack(cols).astype(weights.dtype)).astype(np.float64)
    n_img_b = sums[:, -1]
    contrast_num, contrast_den = zeros.copy(), zeros.copy()
    for j, cat in enumerate(groups):
        num_s, den_s = sums[:, 4 * j], sums[:, 4 * j + 1]
        samples = _ratio(num_s, den_s)
        boot.samples[cat] = samples
        boot.contrast[cat] = _ratio(sums[:, 4 * j + 2], sums[:, 4 * j + 3])
        contrast_num += sums[:, 4 * j + 2]
        contrast_den += sums[:, 4 * j + 3]
        # bootstrap of the original weighting: acc_c * num_c, with num_c resampled too
        num_b = n_img_b if category(cat).per_image else den_s
        has = ~np.isnan(samples)
        boot.overall_num += np.nan_to_num(samples, nan=0.0) * num_b * has
        boot.overall_den += num_b * has
    boot.contrast_overall = _ratio(contrast_num, contrast_den)
    return boot


Interval = tuple[float | None, float | None]


def _category_scores(p: Prepared, cat: str, g: _Group, sub: np.ndarray, n_images_in_set: int,
                     ci: Interval, ci_contrast: Interval) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metrics, exact random-baseline metrics) of one category over its rows ``sub``."""
    entry = {
        "accuracy_adv_pairs": g.strict(),
        "averaged_accuracy": _pct(g.paired_correct, g.n_paired_q),
        "gt_only_accuracy": _pct(g.unit_gt_ok, g.n_units),
        "accuracy_contrast_pairs": g.contrast(),
        "n_contrast_pairs": g.n_contrast,
        "single_accuracy": _pct(g.single_correct, g.n_single),
        "n_single": g.n_single,
        **_label_metrics(p, sub),
        "n_images": g.n_images,
        "n_questions": int(len(sub)),
        "n_units": g.n_units,
        "num": _num(cat, g, n_images_in_set),
        "ci95_low": ci[0],
        "ci95_high": ci[1],
        "ci95_contrast_low": ci_contrast[0],
        "ci95_contrast_high": ci_contrast[1],
    }
    random = {
        "accuracy_adv_pairs": g.random_strict(),
        "averaged_accuracy": 50.0 if g.n_paired_q else None,
        "gt_only_accuracy": _pct(g.unit_gt_exact, g.n_units),
        "accuracy_contrast_pairs": RANDOM_CONTRAST if g.n_contrast else None,
        "single_accuracy": 50.0 if g.n_single else None,
    }
    return {k: entry[k] for k in METRIC_KEYS}, random


def _overall_scores(p: Prepared, rows: np.ndarray, by_cat: dict[str, dict[str, Any]], rnd_cat: dict[str, dict[str, Any]],
                    n_images_in_set: int, ci: Interval, ci_contrast: Interval) -> tuple[dict[str, Any], dict[str, Any]]:
    """(overall metrics, overall exact random baseline) over all rows."""
    g = _Group(p, rows)
    overall = {
        "accuracy_adv_pairs_original_weighting": _weighted(by_cat, by_cat, "num"),
        "accuracy_adv_pairs_question_weighting": _weighted(by_cat, by_cat, "n_questions"),
        "accuracy_adv_pairs": _pct(g.unit_ok, g.n_units),
        "averaged_accuracy": _pct(g.paired_correct, g.n_paired_q),
        "gt_only_accuracy": _pct(g.unit_gt_ok, g.n_units),
        "accuracy_contrast_pairs": g.contrast(),
        "n_contrast_pairs": g.n_contrast,
        "single_accuracy": _pct(g.single_correct, g.n_single),
        "n_single": g.n_single,
        **_label_metrics(p, rows),
        "n_images": n_images_in_set,
        "n_questions": int(len(rows)),
        "n_units": g.n_units,
        "num_original_weighting": {c: m["num"] for c, m in by_cat.items()},
        "ci95_low": ci[0],
        "ci95_high": ci[1],
        "ci95_contrast_low": ci_contrast[0],
        "ci95_contrast_high": ci_contrast[1],
    }
    random = {
        "accuracy_adv_pairs_original_weighting": _weighted(rnd_cat, by_cat, "num"),
        "accuracy_adv_pairs_question_weighting": _weighted(rnd_cat, by_cat, "n_questions"),
        "accuracy_adv_pairs": _pct(g.unit_exact, g.n_units),
        "averaged_accuracy": 50.0 if g.n_paired_q else None,
        "gt_only_accuracy": _pct(g.unit_gt_exact, g.n_units),
        "accuracy_contrast_pairs": RANDOM_CONTRAST if g.n_contrast else None,
        "single_accuracy": 50.0 if g.n_single else None,
    }
    return overall, random


def score_rows(
    p: Prepared, rows: np.ndarray, resamples: int, seed: int, level: float
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """(by_category, overall, random_baseline{by_category, overall}) for a subset of rows."""
    cats = p.cat[rows]
    images = np.flatnonzero(np.bincount(p.img[rows], minlength=p.n_images))
    n_images_in_set = int(len(images))
    weights = resample_weights(len(images), resamples, seed)
    groups: dict[str, _Group] = {}
    subs: dict[str, np.ndarray] = {}
    for ci, cat in enumerate(CATEGORIES):
        sub = rows[cats == ci]
        if len(sub):
            groups[cat] = _Group(p, sub)
            subs[cat] = sub
    boot = _bootstrap(groups, images, weights)
    by_cat: dict[str, dict[str, Any]] = {}
    rnd_cat: dict[str, dict[str, Any]] = {}
    for cat, g in groups.items():
        ci95 = interval(boot.samples[cat], level) if cat in boot.samples else (None, None)
        ci_contrast = interval(boot.contrast[cat], level) if cat in boot.contrast else (None, None)
        by_cat[cat], rnd_cat[cat] = _category_scores(p, cat, g, subs[cat], n_images_in_set, ci95, ci_contrast)
    ci95 = ci_contrast = (None, None)
    if weights.shape[0]:
        with np.errstate(invalid="ignore", divide="ignore"):
            den = boot.overall_den
            overall_samples = np.where(den > 0, boot.overall_num / np.where(den > 0, den, 1), np.nan)
        ci95 = interval(overall_samples, level)
        ci_contrast = interval(boot.contrast_overall, level)
    overall, rnd_overall = _overall_scores(p, rows, by_cat, rnd_cat, n_images_in_set, ci95, ci_contrast)
    return by_cat, overall, {"by_category": rnd_cat, "overall": rnd_overall}


def score_prepared(
    p: Prepared, resamples: int = _SCORE.bootstrap_resamples, seed: int = _SCORE.seed, level: float = _SCORE.ci_level,
    by_image_type: bool = True,
) -> dict[str, Any]:
    """The scores (overall / by_category / by_image_type / random_baseline) of prepared questions."""
    rows = np.arange(len(p.frame))
    by_cat, overall, rnd = score_rows(p, rows, resamples, seed, level)
    result: dict[str, Any] = {"overall": overall, "by_category": by_cat}
    if by_image_type:
        types = p.frame["image_type"].astype(str).to_numpy()
        by_type: dict[str, Any] = {}
        rnd_type: dict[str, Any] = {}
        for name in sorted(set(types)):
            t_rows = rows[types == name]
            t_cat, _t_overall, t_rnd = score_rows(p, t_rows, resamples, seed, level)
            by_type[name] = t_cat
            rnd_type[name] = t_rnd["by_category"]
        result["by_image_type"] = by_type
        rnd["by_image_type"] = rnd_type
    result["random_baseline"] = rnd
    return result


def score(
    questions: pd.DataFrame,
    predictions: pd.DataFrame,
    resamples: int = _SCORE.bootstrap_resamples,
    seed: int = _SCORE.seed,
    level: float = _SCORE.ci_level,
    by_image_type: bool = True,
) -> dict[str, Any]:
    """Score predictions against questions (no procedural / robustness parts; see scoring.run)."""
    return score_prepared(prepare(questions, predictions), resamples, seed, level, by_image_type)


def exact_random_baseline(questions: pd.DataFrame) -> dict[str, Any]:
    """The exact expected scores of uniform random yes/no answers on these questions."""
    empty = pd.DataFrame({"qid": pd.Series([], dtype=object), "label": pd.Series([], dtype=object)})
    return score(questions, empty, resamples=0)["random_baseline"]
