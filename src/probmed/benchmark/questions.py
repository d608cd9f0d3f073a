"""ImageRecords -> closed yes/no probing questions (paper section 3, Appendix B).

Per image, in this order (rows of one image contiguous, gt before adversary):
one modality pair and one organ pair (askable values only), one abnormality
question when abnormality is known, a condition pair per known-present
condition, a position pair per (condition, position) finding, and for a normal
image a single hallucinated-condition question.

Adversarial entities come from controlled vocabularies (curation.vocabularies)
with an RNG seeded by (seed, image_id), so one image's questions do not depend
on which other images are in the set. A hallucinated condition is never one
known present in the image; known-absent ones are preferred and the evidence
is recorded. POPE-style strategies pick among the candidates:

* ``random``: uniform;
* ``popular``: the candidate most frequent in the whole record set;
* ``adversarial``: the hardest confusion: for conditions the one co-occurring
  most often with this image's conditions, for positions the left-right flip,
  for modality/organ a fixed confusion map (CT<->MRI, chest<->abdomen, ...).
  When no hard choice exists the question falls back to ``random`` and says so.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd
from tqdm import tqdm

from probmed.benchmark.curation.vocabularies import conditions_for, flip_side, positions_for
from probmed.core.release_format import question_id
from probmed.core.records import QUESTION_COLUMNS, ImageRecord, validate_question_frame
from probmed.core.errors import RecordError
from probmed.core.vocab import (
    ASKABLE_MODALITIES,
    ASKABLE_ORGANS,
    MODALITY_QUESTION_NAMES,
    ORGAN_QUESTION_NAMES,
    image_type,
)

STRATEGIES: tuple[str, ...] = ("random", "popular", "adversarial")
MODALITY_CONFUSION = {"ct": "mri", "mri": "ct", "x-ray": "ct"}
ORGAN_CONFUSION = {"chest": "abdomen", "abdomen": "chest", "brain": "spine", "spine": "brain"}
ABSENT_EVIDENCE = {
    "ChestX-ray14": "known absent: label table does not give the image this label",
    "VQA-RAD": "known absent: a VQA-RAD question about it is answered no",
}


def modality_question(mod: str) -> str:
    name = MODALITY_QUESTION_NAMES[mod]
    return f"Is this {'an' if name[0] in 'AEIOUMX' else 'a'} {name} image?"


def organ_question(organ: str) -> str:
    return f"Does this image show the {ORGAN_QUESTION_NAMES[organ]}?"


def condition_question(condition: str) -> str:
    return f"Is there evidence of {condition} in this image?"


def position_question(condition: str, position: str) -> str:
    if position in ("left", "right", "bilateral"):
        return f"Is the {condition} on the {position} side?" if position != "bilateral" else f"Is the {condition} bilateral?"
    return f"Is the {condition} located in the {position}?"


ABNORMALITY_QUESTION = "Is there any abnormality in this image?"


_qid = question_id  # one qid rule for generated and imported questions


@dataclass
class Popularity:
    """Record-set statistics the popular/adversarial strategies rank by."""

    modality: Counter = field(default_factory=Counter)
    organ: Counter = field(default_factory=Counter)
    condition: Counter = field(default_factory=Counter)
    position: Counter = field(default_factory=Counter)
    cooccur: dict[str, Counter] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Sequence[ImageRecord]) -> "Popularity":
        pop = cls()
        for r in records:
            pop.modality[r.modality] += 1
            pop.organ[r.organ] += 1
            conds = sorted({f.condition for f in r.findings})
            pop.condition.update(conds)
            pop.position.update(f.position for f in r.findings if f.position)
            for a in conds:
                row = pop.cooccur.setdefault(a, Counter())
                row.update(b for b in conds if b != a)
        return pop


def _top(cands: Sequence[str], counts: Counter) -> str:
    return max(cands, key=lambda c: (counts.get(c, 0), c))


def _pick(cands: Sequence[str], strategy: str, rng: random.Random, counts: Counter, hard: str | None) -> tuple[str, str]:
    if strategy == "adversarial" and hard is not None and hard in cands:
        return hard, "adversarial"
    if strategy == "popular":
        return _top(cands, counts), "popular"
    return cands[rng.randrange(len(cands))], "random"


@dataclass
class GenerationReport:
    images: int = 0
    questions: int = 0
    excluded: dict[str, list[str]] = field(default_factory=dict)
    skipped_categories: Counter = field(default_factory=Counter)

    def to_json(self) -> dict:
        return {
            "images": self.images,
            "questions": self.questions,
            "excluded": {k: {"count": len(v), "ids": v} for k, v in self.excluded.items()},
            "skipped_categories": dict(self.skipped_categories),
        }


def generate_questions(
    records: Sequence[ImageRecord],
    seed: int = 0,
    strategy: str = "random",
    popularity: Popularity | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, GenerationReport]:
    """Questions for every record with an image; returns (question table, report)."""
    if strategy not in STRATEGIES:
        raise RecordError(f"question strategy {strategy!r} not in {STRATEGIES}")
    pop = popularity or Popularity.of(records)
    cols: dict[str, list] = {c: [] for c in QUESTION_COLUMNS}
    report = GenerationReport()
    seen: set[str] = set()

    def add(rec: ImageRecord, itype: str, category: str, polarity: str, pair_id: str, question: str, answer: str, entity: str, qa_type: str, strat: str, evidence: str) -> None:
        cols["qid"].append(_qid(rec.image_id, qa_type, question))
        cols["image_id"].append(rec.image_id)
        cols["image_path"].append(rec.image_path)
        cols["source"].append(rec.source)
        cols["category"].append(category)
        cols["polarity"].append(polarity)
        cols["pair_id"].append(pair_id)
        cols["question"].append(question)
        cols["answer"].append(answer)
        cols["entity"].append(entity)
        cols["image_type"].append(itype)
        cols["qa_type"].append(qa_type)
        cols["strategy"].append(strat)
        cols["evidence"].append(evidence)

    for rec in tqdm(records, desc="questions", disable=not progress, leave=False):
        iid = rec.image_id
        if not rec.image_path:
            report.excluded.setdefault("no image (caption-only record)", []).append(iid)
            continue
        if iid in seen:
            report.excluded.setdefault("duplicate image_id", []).append(iid)
            continue
        seen.add(iid)
        rng = random.Random(f"{seed}:{iid}")
        itype = image_type(rec.modality, rec.organ)
        before = len(cols["qid"])
        if rec.modality in ASKABLE_MODALITIES:
            cands = [m for m in ASKABLE_MODALITIES if m != rec.modality]
            adv, strat = _pick(cands, strategy, rng, pop.modality, MODALITY_CONFUSION.get(rec.modality))
            pid = f"{iid}:modality"
            add(rec, itype, "modality", "gt", pid, modality_question(rec.modality), "yes", rec.modality, "modality_gt", "gt", "")
            add(rec, itype, "modality", "adversarial", pid, modality_question(adv), "no", adv, "modality_hallu", strat, f"image modality is {rec.modality}")
        else:
            report.skipped_categories[f"modality:{rec.modality}"] += 1
        if rec.organ in ASKABLE_ORGANS:
            cands = [o for o in ASKABLE_ORGANS if o != rec.organ]
            adv, strat = _pick(cands, strategy, rng, pop.organ, ORGAN_CONFUSION.get(rec.organ))
            pid = f"{iid}:body_part"
            add(rec, itype, "organ", "gt", pid, organ_question(rec.organ), "yes", rec.organ, "body_part_gt", "gt", "")
            add(rec, itype, "organ", "adversarial", pid, organ_question(adv), "no", adv, "body_part_hallu", strat, f"image organ is {rec.organ}")
        else:
            report.skipped_categories[f"organ:{rec.organ}"] += 1
        if rec.abnormal is not None:
            add(rec, itype, "abnormality", "single", f"{iid}:abnormality", ABNORMALITY_QUESTION, "yes" if rec.abnormal else "no", "abnormality", "abnormality", "gt", "")

        present = list(dict.fromkeys(f.condition for f in rec.findings))
        vocab = conditions_for(rec.organ, rec.modality)
        absent_known = set(rec.absent_conditions)
        cands = [c for c in vocab if c not in present]
        preferred = [c for c in cands if c in absent_known]
        hard_row: Counter = Counter()
        for c in present:
            hard_row.update(pop.cooccur.get(c, {}))
        used: set[str] = set()

        def hallucinated_condition() -> tuple[str, str, str] | None:
            pool = [c for c in (preferred or cands) if c not in used] or (preferred or cands)
            if not pool:
                return None
            hard = _top([c for c in pool if hard_row.get(c)], hard_row) if any(hard_row.get(c) for c in pool) else None
            adv, strat = _pick(pool, strategy, rng, pop.condition, hard)
            used.add(adv)
            ev = ABSENT_EVIDENCE.get(rec.source, "known absent") if adv in absent_known else "not known present (no absence evidence)"
            return adv, strat, ev

        if rec.abnormal is False and not present:
            got = hallucinated_condition()
            if got:
                adv, strat, ev = got
                add(rec, itype, "condition", "single", f"{iid}:entity_hallu", condition_question(adv), "no", adv, "entity_hallu", strat, ev)
        for k, cond in enumerate(present):
            got = hallucinated_condition()
            if got is None:
                report.skipped_categories["condition:no candidate"] += 1
                continue
            adv, strat, ev = got
            pid = f"{iid}:entity_{k}"
            add(rec, itype, "condition", "gt", pid, condition_question(cond), "yes", cond, f"entity_gt_{k}", "gt", "")
            add(rec, itype, "condition", "adversarial", pid, condition_question(adv), "no", adv, f"entity_hallu_{k}", strat, ev)
        positioned = [f for f in dict.fromkeys(rec.findings) if f.position]
        known_pos: dict[str, set[str]] = {}
        for f in positioned:
            known_pos.setdefault(f.condition, set()).add(f.position)  # type: ignore[arg-type]
        pos_vocab = positions_for(rec.organ, rec.modality)
        for k, f in enumerate(positioned):
            flip = flip_side(f.position)  # type: ignore[arg-type]
            cands_p = [p for p in dict.fromkeys([*pos_vocab, *([flip] if flip else [])]) if p not in known_pos[f.condition]]
            if not cands_p:
                report.skipped_categories["position:no candidate"] += 1
                continue
            adv, strat = _pick(cands_p, strategy, rng, pop.position, flip)
            pid = f"{iid}:grounding_{k}"
            add(rec, itype, "position", "gt", pid, position_question(f.condition, f.position), "yes", f.position, f"grounding_gt_{k}", "gt", "")  # type: ignore[arg-type]
            add(rec, itype, "position", "adversarial", pid, position_question(f.condition, adv), "no", adv, f"grounding_hallu_{k}", strat, f"not a known position of {f.condition} in this image")
        if len(cols["qid"]) == before:
            report.excluded.setdefault("nothing askable", []).append(iid)
        else:
            report.images += 1
    frame = pd.DataFrame(cols, columns=list(QUESTION_COLUMNS))
    report.questions = len(frame)
    validate_question_frame(frame, "generated questions")
    return frame, report


def check_no_known_present(frame: pd.DataFrame, records: Sequence[ImageRecord]) -> list[str]:
    """qids of adversarial/single questions whose entity is known present for the image (should be none)."""
    by_id = {r.image_id: r for r in records}
    bad = []
    for row in frame[frame["answer"] == "no"].itertuples(index=False):
        rec = by_id[row.image_id]
        if row.category == "condition" and row.entity in {f.condition for f in rec.findings}:
            bad.append(row.qid)
        elif row.category == "modality" and row.entity == rec.modality:
            bad.append(row.qid)
        elif row.category == "organ" and row.entity == rec.organ:
            bad.append(row.qid)
        elif row.category == "position":
            cond = row.question.split("Is the ", 1)[-1]
            if any(f.position == row.entity and cond.startswith(f.condition + " ") for f in rec.findings):
                bad.append(row.qid)
    return bad
