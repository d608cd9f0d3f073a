"""Every "no" answer checked against the image's own metadata and QA (probmed.benchmark.truth).

Works on any question set whose image ids match the records (generated sets;
the VQA-RAD adversarial set by image file name). The value a question asks about
is its ``entity`` when the set records one, else it is read from the text
(synonym-aware: "pleural effusion" is an effusion). A "no" is contradicted when:

* modality: it names the image's modality;
* organ: it names the image's organ, an organ in its field of view, or one its QA affirms;
* condition: it names a present condition, a member of a present condition's
  overlap group, or any condition while a nonspecific finding (a "lesion") is present;
* position: it names a place overlapping where the condition is;
* abnormality: the image is abnormal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from probmed.benchmark import truth
from probmed.core.records import ImageRecord
from probmed.core.vocab import ASKABLE_MODALITIES, ASKABLE_ORGANS

EXAMPLES = 20
_MODALITY_WORDS = {"x-ray": r"\bx-?ray|\bradiograph|\bcxr\b", "ct": r"\bct\b|computed tomograph", "mri": r"\bmri?\b|magnetic resonance",
                   "ultrasound": r"\bultrasound|\bsonogra|\bultrasonograph|\busg\b"}
_ORGAN_WORDS = {"brain": r"\bbrain\b|\bhead\b(?! and neck)|\bskull\b", "chest": r"\bchest\b|\blungs?\b|\bthorax\b",
                "abdomen": r"\babdomen\b|\babdominal\b", "spine": r"\bspine\b|\bspinal\b",
                "pelvis": r"\bpelvis\b|\bpelvic\b|\bhips?\b", "knee": r"\bknees?\b", "hand": r"\bhands?\b|\bwrists?\b",
                "shoulder": r"\bshoulders?\b", "foot": r"\bfoot\b|\bfeet\b|\bankles?\b",
                "head and neck": r"\bhead and neck\b|\bneck\b|\bface\b|\bsinus(es)?\b|\bthyroid\b"}


def record_index(records: Sequence[ImageRecord]) -> dict[str, ImageRecord]:
    """Records by image id and by the stem of their source file (the VQA-RAD adversarial set's ids)."""
    out: dict[str, ImageRecord] = {}
    for r in records:
        origin = r.provenance.get("origin")
        if origin:
            out.setdefault(Path(str(origin)).stem, r)
    out.update({r.image_id: r for r in records})
    return out


def _named(text: str, words: dict[str, str]) -> list[str]:
    low = text.lower()
    return [k for k, rx in words.items() if re.search(rx, low)]


def _conditions(row: Any) -> list[str]:
    """The conditions a question asks about: its entity when that is a condition name, else those its text names."""
    from probmed.benchmark.curation.extract_rules import find_conditions
    from probmed.benchmark.curation.vocabularies import CONDITION_SYNONYMS

    entity = str(row.entity or "").lower()
    if row.category == "condition" and entity:
        # a recorded entity is what the question asks about: a condition, or an attribute of one ("non-enhancing")
        return [truth.canonical_condition(entity)] if entity in CONDITION_SYNONYMS else []
    found, _ = find_conditions(str(row.question))
    return [truth.canonical_condition(f["condition"]) for f in found]


def _modality_or_organ(row: Any, rec: ImageRecord) -> str | None:
    if row.category == "modality":
        named = [row.entity.lower()] if row.entity and row.entity.lower() in ASKABLE_MODALITIES else _named(row.question, _MODALITY_WORDS)
        return f"the image is {rec.modality}" if rec.modality in named else None
    named = [row.entity] if row.entity in ASKABLE_ORGANS else _named(row.question, _ORGAN_WORDS)
    in_view = truth.organs_in_view(rec.modality, rec.organ) | truth.qa_mentions(rec).organs | {rec.organ}
    hit = [o for o in named if o in in_view]
    return f"{hit[0]} is in view of this {rec.modality} {rec.organ} image" if hit else None


def _condition(row: Any, rec: ImageRecord) -> str | None:
    present = truth.present_conditions(rec)
    asked = _conditions(row)
    if not present or not asked:
        return None  # nothing known present, or the question names no condition (an attribute, normality)
    if truth.overlaps_any(present):
        return f"{asked[0]} may be the nonspecific finding present ({', '.join(sorted(present))})"
    blocked = truth.overlapping(present)
    hit = [c for c in asked if c in blocked]
    return f"{hit[0]} is present or overlaps a present finding ({', '.join(sorted(present))})" if hit else None


def _position(row: Any, rec: ImageRecord) -> str | None:
    if not row.entity:
        return None
    for cond in _conditions(row):
        places, cells = truth.occupied_positions(rec, cond)
        if any(truth.positions_overlap(rec.organ, row.entity, p) for p in places):
            return f"the {cond} is at {places}"
        own = truth.chest_cells(row.entity) if rec.organ == "chest" else None
        if cells and own is not None and own & cells:
            return f"the {cond}'s box reaches {sorted(own & cells)}"
    return None


def contradiction(row: Any, rec: ImageRecord) -> str | None:
    """Why a "no" answer is false for its image, or None."""
    if row.category in ("modality", "organ"):
        return _modality_or_organ(row, rec)
    if row.category == "condition":
        return _condition(row, rec)
    if row.category == "position":
        return _position(row, rec)
    if row.category == "abnormality" and (rec.abnormal or truth.present_conditions(rec)):
        return "the image is abnormal"
    return None


def contradictions(questions: pd.DataFrame, records: Sequence[ImageRecord] | None) -> dict[str, Any]:
    """Contradicted "no" answers per category, with examples (``checked`` False without records)."""
    if not records:
        return {"checked": False, "count": None, "by_category": {}, "unmatched_images": None, "examples": []}
    index = record_index(records)
    found: list[dict[str, Any]] = []
    unmatched: set[str] = set()
    no = questions[questions["answer"] == "no"]
    for row in no.itertuples(index=False):
        rec = index.get(str(row.image_id))
        if rec is None:
            unmatched.add(str(row.image_id))
            continue
        why = contradiction(row, rec)
        if why:
            found.append({"qid": row.qid, "image_id": row.image_id, "category": row.category, "question": row.question, "why": why})
    by_cat: dict[str, int] = {}
    for f in found:
        by_cat[f["category"]] = by_cat.get(f["category"], 0) + 1
    return {"checked": True, "count": len(found), "by_category": by_cat, "checked_no_answers": int(len(no)),
            "unmatched_images": len(unmatched), "examples": found[:EXAMPLES], "qids": [f["qid"] for f in found]}
