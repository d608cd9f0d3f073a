"""Expert review round-trip (paper section 3.5, Appendix C).

Export: a seeded random sample of images with all their questions as a review
sheet (CSV with empty ``valid`` / ``comment`` columns) and a simple HTML page
showing each image beside its questions. Import: the filled sheet; reports the
validity rate (overall, per category) and, given predictions, the accuracy on
all vs valid-only questions of the sample (Table 18's layout).

Truth check (issue 22): a stratified sample of questions (``truth_sample``: every source x image folder x category x
answer, then more of the strata its weights favour), each judged by eye on its image and record as true / doubtful /
false with a reason (``read_truth_sheet``, ``truth_rates``), beside the paper's two-expert check (97.8% of QA
correct). ``review_render`` draws what each judgement looks at.
"""

from __future__ import annotations

import hashlib
import html
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from probmed.core.errors import RecordError
from probmed.infra.io import write_text_atomic
from probmed.infra.tables import read_csv

SHEET_COLUMNS = ["image_id", "image_path", "qid", "category", "qa_type", "question", "answer", "valid", "comment"]
TRUE = {"1", "y", "yes", "true", "valid", "ok"}
FALSE = {"0", "n", "no", "false", "invalid"}


def sample_images(questions: pd.DataFrame, n_images: int, seed: int) -> list[str]:
    """A seeded sample of image ids to put in front of a reviewer."""
    ids = sorted(questions["image_id"].unique())
    return sorted(random.Random(seed).sample(ids, min(n_images, len(ids))))


def export_review(questions: pd.DataFrame, out_dir: Path, n_images: int = 100, seed: int = 0, image_root: Path = Path(".")) -> pd.DataFrame:
    """Write review.csv and review.html under out_dir; returns the sheet."""
    out_dir = Path(out_dir)
    chosen = set(sample_images(questions, n_images, seed))
    sheet = questions[questions["image_id"].isin(chosen)].copy()
    sheet["valid"] = ""
    sheet["comment"] = ""
    sheet = sheet[SHEET_COLUMNS]
    write_text_atomic(sheet.to_csv(index=False), out_dir / "review.csv")
    parts = ["<!doctype html><meta charset='utf-8'><title>probmed review</title>",
             "<style>img{max-width:320px}td{padding:2px 8px}section{margin:1em 0;border-top:1px solid #ccc}</style>",
             f"<h1>Review sheet: {len(chosen)} images, {len(sheet)} questions (seed {seed})</h1>",
             "<p>Mark each question valid or invalid in the <code>valid</code> column of review.csv (yes/no).</p>"]
    for iid, group in sheet.groupby("image_id", sort=True):
        path = group["image_path"].iat[0]
        src = os.path.relpath(Path(image_root) / path, out_dir) if isinstance(path, str) and path else ""
        rows = "".join(f"<tr><td>{html.escape(r.qid)}</td><td>{html.escape(r.category)}</td><td>{html.escape(r.question)}</td><td>{r.answer}</td></tr>" for r in group.itertuples())
        parts.append(f"<section><h2>{html.escape(iid)}</h2><img src='{html.escape(Path(src).as_posix())}' alt='{html.escape(iid)}'><table>{rows}</table></section>")
    write_text_atomic("\n".join(parts) + "\n", out_dir / "review.html")
    return sheet


def read_verdicts(sheet_path: Path) -> pd.DataFrame:
    """The filled sheet with ``valid`` parsed to bool; an unfilled or unknown verdict is an error naming the row."""
    sheet = read_csv(sheet_path, "review sheet", dtype=str, keep_default_na=False)
    missing = [c for c in ("qid", "valid") if c not in sheet.columns]
    if missing:
        raise RecordError(f"{sheet_path}: missing column(s) {missing}")
    valid = []
    for i, (qid, v) in enumerate(zip(sheet["qid"], sheet["valid"])):
        v = v.strip().lower()
        if v in TRUE:
            valid.append(True)
        elif v in FALSE:
            valid.append(False)
        else:
            raise RecordError(f"{sheet_path}: row {i + 2} (qid {qid}): field 'valid' = {v!r}, expected yes/no")
    sheet["valid"] = valid
    return sheet


def review_report(sheet: pd.DataFrame, predictions: pd.DataFrame | None = None) -> dict[str, Any]:
    """Validity rates and (with predictions) accuracy on all vs valid-only questions."""
    out: dict[str, Any] = {
        "images": int(sheet["image_id"].nunique()) if "image_id" in sheet else None,
        "questions": len(sheet),
        "valid_pct": round(100 * sheet["valid"].mean(), 2) if len(sheet) else None,
        "valid_pct_by_category": {c: round(100 * g["valid"].mean(), 2) for c, g in sheet.groupby("category")} if "category" in sheet else {},
        "invalid_qids": sheet.loc[~sheet["valid"], "qid"].tolist(),
    }
    if predictions is not None:
        merged = sheet.merge(predictions[["qid", "label"]], on="qid", how="left")
        merged["correct"] = merged["label"] == merged["answer"]
        out["missing_predictions"] = int(merged["label"].isna().sum())
        out["accuracy_all_pct"] = round(100 * merged["correct"].mean(), 2)
        valid = merged[merged["valid"]]
        out["accuracy_valid_pct"] = round(100 * valid["correct"].mean(), 2) if len(valid) else None
    return out


# --- the by-eye truth check (issue 22): questions, not images, stratified across sources, categories, types ---

TRUTH_COLUMNS = ["qid", "image_id", "image_path", "source", "category", "image_type", "question", "answer",
                 "verdict", "reason"]
