"""ImageRecords -> closed yes/no probing questions (paper section 3, Appendix B).

Per image, in this order (rows of one image contiguous, gt before adversary):
a modality pair, an organ pair, the abnormality question, a condition pair per
present condition, a normal image's single hallucinated condition, a position
pair per positioned finding. Every "no" obeys the truth rules of
:mod:`probmed.benchmark.truth` (field of view, clinical overlap, every QA of the
image, non-overlapping regions) and records its ``evidence`` (``known_absent``
preferred over ``assumed_absent``).

No question text may predict its answer (``strategy="balanced"``, the default):

* ground-truth conditions and positions come from ONE vocabulary per organ
  (curation.vocabularies); a finding outside it is left out of the questions;
* each value is asked as a hallucination as often as it is ground truth
  (balance.assign_balanced), so each text is answered "yes" about as often as "no";
* modality and organ pairs are asked on the largest subset of images whose texts
  can balance (balance.balanced_subset): with X-ray on most images, or a chest
  image that may only be asked about the brain, not every image can be asked;
* the abnormality question is asked on as many abnormal as normal images within
  each image type that has normal images, and not at all in types without them.

The POPE strategies stay selectable (each audited by `probmed audit`): ``random``
(uniform among the allowed values), ``popular`` (the value most often ground
truth in the record set), ``adversarial`` (the hardest confusion: CT<->MRI, the
condition co-occurring most with the image's findings, the left-right flip of a
position; ``random`` when none is allowed). Their texts are not balanced.

Randomness is seeded by ``seed`` (a balanced draw depends on the whole set: which
images there are decides what balances).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Hashable, Sequence

import pandas as pd

from probmed.benchmark import truth
from probmed.benchmark.balance import ASSUMED_ABSENT, KNOWN_ABSENT, Choice, Slot, assign_balanced, balanced_subset
from probmed.benchmark.curation.tables import condition_nouns
from probmed.benchmark.curation.vocabularies import CARDIAC_POSITION, conditions_for, flip_side, positions_for
from probmed.benchmark.lint import indefinite
from probmed.core.records import QUESTION_COLUMNS, ImageRecord, RecordError, validate_question_frame
from probmed.core.release_format import question_id
from probmed.core.vocab import ASKABLE_MODALITIES, ASKABLE_ORGANS, MODALITY_QUESTION_NAMES, ORGAN_QUESTION_NAMES, image_type

STRATEGIES: tuple[str, ...] = ("balanced", "random", "popular", "adversarial")
MODALITY_CONFUSION = {"ct": "mri", "mri": "ct", "x-ray": "ct"}
ORGAN_CONFUSION = {"chest": "abdomen", "abdomen": "chest", "brain": "spine", "spine": "brain"}
ABNORMALITY_QUESTION = "Is there any abnormality in this image?"


# --- question texts ----------------------------------------------------------------------------------------


def modality_question(mod: str) -> str:
    return f"Is this {indefinite(MODALITY_QUESTION_NAMES[mod])} image?"


def organ_question(organ: str) -> str:
    return f"Does this image show the {ORGAN_QUESTION_NAMES[organ]}?"


def condition_phrase(condition: str) -> str:
    """"a mass", "an effusion", "pneumonia": the condition with the article its noun takes."""
    noun = condition_nouns().get(condition)
    return indefinite(condition) if noun is not None and noun.kind == "count" else condition


def condition_question(condition: str) -> str:
    return f"Is there evidence of {condition_phrase(condition)} in this image?"


def position_question(condition: str, position: str) -> str:
    """"Is the mass located in the right upper lung zone?"; both sides: "Are the effusions located in both ...?"."""
    words = position.split()
    both = words[0] in ("both", "bilateral") and len(words) > 1
    place = "both " + " ".join(words[1:]) if both else position
    if position in ("left", "right"):
        where = f"on the {position} side"
    else:
        where = f"in {place}" if both else f"in the {place}"
    noun = condition_nouns().get(condition)
    if both and noun is not None and noun.kind != "mass" and noun.plural:
        return f"Are the {noun.plural} located {where}?"
    return f"Is the {condition} located {where}?"


# --- what each image may be asked --------------------------------------------------------------------------


@dataclass
class PairPlan:
    """A ground-truth value and the slot for its hallucinated twin."""

    rec: ImageRecord
    category: str
    k: int | None
    value: str
    slot: Slot
    subject: str = ""  # the condition a position pair is about


@dataclass
class GenerationReport:
    images: int = 0
    questions: int = 0
    strategy: str = "balanced"
    excluded: dict[str, list[str]] = field(default_factory=dict)
    skipped: Counter = field(default_factory=Counter)  # "category: reason" -> count

    def to_json(self) -> dict:
        return {
            "images": self.images,
            "questions": self.questions,
            "strategy": self.strategy,
            "excluded": {k: {"count": len(v), "ids": v} for k, v in self.excluded.items()},
            "skipped": dict(sorted(self.skipped.items())),
        }


def _plan_modality_organ(recs: Sequence[ImageRecord], report: GenerationReport) -> list[PairPlan]:
    plans = []
    for rec in recs:
        if rec.modality in ASKABLE_MODALITIES:
            cands = tuple(m for m in ASKABLE_MODALITIES if m != rec.modality)
            plans.append(PairPlan(rec, "modality", None, rec.modality, Slot((rec.image_id, "modality"), cands, frozenset(cands))))
        else:
            report.skipped[f"modality: not askable ({rec.modality})"] += 1
        if rec.organ not in ASKABLE_ORGANS:
            report.skipped[f"organ: not askable ({rec.organ})"] += 1
            continue
        cands = truth.organ_adversaries(rec)
        if not cands:
            report.skipped["organ: every other organ is in the field of view"] += 1
            continue
        plans.append(PairPlan(rec, "organ", None, rec.organ, Slot((rec.image_id, "organ"), cands, frozenset(cands))))
    return plans


def _plan_conditions(rec: ImageRecord, report: GenerationReport) -> tuple[list[PairPlan], Slot | None]:
    """The image's condition pairs, and the single hallucinated slot of a normal image."""
    vocab = conditions_for(rec.organ, rec.modality)
    present = list(dict.fromkeys(truth.canonical_condition(f.condition) for f in rec.findings))
    asked = [c for c in present if c in vocab]
    report.skipped["condition: finding outside the organ vocabulary"] += len(present) - len(asked)
    cands = truth.condition_adversaries(rec, vocab)
    known = truth.known_absent_conditions(rec) & frozenset(cands)
    if not cands:
        if asked or rec.abnormal is False:
            report.skipped["condition: no value is surely absent (nonspecific finding)"] += 1
        return [], None
    plans = [PairPlan(rec, "condition", k, c, Slot((rec.image_id, "condition", k), cands, known)) for k, c in enumerate(asked)]
    single = Slot((rec.image_id, "condition", None), cands, known) if rec.abnormal is False and not present else None
    return plans, single


