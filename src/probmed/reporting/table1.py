"""Dataset statistics in the layout of paper Table 1, and yes/no balance per category."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import pandas as pd

from probmed.core.markdown import markdown_table
from probmed.core.records import ImageRecord

TABLE1_COLUMNS = ["image_type", "images", "questions", "yes_answers", "unique_conditions", "unique_positions"]


def table1(questions: pd.DataFrame) -> pd.DataFrame:
    """Per image type (modality, organ): images, questions, yes-answers, unique conditions and positions,
    plus a ``Total`` row. Unique conditions/positions count ground-truth entities."""
    rows = []
    for itype, group in list(questions.groupby("image_type", sort=True)) + [("Total", questions)]:
        gt = group[group["polarity"] == "gt"]
        rows.append(
            {
                "image_type": itype,
                "images": group["image_id"].nunique(),
                "questions": len(group),
                "yes_answers": int((group["answer"] == "yes").sum()),
                "unique_conditions": gt.loc[gt["category"] == "condition", "entity"].nunique(),
                "unique_positions": gt.loc[gt["category"] == "position", "entity"].nunique(),
            }
        )
    return pd.DataFrame(rows, columns=TABLE1_COLUMNS)


def balance(questions: pd.DataFrame) -> pd.DataFrame:
    """Yes/no counts and yes ratio per category (and overall)."""
    rows = []
    for cat, group in list(questions.groupby("category", sort=True)) + [("all", questions)]:
        yes = int((group["answer"] == "yes").sum())
        rows.append({"category": cat, "questions": len(group), "yes": yes, "no": len(group) - yes, "yes_ratio": round(yes / len(group), 4) if len(group) else None})
    return pd.DataFrame(rows)


def record_counts(records: Iterable[ImageRecord]) -> pd.DataFrame:
    """Records per source x modality x organ, including other/unknown (which ask no modality/organ question)."""
    c = Counter((r.source, r.modality, r.organ, r.image_path is not None) for r in records)
    rows = [{"source": s, "modality": m, "organ": o, "has_image": h, "records": n} for (s, m, o, h), n in sorted(c.items())]
    return pd.DataFrame(rows, columns=["source", "modality", "organ", "has_image", "records"])


def to_markdown(frame: pd.DataFrame) -> str:
    return markdown_table(frame)
