"""Expert review round-trip (paper section 3.5, Appendix C).

Export: a seeded random sample of images with all their questions as a review
sheet (CSV with empty ``valid`` / ``comment`` columns) and a simple HTML page
showing each image beside its questions. Import: the filled sheet; reports the
validity rate (overall, per category) and, given predictions, the accuracy on
all vs valid-only questions of the sample (Table 18's layout).

Truth check (issue 22): a stratified sample of questions (``truth_sample``), each judged by eye on its image and
record as true / doubtful / false with a reason (``read_truth_sheet``, ``truth_rates``), beside the paper's
two-expert check (97.8% of QA correct).
"""

from __future__ import annotations

import hashlib
import html
import os
import random
from pathlib import Path
from typing import Any

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
STRATA = ("source", "category", "image_type")


def _rank(seed: int, key: str) -> str:
    """A seeded order that does not depend on what else is in the set: a change elsewhere keeps the sample."""
    return hashlib.sha1(f"{seed}:{key}".encode()).hexdigest()


def truth_sample(questions: pd.DataFrame, n_questions: int, seed: int) -> pd.DataFrame:
    """A seeded sample of questions that reaches every (source, category, image type) before taking a second of any:
    one question per stratum in turn (strata and their questions each in a seeded hash order, so a question keeps
    its place when others change), so a small source or category is judged at all, not only in proportion to its
    size. Empty verdict and reason columns."""
    pools = []
    for stratum, group in questions.groupby(list(STRATA), sort=True):
        order = sorted(group.index, key=lambda i: _rank(seed, str(questions.at[i, "qid"])))
        pools.append((_rank(seed, "|".join(map(str, stratum))), order))
    pools.sort()
    chosen: list[int] = []
    depth = 0
    while len(chosen) < min(n_questions, len(questions)):
        chosen += [order[depth] for _, order in pools if depth < len(order)][: n_questions - len(chosen)]
        depth += 1
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
    """Counts and rates of true / doubtful / false answers, overall and per source and category."""
    def counts(frame: pd.DataFrame) -> dict[str, Any]:
        c = {v: int((frame["verdict"] == v).sum()) for v in VERDICTS}
        return {**c, "questions": len(frame), "true_pct": round(100 * c["true"] / len(frame), 1) if len(frame) else None}

    return {
        "overall": counts(sheet),
        "images": int(sheet["image_id"].nunique()),
        "by_source": {s: counts(g) for s, g in sheet.groupby("source")},
        "by_category": {c: counts(g) for c, g in sheet.groupby("category")},
        "not_true": [{"qid": r.qid, "verdict": r.verdict, "reason": r.reason} for r in sheet.itertuples() if r.verdict != "true"],
    }