def _plan_positions(rec: ImageRecord, report: GenerationReport) -> list[PairPlan]:
    vocab = positions_for(rec.organ, rec.modality)
    conds = conditions_for(rec.organ, rec.modality)
    plans: list[PairPlan] = []
    seen: set[tuple[str, str]] = set()
    for f in rec.findings:
        cond = truth.canonical_condition(f.condition)
        if not f.position or (cond, f.position) in seen:
            continue
        seen.add((cond, f.position))
        if f.position == CARDIAC_POSITION:
            report.skipped["position: cardiac finding (its position is the heart)"] += 1
        elif f.position not in vocab or cond not in conds:
            report.skipped["position: outside the organ vocabulary"] += 1
        elif not (cands := truth.position_adversaries(rec, cond, vocab)):
            report.skipped["position: no position free of the finding"] += 1
        else:
            k = len(plans)
            plans.append(PairPlan(rec, "position", k, f.position, Slot((rec.image_id, "position", k), cands), subject=cond))
    return plans


def _abnormality_subset(recs: Sequence[ImageRecord], rng: random.Random, report: GenerationReport) -> set[str]:
    """Images asked the abnormality question: as many normal as abnormal ones per image type that has both."""
    by_type: dict[str, tuple[list[str], list[str]]] = {}
    for rec in recs:
        if rec.abnormal is None:
            continue
        by_type.setdefault(image_type(rec.modality, rec.organ), ([], []))[int(bool(rec.abnormal))].append(rec.image_id)
    keep: set[str] = set()
    for itype in sorted(by_type):
        normal, abnormal = (sorted(x) for x in by_type[itype])
        if not normal or not abnormal:
            report.skipped["abnormality: image type without normal images"] += len(normal) + len(abnormal)
            continue
        n = min(len(normal), len(abnormal))
        rng.shuffle(normal)
        rng.shuffle(abnormal)
        keep.update(normal[:n] + abnormal[:n])
        report.skipped["abnormality: left out to balance normal and abnormal"] += len(normal) + len(abnormal) - 2 * n
    return keep


# --- choosing hallucinated values ----------------------------------------------------------------------------


@dataclass
class Popularity:
    """Record-set statistics: how often each value is ground truth, and condition co-occurrence."""

    counts: Counter = field(default_factory=Counter)  # (category, value) -> images
    cooccur: dict[str, Counter] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Sequence[ImageRecord]) -> "Popularity":
        pop = cls()
        for r in records:
            pop.counts["modality", r.modality] += 1
            pop.counts["organ", r.organ] += 1
            conds = sorted({truth.canonical_condition(f.condition) for f in r.findings})
            pop.counts.update(("condition", c) for c in conds)
            pop.counts.update(("position", f.position) for f in r.findings if f.position)
            for a in conds:
                pop.cooccur.setdefault(a, Counter()).update(b for b in conds if b != a)
        return pop