VERDICTS = ("true", "doubtful", "false")
# A stratum: the source, the folder its images come from (one source, ROCO, has two collections: roco_images and
# roco_extended), the category and the answer (a pair's yes and no; an abnormality question's either).
STRATA = ("source", "folder", "category", "answer")


def _rank(seed: int, key: str) -> str:
    """A seeded order that does not depend on what else is in the set: a change elsewhere keeps the sample."""
    return hashlib.sha1(f"{seed}:{key}".encode()).hexdigest()


def _folder(path: Any) -> str:
    """The folder an image lies in: the collection it came from (``roco_extended``, ``chestxray14``)."""
    return Path(str(path)).parent.name if isinstance(path, str) and path else ""


def _spread(questions: pd.DataFrame, index: list[int], seed: int) -> list[int]:
    """A stratum's questions in a seeded hash order that takes one of every image type before a second of any."""
    by_type: dict[str, list[int]] = {}
    for i in sorted(index, key=lambda i: _rank(seed, str(questions.at[i, "qid"]))):
        by_type.setdefault(str(questions.at[i, "image_type"]), []).append(i)
    queues = [by_type[t] for t in sorted(by_type, key=lambda t: _rank(seed, t))]
    return [q[d] for d in range(max(map(len, queues))) for q in queues if d < len(q)]


def stratum_weight(stratum: dict[str, str], weights: Mapping[str, Mapping[str, float]]) -> float:
    """A stratum's weight: the product of its values' weights (1 for a value not listed)."""
    w = 1.0
    for column, value in stratum.items():
        w *= float(weights.get(column, {}).get(value, 1.0))
    return w


@dataclass
class _Pool:
    """A stratum's questions in the order they are drawn, and how many are taken."""

    rank: str
    weight: float
    order: list[int]
    taken: int = 0

    @property
    def left(self) -> bool:
        return self.taken < len(self.order)

    def take(self) -> int:
        self.taken += 1
        return self.order[self.taken - 1]


def truth_sample(questions: pd.DataFrame, n_questions: int, seed: int,
                 weights: Mapping[str, Mapping[str, float]] | None = None) -> pd.DataFrame:
    """A seeded sample of questions to judge by eye: one question of every stratum (``STRATA``: source, image
    folder, category, answer) before a second of any, then the rest shared out by weight (``weights``: column ->
    value -> weight; a stratum weighs the product of its values'), each next question going to the stratum with
    the fewest taken per unit of weight. Within a stratum image types take turns; strata and questions each come
    in a seeded hash order, so a question keeps its place when others change. Empty verdict and reason columns."""
    weights = weights or {}
    frame = questions.assign(folder=[_folder(p) for p in questions["image_path"]])
    pools = []
    for key, group in frame.groupby(list(STRATA), sort=True):
        stratum = dict(zip(STRATA, map(str, key)))
        w = stratum_weight(stratum, weights)
        if w > 0:
            pools.append(_Pool(_rank(seed, "|".join(stratum.values())), w, _spread(frame, list(group.index), seed)))
    pools.sort(key=lambda p: p.rank)
    target = min(n_questions, sum(len(p.order) for p in pools))
    chosen: list[int] = []
    for pool in pools[:target]:  # every stratum once, in the seeded order
        chosen.append(pool.take())
    while len(chosen) < target:
        chosen.append(min((p for p in pools if p.left), key=lambda p: (p.taken / p.weight, p.rank)).take())
    sheet = questions.loc[sorted(chosen)].copy()
    sheet["verdict"] = ""
    sheet["reason"] = ""
    return sheet[TRUTH_COLUMNS].reset_index(drop=True)


def read_truth_sheet(path: Path) -> pd.DataFrame:
    """A judged truth sheet; every verdict must be true / doubtful / false, and a doubtful or false one needs a reason."""
    sheet = read_csv(path, "truth review sheet", dtype=str, keep_default_na=False)
    missing = [c for c in TRUTH_COLUMNS if c not in sheet.columns]
    if missing:
        raise RecordError(f"{path}: missing column(s) {missing}")
    for i, (qid, verdict, reason) in enumerate(zip(sheet["qid"], sheet["verdict"], sheet["reason"])):
        if verdict not in VERDICTS:
            raise RecordError(f"{path}: row {i + 2} (qid {qid}): verdict {verdict!r}, expected one of {VERDICTS}")
        if verdict != "true" and not reason.strip():
            raise RecordError(f"{path}: row {i + 2} (qid {qid}): a {verdict} verdict needs a reason")
    return sheet


def truth_rates(sheet: pd.DataFrame) -> dict[str, Any]:
    """Counts and rates of true / doubtful / false answers, overall and per source, image folder (ROCO's two
    collections apart), category and answer."""
    def counts(frame: pd.DataFrame) -> dict[str, Any]:
        c = {v: int((frame["verdict"] == v).sum()) for v in VERDICTS}
        return {**c, "questions": len(frame), "true_pct": round(100 * c["true"] / len(frame), 1) if len(frame) else None}

    return {
        "overall": counts(sheet),
        "images": int(sheet["image_id"].nunique()),
        "by_source": {s: counts(g) for s, g in sheet.groupby("source")},
        "by_folder": {f: counts(g) for f, g in sheet.groupby(sheet["image_path"].map(_folder))},
        "by_category": {c: counts(g) for c, g in sheet.groupby("category")},
        "by_answer": {a: counts(g) for a, g in sheet.groupby("answer")},
        "not_true": [{"qid": r.qid, "verdict": r.verdict, "reason": r.reason} for r in sheet.itertuples() if r.verdict != "true"],
    }
