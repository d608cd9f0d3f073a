"""ImageRecords -> closed yes/no probing questions (paper section 3, Appendix B).

One small generator per category (``GENERATORS``, in the order of
probmed.core.categories.CATEGORIES); each receives the image record, the
image's seeded RNG and a :class:`GenerationContext` (strategy, record-set
statistics, vocabularies, the report) and returns that category's questions
for the image as :class:`Draft` rows. Per image, in this order (rows of one
image contiguous, gt before adversary): one modality pair and one organ pair
(askable values only), one abnormality question when abnormality is known, for
a normal image a single hallucinated-condition question, a condition pair per
known-present condition, a position pair per (condition, position) finding.
A new category is its spec in probmed.core.categories plus a generator here.

Adversarial entities come from controlled vocabularies (curation.vocabularies)
with an RNG seeded by (seed, image_id), so one image's questions do not depend
on which other images are in the set; the generators of one image draw from
that RNG in category order. A hallucinated condition is never one
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
from typing import Callable, Mapping, Sequence

import pandas as pd
from tqdm import tqdm

from probmed.benchmark.curation.vocabularies import conditions_for, flip_side, positions_for
from probmed.core.categories import CATEGORIES, CategorySpec, category
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


@dataclass(frozen=True)
class Vocabularies:
    """The values generators ask about and draw adversaries from (one place to swap them)."""

    modalities: tuple[str, ...] = ASKABLE_MODALITIES
    organs: tuple[str, ...] = ASKABLE_ORGANS
    modality_confusion: Mapping[str, str] = field(default_factory=lambda: dict(MODALITY_CONFUSION))
    organ_confusion: Mapping[str, str] = field(default_factory=lambda: dict(ORGAN_CONFUSION))
    conditions_for: Callable[[str, str], Sequence[str]] = conditions_for
    positions_for: Callable[[str, str], Sequence[str]] = positions_for
    flip_side: Callable[[str], str | None] = flip_side
    absent_evidence: Mapping[str, str] = field(default_factory=lambda: dict(ABSENT_EVIDENCE))


@dataclass
class GenerationContext:
    """What every category generator may read besides the image record and its RNG."""

    strategy: str
    popularity: Popularity
    report: GenerationReport = field(default_factory=GenerationReport)
    vocab: Vocabularies = field(default_factory=Vocabularies)

    def pick(self, cands: Sequence[str], rng: random.Random, counts: Counter, hard: str | None) -> tuple[str, str]:
        """An adversarial value and the strategy that chose it (see the module doc)."""
        return _pick(cands, self.strategy, rng, counts, hard)

    def skip(self, reason: str) -> None:
        """Count a category not asked of an image (``skipped_categories`` in the report)."""
        self.report.skipped_categories[reason] += 1


@dataclass(frozen=True)
class Draft:
    """One question of an image, before the image's own fields (id, path, source, type) are added."""

    category: str
    polarity: str
    pair_key: str
    question: str
    answer: str
    entity: str
    qa_type: str
    strategy: str = "gt"
    evidence: str = ""


def pair(spec: CategorySpec, k: int | None, gt: tuple[str, str], adversary: tuple[str, str],
         strategy: str, evidence: str) -> list[Draft]:
    """A ground-truth question and its adversarial twin, each ``(question, entity)``; k numbers the pair."""
    key = spec.pair_key(k)
    return [
        Draft(spec.name, "gt", key, gt[0], "yes", gt[1], spec.gt_qa_type(k)),
        Draft(spec.name, "adversarial", key, adversary[0], "no", adversary[1], spec.hallu_qa_type(k), strategy, evidence),
    ]


def single(spec: CategorySpec, question: str, answer: str, entity: str, strategy: str = "gt", evidence: str = "") -> Draft:
    """The category's single (unpaired) question."""
    assert spec.single_qa_type is not None, f"category {spec.name} has no single question"
    return Draft(spec.name, "single", spec.single_qa_type, question, answer, entity, spec.single_qa_type, strategy, evidence)


Generator = Callable[[ImageRecord, random.Random, GenerationContext], list[Draft]]


def modality_questions(rec: ImageRecord, rng: random.Random, ctx: GenerationContext) -> list[Draft]:
    """One pair: the image's modality and another askable one."""
    if rec.modality not in ctx.vocab.modalities:
        ctx.skip(f"modality:{rec.modality}")
        return []
    cands = [m for m in ctx.vocab.modalities if m != rec.modality]
    adv, strat = ctx.pick(cands, rng, ctx.popularity.modality, ctx.vocab.modality_confusion.get(rec.modality))
    return pair(category("modality"), None, (modality_question(rec.modality), rec.modality),
                (modality_question(adv), adv), strat, f"image modality is {rec.modality}")


def organ_questions(rec: ImageRecord, rng: random.Random, ctx: GenerationContext) -> list[Draft]:
    """One pair: the image's organ and another askable one."""
    if rec.organ not in ctx.vocab.organs:
        ctx.skip(f"organ:{rec.organ}")
        return []
    cands = [o for o in ctx.vocab.organs if o != rec.organ]
    adv, strat = ctx.pick(cands, rng, ctx.popularity.organ, ctx.vocab.organ_confusion.get(rec.organ))
    return pair(category("organ"), None, (organ_question(rec.organ), rec.organ),
                (organ_question(adv), adv), strat, f"image organ is {rec.organ}")


def abnormality_questions(rec: ImageRecord, rng: random.Random, ctx: GenerationContext) -> list[Draft]:
    """One single question when the record knows whether the image is abnormal."""
    if rec.abnormal is None:
        return []
    return [single(category("abnormality"), ABNORMALITY_QUESTION, "yes" if rec.abnormal else "no", "abnormality")]


