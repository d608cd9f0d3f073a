"""Expert review round-trip (paper section 3.5, Appendix C).

Export: a seeded random sample of images with all their questions as a review
sheet (CSV with empty ``valid`` / ``comment`` columns) and a simple HTML page
showing each image beside its questions. Import: the filled sheet; reports the
validity rate (overall, per category) and, given predictions, the accuracy on
all vs valid-only questions of the sample (Table 18's layout).
"""

from __future__ import annotations

import html
import os
import random
from pathlib import Path
from typing import Any

import pandas as pd

from probmed.core.errors import RecordError
from probmed.infra.io import require_file, write_text_atomic

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
    sheet = pd.read_csv(require_file(sheet_path, "review sheet"), dtype=str, keep_default_na=False)
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
