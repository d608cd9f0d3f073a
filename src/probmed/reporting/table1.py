"""Dataset statistics in the layout of paper Table 1, and yes/no balance per category."""

from __future__ import annotations

from collections import Counter
from typing import Iterable

import pandas as pd

from probmed.core.markdown import markdown_table, number_cell
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


# The paper's Table 1 (../shared/reference/probmed-paper.txt): image type -> (images, questions, "yes"
# answers). The text extraction of the paper lost four image counts (Abdomen MRI, Chest MRI, Spine CT,
# Brain X-ray; together 6,303 - 6,071 = 232 images): they stay None rather than guessed.
PAPER_TABLE1: dict[str, tuple[int | None, int, int]] = {
    "MRI - Abdomen": (None, 757, 375),
    "MRI - Brain": (566, 5046, 2509),
    "MRI - Chest": (None, 382, 189),
    "MRI - Spine": (324, 3346, 1664),
    "CT Scan - Abdomen": (751, 6855, 3410),
    "CT Scan - Brain": (270, 2417, 1200),
    "CT Scan - Chest": (548, 5161, 2572),
    "CT Scan - Spine": (None, 941, 470),
    "X-ray - Abdomen": (232, 2046, 1018),
    "X-ray - Brain": (None, 599, 298),
    "X-ray - Chest": (3178, 27530, 13278),
    "X-ray - Spine": (202, 2052, 1020),
}
PAPER_TOTAL = (6303, 57132, 28003)


def _pct(part: float | None, whole: float) -> float | None:
    return None if part is None or not whole else round(100.0 * part / whole, 1)


def table1_vs_paper(questions: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 1 layout with the paper's shares beside ours: per image type (the paper's twelve,
    then any other), images and questions with their shares of the set, the "yes" share of the
    questions, unique ground-truth conditions and positions; a Total row."""
    ours = table1(questions).set_index("image_type")
    total_images, total_questions = int(ours.loc["Total", "images"]), int(ours.loc["Total", "questions"])
    order = list(PAPER_TABLE1) + sorted(t for t in ours.index if t not in PAPER_TABLE1 and t != "Total") + ["Total"]
    rows = []
    for itype in order:
        have = itype in ours.index
        images = int(ours.loc[itype, "images"]) if have else 0
        n_questions = int(ours.loc[itype, "questions"]) if have else 0
        p_images, p_questions, p_yes = PAPER_TABLE1.get(itype, PAPER_TOTAL if itype == "Total" else (None, None, None))
        rows.append({
            "image_type": itype,
            "images": images,
            "images_pct": _pct(images, total_images),
            "paper_images_pct": _pct(p_images, PAPER_TOTAL[0]),
            "questions": n_questions,
            "questions_pct": _pct(n_questions, total_questions),
            "paper_questions_pct": _pct(p_questions, PAPER_TOTAL[1]),
            "yes_pct": _pct(int(ours.loc[itype, "yes_answers"]) if have else None, n_questions),
            "paper_yes_pct": _pct(p_yes, p_questions or 0),
            "unique_conditions": int(ours.loc[itype, "unique_conditions"]) if have else 0,
            "unique_positions": int(ours.loc[itype, "unique_positions"]) if have else 0,
        })
    return pd.DataFrame(rows)


def _paper_questions_by(part: int) -> Counter:
    """The paper's questions per modality (part 0) or organ (part 1) of its image types (every count known)."""
    out: Counter = Counter()
    for itype, (_, n_questions, _) in PAPER_TABLE1.items():
        out[itype.split(" - ")[part]] += n_questions
    return out


def modalities_and_organs_vs_paper(questions: pd.DataFrame) -> pd.DataFrame:
    """Per modality, then per organ: images and questions with their shares of the set, beside the paper's
    question share (its image counts miss four types, its question counts do not). ``in_paper`` is False for
    ultrasound and the organs beyond the paper's four: the paper has none of them."""
    split = questions["image_type"].str.split(" - ", n=1, expand=True)
    total_images, total_questions = questions["image_id"].nunique(), len(questions)
    rows = []
    for kind, part in (("modality", 0), ("organ", 1)):
        paper = _paper_questions_by(part)
        for value, group in sorted(questions.groupby(split[part]), key=lambda kv: (-kv[1]["image_id"].nunique(), kv[0])):
            images = group["image_id"].nunique()
            rows.append({
                "kind": kind, "value": value, "images": images, "images_pct": _pct(images, total_images),
                "questions": len(group), "questions_pct": _pct(len(group), total_questions),
                "paper_questions_pct": _pct(paper.get(value), PAPER_TOTAL[1]) if value in paper else None,
                "in_paper": value in paper,
            })
    return pd.DataFrame(rows, columns=["kind", "value", "images", "images_pct", "questions", "questions_pct",
                                       "paper_questions_pct", "in_paper"])


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
    """Table 1 as Markdown: a missing value (e.g. a paper count its text does not give) as an em dash."""
    return markdown_table(frame, cell=number_cell("—", digits=None))