class HallucinatedConditions:
    """Draws an image's hallucinated conditions: never one known present, known-absent ones
    preferred, no repeats while the pool lasts; ``adversarial`` prefers the condition that
    co-occurs most with the image's conditions."""

    def __init__(self, rec: ImageRecord, present: Sequence[str], rng: random.Random, ctx: GenerationContext) -> None:
        self.rec, self.rng, self.ctx = rec, rng, ctx
        self.absent_known = set(rec.absent_conditions)
        self.cands = [c for c in ctx.vocab.conditions_for(rec.organ, rec.modality) if c not in present]
        self.preferred = [c for c in self.cands if c in self.absent_known]
        self.hard_row: Counter = Counter()
        for c in present:
            self.hard_row.update(ctx.popularity.cooccur.get(c, {}))
        self.used: set[str] = set()

    def draw(self) -> tuple[str, str, str] | None:
        """(condition, strategy, evidence), or None when no candidate exists."""
        base = self.preferred or self.cands
        pool = [c for c in base if c not in self.used] or base
        if not pool:
            return None
        hard = _top([c for c in pool if self.hard_row.get(c)], self.hard_row) if any(self.hard_row.get(c) for c in pool) else None
        adv, strat = self.ctx.pick(pool, self.rng, self.ctx.popularity.condition, hard)
        self.used.add(adv)
        if adv in self.absent_known:
            evidence = self.ctx.vocab.absent_evidence.get(self.rec.source, "known absent")
        else:
            evidence = "not known present (no absence evidence)"
        return adv, strat, evidence


def condition_questions(rec: ImageRecord, rng: random.Random, ctx: GenerationContext) -> list[Draft]:
    """A single hallucinated-condition question for a normal image; a pair per known-present condition."""
    spec = category("condition")
    present = list(dict.fromkeys(f.condition for f in rec.findings))
    hallucinated = HallucinatedConditions(rec, present, rng, ctx)
    out: list[Draft] = []
    if rec.abnormal is False and not present:
        got = hallucinated.draw()
        if got:
            adv, strat, evidence = got
            out.append(single(spec, condition_question(adv), "no", adv, strat, evidence))
    for k, cond in enumerate(present):
        got = hallucinated.draw()
        if got is None:
            ctx.skip("condition:no candidate")
            continue
        adv, strat, evidence = got
        out += pair(spec, k, (condition_question(cond), cond), (condition_question(adv), adv), strat, evidence)
    return out


def position_questions(rec: ImageRecord, rng: random.Random, ctx: GenerationContext) -> list[Draft]:
    """A pair per (condition, position) finding: the position and one not known for that condition
    (``adversarial``: the left-right flip)."""
    positioned = [f for f in dict.fromkeys(rec.findings) if f.position]
    known_pos: dict[str, set[str]] = {}
    for f in positioned:
        known_pos.setdefault(f.condition, set()).add(f.position)  # type: ignore[arg-type]
    vocab = ctx.vocab.positions_for(rec.organ, rec.modality)
    out: list[Draft] = []
    for k, f in enumerate(positioned):
        position: str = f.position  # type: ignore[assignment]
        flip = ctx.vocab.flip_side(position)
        cands = [p for p in dict.fromkeys([*vocab, *([flip] if flip else [])]) if p not in known_pos[f.condition]]
        if not cands:
            ctx.skip("position:no candidate")
            continue
        adv, strat = ctx.pick(cands, rng, ctx.popularity.position, flip)
        out += pair(category("position"), k, (position_question(f.condition, position), position),
                    (position_question(f.condition, adv), adv), strat,
                    f"not a known position of {f.condition} in this image")
    return out


# One generator per category of probmed.core.categories, called in this (the categories') order.
GENERATORS: dict[str, Generator] = {
    "modality": modality_questions,
    "organ": organ_questions,
    "abnormality": abnormality_questions,
    "condition": condition_questions,
    "position": position_questions,
}
assert tuple(GENERATORS) == CATEGORIES, "one generator per category, in the categories' order"


def image_questions(rec: ImageRecord, rng: random.Random, ctx: GenerationContext) -> list[Draft]:
    """Every category's questions for one image, in category order."""
    return [draft for generate in GENERATORS.values() for draft in generate(rec, rng, ctx)]


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
    ctx = GenerationContext(strategy, popularity or Popularity.of(records))
    report = ctx.report
    cols: dict[str, list] = {c: [] for c in QUESTION_COLUMNS}
    seen: set[str] = set()
    for rec in tqdm(records, desc="questions", disable=not progress, leave=False):
        iid = rec.image_id
        if not rec.image_path:
            report.excluded.setdefault("no image (caption-only record)", []).append(iid)
            continue
        if iid in seen:
            report.excluded.setdefault("duplicate image_id", []).append(iid)
            continue
        seen.add(iid)
        drafts = image_questions(rec, random.Random(f"{seed}:{iid}"), ctx)
        if not drafts:
            report.excluded.setdefault("nothing askable", []).append(iid)
            continue
        report.images += 1
        itype = image_type(rec.modality, rec.organ)
        for d in drafts:
            row = {"qid": question_id(iid, d.qa_type, d.question), "image_id": iid, "image_path": rec.image_path,
                   "source": rec.source, "pair_id": f"{iid}:{d.pair_key}", "image_type": itype, **vars(d)}
            for c in QUESTION_COLUMNS:
                cols[c].append(row[c])
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