def _hard(plan: PairPlan, pop: Popularity) -> str | None:
    if plan.category == "modality":
        return MODALITY_CONFUSION.get(plan.value)
    if plan.category == "organ":
        return ORGAN_CONFUSION.get(plan.value)
    if plan.category == "position":
        return flip_side(plan.value)
    row: Counter = Counter()
    for f in plan.rec.findings:
        row.update(pop.cooccur.get(truth.canonical_condition(f.condition), {}))
    allowed = [c for c in plan.slot.candidates if row.get(c)]
    return max(allowed, key=lambda c: (row[c], c)) if allowed else None


def _pope_choice(slot: Slot, category: str, strategy: str, rng: random.Random, pop: Popularity, hard: str | None) -> tuple[Choice, str]:
    pool = [c for c in slot.candidates if c in slot.known_absent] or list(slot.candidates)
    if strategy == "adversarial" and hard in slot.candidates:
        value, used = hard, "adversarial"
    elif strategy == "popular":
        value, used = max(pool, key=lambda c: (pop.counts.get((category, c), 0), c)), "popular"
    else:
        value, used = pool[rng.randrange(len(pool))], "random"
    return Choice(value, KNOWN_ABSENT if value in slot.known_absent else ASSUMED_ABSENT), used


def _choose(plans: Sequence[PairPlan], singles: Sequence[Slot], strategy: str, rng: random.Random, pop: Popularity) -> dict[Hashable, tuple[Choice | None, str]]:
    """Each slot's value and the strategy that chose it, per category (and per condition for positions)."""
    out: dict[Hashable, tuple[Choice | None, str]] = {}
    if strategy != "balanced":
        for p in plans:
            out[p.slot.key] = _pope_choice(p.slot, p.category, strategy, rng, pop, _hard(p, pop))
        for s in singles:
            out[s.key] = _pope_choice(s, "condition", strategy, rng, pop, None)
        return out
    groups: dict[tuple[str, str], list[PairPlan]] = {("condition", ""): []} if singles else {}
    for p in plans:  # a text is (category, value), or (condition, position) for positions
        groups.setdefault((p.category, p.subject), []).append(p)
    for (category, _), members in sorted(groups.items()):
        extra = list(singles) if category == "condition" else []
        for key, choice in _capped_assignment(members, extra, rng).items():
            out[key] = (choice, "balanced")
    return out


def _capped_assignment(members: list[PairPlan], extra: list[Slot], rng: random.Random, rounds: int = 4) -> dict[Hashable, Choice | None]:
    """Balanced assignment; a value the truth rules cannot ask often enough as a hallucination loses ground-truth
    pairs (a random few) until its text balances: a cap, not a guess."""
    keys = [p.slot.key for p in members] + [s.key for s in extra]
    chosen: dict[Hashable, Choice | None] = {}
    for _ in range(rounds):
        targets = Counter(p.value for p in members)
        chosen = assign_balanced([p.slot for p in members] + extra, targets, rng)
        used = Counter(c.value for c in chosen.values() if c is not None)
        short = {v: n - used[v] for v, n in targets.items() if n > used[v]}
        if not short:
            break
        drop: set[Hashable] = set()
        for value, n in sorted(short.items()):
            mine = sorted((p.slot.key for p in members if p.value == value), key=str)
            rng.shuffle(mine)
            drop.update(mine[:n])
        members = [p for p in members if p.slot.key not in drop]
    return {k: chosen.get(k) for k in keys}


def _balanced_pairs(plans: list[PairPlan], rng: random.Random, report: GenerationReport) -> list[PairPlan]:
    """Modality and organ pairs on the largest subset of images whose texts balance (balance.balanced_subset)."""
    keep: list[PairPlan] = []
    for category in ("modality", "organ"):
        mine = [p for p in plans if p.category == category]
        chosen = balanced_subset([(p.slot.key, p.value, p.slot.candidates) for p in mine], rng)
        keep += [p for p in mine if p.slot.key in chosen]
        report.skipped[f"{category}: left out so that every text balances"] += len(mine) - len(chosen)
    return keep + [p for p in plans if p.category not in ("modality", "organ")]


class _Rows:
    """The question table, column by column."""

    def __init__(self) -> None:
        self.cols: dict[str, list] = {c: [] for c in QUESTION_COLUMNS}

    def add(self, rec: ImageRecord, category: str, polarity: str, pair_key: str, question: str, answer: str,
            entity: str, qa_type: str, strategy: str, evidence: str) -> None:
        values = {
            "qid": question_id(rec.image_id, qa_type, question), "image_id": rec.image_id, "image_path": rec.image_path,
            "source": rec.source, "category": category, "polarity": polarity, "pair_id": f"{rec.image_id}:{pair_key}",
            "question": question, "answer": answer, "entity": entity, "image_type": image_type(rec.modality, rec.organ),
            "qa_type": qa_type, "strategy": strategy, "evidence": evidence,
        }
        for c in QUESTION_COLUMNS:
            self.cols[c].append(values[c])

    def __len__(self) -> int:
        return len(self.cols["qid"])


_TEXT = {"modality": modality_question, "organ": organ_question, "condition": condition_question}
_QA = {"modality": "modality", "organ": "body_part", "condition": "entity", "position": "grounding"}


def _add_pair(rows: _Rows, plan: PairPlan, choice: Choice, how: str) -> None:
    qa = _QA[plan.category]
    suffix = "" if plan.k is None else f"_{plan.k}"
    if plan.category == "position":
        gt_q, adv_q = position_question(plan.subject, plan.value), position_question(plan.subject, choice.value)
    else:
        gt_q, adv_q = _TEXT[plan.category](plan.value), _TEXT[plan.category](choice.value)
    rows.add(plan.rec, plan.category, "gt", qa + suffix, gt_q, "yes", plan.value, f"{qa}_gt{suffix}", "gt", "")
    rows.add(plan.rec, plan.category, "adversarial", qa + suffix, adv_q, "no", choice.value, f"{qa}_hallu{suffix}", how, choice.evidence)


def _abnormality_evidence(rec: ImageRecord) -> str:
    """A "no" to the abnormality question rests on a label ("No Finding", a whole-image QA answer)."""
    return "" if rec.abnormal else KNOWN_ABSENT


def generate_questions(
    records: Sequence[ImageRecord],
    seed: int = 0,
    strategy: str = "balanced",
    popularity: Popularity | None = None,
    progress: bool = False,
) -> tuple[pd.DataFrame, GenerationReport]:
    """Questions for every record with an image; returns (question table, report)."""
    if strategy not in STRATEGIES:
        raise RecordError(f"question strategy {strategy!r} not in {STRATEGIES}")
    report = GenerationReport(strategy=strategy)
    recs: list[ImageRecord] = []
    seen: set[str] = set()
    for rec in records:
        reason = "no image (caption-only record)" if not rec.image_path else "duplicate image_id" if rec.image_id in seen else None
        if reason:
            report.excluded.setdefault(reason, []).append(rec.image_id)
            continue
        seen.add(rec.image_id)
        recs.append(rec)
    rng = random.Random(f"probmed-questions:{seed}")
    plans = _plan_modality_organ(recs, report)
    singles: list[Slot] = []
    for rec in recs:
        pairs, single = _plan_conditions(rec, report)
        plans += pairs + _plan_positions(rec, report)
        singles += [single] if single else []
    if strategy == "balanced":
        plans = _balanced_pairs(plans, rng, report)
    chosen = _choose(plans, singles, strategy, rng, popularity or Popularity.of(recs))
    abnormality = _abnormality_subset(recs, rng, report)
    by_image: dict[str, list[PairPlan]] = {}
    for p in plans:
        by_image.setdefault(p.rec.image_id, []).append(p)
    rows = _Rows()
    order = {"modality": 0, "organ": 1, "condition": 3, "position": 5}
    for rec in recs:
        before = len(rows)
        mine = sorted(by_image.get(rec.image_id, []), key=lambda p: (order[p.category], p.k or 0))
        for p in mine:
            if p.category in ("modality", "organ"):
                _add_pair(rows, p, *chosen[p.slot.key])  # type: ignore[arg-type]
        if rec.image_id in abnormality:
            rows.add(rec, "abnormality", "single", "abnormality", ABNORMALITY_QUESTION, "yes" if rec.abnormal else "no",
                     "abnormality", "abnormality", "gt", _abnormality_evidence(rec))
        for p in mine:
            if p.category == "condition" and chosen[p.slot.key][0] is not None:
                _add_pair(rows, p, *chosen[p.slot.key])  # type: ignore[arg-type]
        single = chosen.get((rec.image_id, "condition", None))
        if single and single[0] is not None:
            c = single[0]
            rows.add(rec, "condition", "single", "entity_hallu", condition_question(c.value), "no", c.value, "entity_hallu", single[1], c.evidence)
        for p in mine:
            if p.category == "position" and chosen[p.slot.key][0] is not None:
                _add_pair(rows, p, *chosen[p.slot.key])  # type: ignore[arg-type]
        if len(rows) == before:
            report.excluded.setdefault("nothing askable", []).append(rec.image_id)
        else:
            report.images += 1
    frame = pd.DataFrame(rows.cols, columns=list(QUESTION_COLUMNS))
    report.questions = len(frame)
    validate_question_frame(frame, "generated questions")
    return frame, report
