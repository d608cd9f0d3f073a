"""What each image is asked, and which hallucinated value each adversarial question names.

The question generators (benchmark.questions) write the questions of one image;
this module decides, over the whole record set, what they write: which pairs
are asked, and for every adversarial slot its value, the strategy that chose it
and its evidence. Every value obeys the truth rules (benchmark.truth: field of
view, clinical overlap, every QA of the image, non-overlapping regions).

``balanced`` (the default) makes no question text predict its answer:

* ground-truth conditions and positions come from ONE vocabulary per organ
  (curation.vocabularies); a finding outside it is left out;
* each value is asked as a hallucination as often as it is ground truth
  (balance.assign_balanced), known-absent candidates first; a value the truth
  rules cannot ask often enough loses ground-truth pairs until its text balances;
* modality and organ pairs are asked on the largest fair subset of images
  whose texts can balance AND on which no fixed yes/no per value wins more than
  balance.CUT_SLACK above the least share any balanced design allows
  (balance.balanced_design, which also fixes each image's adversary): with X-ray
  on most images, "X-ray? yes" would otherwise win every X-ray pair; where the
  truth rules allow nothing better (every organ pair pits the brain against a
  body organ) the share stays what it is and the audit reports it. They are
  planned last: among the images a design treats alike, those with the fewest
  questions so far are taken, so an image is not left without any question
  while an interchangeable one with others keeps its pair;
* condition and position pairs balance among themselves within each source's
  image type, not only over the set, so a model that recognises the image type
  or the source finds no prior either; condition pairs also apart on images
  asked one, two, and three or more findings (``DEPTHS``), and each value's adversaries spread over
  its partners (balance.spread_partners); normal images' single hallucinated
  findings are drawn after, in proportion to how often each value is truth;
* the abnormality question is asked on as many abnormal as normal images
  within each image type that has normal images, and not at all in the others.

A balanced plan depends on the whole set (which images there are decides what
balances), seeded by ``seed``. The POPE strategies draw per image with an RNG
seeded by (seed, image id), so one image's values do not depend on the others:
``random`` (uniform among the allowed values), ``popular`` (the value most
often ground truth in the record set), ``adversarial`` (the hardest confusion:
CT<->MRI, the condition co-occurring most with the image's findings, the
left-right flip of a position; ``random`` when none is allowed). Their texts
are not balanced: `probmed audit` shows how much that leaks.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Hashable, Mapping, Sequence

from probmed.benchmark import truth
from probmed.benchmark.balance import (
    ASSUMED_ABSENT,
    KNOWN_ABSENT,
    Choice,
    Slot,
    assign_balanced,
    balanced_design,
    spread_partners,
)
from probmed.benchmark.curation.tables import organ_unseen
from probmed.benchmark.curation.vocabularies import (
    CARDIAC_POSITION,
    conditions_for,
    flip_side,
    positions_for,
)
from probmed.core.params_schema import Questions
from probmed.core.records import ImageRecord
from probmed.core.vocab import EXTENDED_SCOPE, Scope, image_type

STRATEGIES: tuple[str, ...] = ("balanced", "random", "popular", "adversarial")
DEPTHS = 3  # condition texts balance apart on images asked 1, 2, and 3 or more findings (_conditional_choices)
MODALITY_CONFUSION = {"ct": "mri", "mri": "ct", "x-ray": "ct"}
ORGAN_CONFUSION = {"chest": "abdomen", "abdomen": "chest", "brain": "spine", "spine": "brain"}


@dataclass
class GenerationReport:
    """What question generation did: images and questions made, what it excluded or skipped and why."""

    images: int = 0
    questions: int = 0
    strategy: str = Questions().strategy
    excluded: dict[str, list[str]] = field(default_factory=dict)
    skipped_categories: Counter = field(default_factory=Counter)  # "category: reason" -> count
    abnormality_by_type: dict[str, dict] = field(default_factory=dict)  # image type -> where abnormality is asked, why

    def to_json(self) -> dict:
        return {
            "images": self.images,
            "questions": self.questions,
            "strategy": self.strategy,
            "excluded": {k: {"count": len(v), "ids": v} for k, v in self.excluded.items()},
            "skipped_categories": dict(sorted(self.skipped_categories.items())),
            "abnormality_by_type": dict(sorted(self.abnormality_by_type.items())),
        }


@dataclass
class PairPlan:
    """A ground-truth value of an image and the slot of its hallucinated twin."""

    rec: ImageRecord
    category: str
    k: int | None
    value: str
    slot: Slot
    subject: str = ""  # the condition a position pair is about


@dataclass
class QuestionPlan:
    """The set-level decisions the per-category generators read."""

    pairs: dict[str, list[PairPlan]] = field(default_factory=dict)  # image id -> its pairs, in category order
    choices: dict[Hashable, tuple[Choice | None, str]] = field(default_factory=dict)  # slot key -> (value, strategy)
    abnormality: set[str] = field(default_factory=set)  # images asked the abnormality question

    def single(self, image_id: str) -> tuple[Choice | None, str] | None:
        """The single hallucinated condition of a normal image, if it has one."""
        return self.choices.get((image_id, "condition", None))


# --- what may be asked (the truth rules decide the candidates) ---------------------------------------------


def _plan_modality_organ(recs: Sequence[ImageRecord], report: GenerationReport, scope: Scope) -> list[PairPlan]:
    plans = []
    for rec in recs:
        if rec.modality in scope.modalities:
            cands = _others(scope.modalities, rec.modality)
            plans.append(PairPlan(rec, "modality", None, rec.modality, Slot((rec.image_id, "modality"), cands, _as_set(cands))))
        else:
            report.skipped_categories[f"modality: not askable ({rec.modality})"] += 1
        if rec.organ not in scope.organs:
            report.skipped_categories[f"organ: not askable ({rec.organ})"] += 1
            continue
        if (rec.modality, rec.organ) in organ_unseen():  # its "yes" would be false: no slot of the organ design
            report.skipped_categories[f"organ: {rec.modality} images do not show the {rec.organ}"] += 1
            continue
        if rec.provenance.get("organ_abstained"):  # the caption's organ may be out of the figure's view
            report.skipped_categories[f"organ: abstained, a site outside the {rec.organ}'s field named"] += 1
            continue
        cands = truth.organ_adversaries(rec, scope.organs)
        if not cands:
            report.skipped_categories["organ: every other organ is in the field of view"] += 1
            continue
        plans.append(PairPlan(rec, "organ", None, rec.organ, Slot((rec.image_id, "organ"), cands, _as_set(cands))))
    return plans


@lru_cache(maxsize=None)
def _others(values: tuple[str, ...], own: str) -> tuple[str, ...]:
    """``values`` without ``own``, cached: asked once per image, of a handful of modalities."""
    return tuple(v for v in values if v != own)


@lru_cache(maxsize=4096)
def _as_set(values: tuple[str, ...]) -> frozenset[str]:
    """The frozenset of a candidate tuple, cached: images share a few candidate tuples (one set each, not one per slot)."""
    return frozenset(values)


def _plan_conditions(rec: ImageRecord, report: GenerationReport) -> tuple[list[PairPlan], Slot | None]:
    """The image's condition pairs, and the single hallucinated slot of a normal image."""
    vocab = conditions_for(rec.organ, rec.modality)
    present = list(dict.fromkeys(truth.canonical_condition(f.condition) for f in rec.findings))
    asked = [c for c in present if c in vocab]
    report.skipped_categories["condition: finding outside the organ vocabulary"] += len(present) - len(asked)
    cands = truth.condition_adversaries(rec, vocab)
    known = truth.known_absent_conditions(rec) & frozenset(cands)
    if not cands:
        if asked or rec.abnormal is False:
            report.skipped_categories["condition: no value is surely absent (nonspecific finding)"] += 1
        return [], None
    plans = [PairPlan(rec, "condition", k, c, Slot((rec.image_id, "condition", k), cands, known, rec.image_id))
             for k, c in enumerate(asked)]
    single = Slot((rec.image_id, "condition", None), cands, known, rec.image_id) if rec.abnormal is False and not present else None
    return plans, single


def _plan_positions(rec: ImageRecord, report: GenerationReport) -> list[PairPlan]:
    conds = conditions_for(rec.organ, rec.modality)
    plans: list[PairPlan] = []
    seen: set[tuple[str, str]] = set()
    for f in rec.findings:
        cond = truth.canonical_condition(f.condition)
        vocab = positions_for(rec.organ, rec.modality, cond)  # pleural processes: pleural positions
        if not f.position or (cond, f.position) in seen:
            continue
        seen.add((cond, f.position))
        if f.position == CARDIAC_POSITION:
            report.skipped_categories["position: cardiac finding (its position is the heart)"] += 1
        elif f.position not in vocab or cond not in conds:
            report.skipped_categories["position: outside the organ vocabulary"] += 1
        elif not (cands := truth.position_adversaries(rec, cond, vocab)):
            report.skipped_categories["position: no position free of the finding"] += 1
        else:
            k = len(plans)
            slot = Slot((rec.image_id, "position", k), cands, group=(rec.image_id, cond))
            plans.append(PairPlan(rec, "position", k, f.position, slot, subject=cond))
    return plans


def _abnormality_subset(recs: Sequence[ImageRecord], rng: random.Random, report: GenerationReport) -> set[str]:
    """Images asked the abnormality question: as many normal as abnormal ones per image type that has both.

    Why per type: a type whose images are all abnormal would answer "yes" from the image type alone. The report
    says per image type how many were asked and, where none is, why (no normal study, or abnormality unknown).
    """
    by_type: dict[str, tuple[list[str], list[str]]] = {}
    unknown: Counter = Counter()
    for rec in recs:
        itype = image_type(rec.modality, rec.organ)
        if rec.abnormal is None:
            unknown[itype] += 1
        else:
            by_type.setdefault(itype, ([], []))[int(bool(rec.abnormal))].append(rec.image_id)
    keep: set[str] = set()
    for itype in sorted(set(by_type) | set(unknown)):
        normal, abnormal = (sorted(x) for x in by_type.get(itype, ([], [])))
        n = min(len(normal), len(abnormal))
        report.abnormality_by_type[itype] = {"normal": len(normal), "abnormal": len(abnormal), "unknown": unknown[itype],
                                             "asked": 2 * n, "why_not": _why_not_asked(normal, abnormal)}
        if not n:
            report.skipped_categories["abnormality: image type without normal images"] += len(normal) + len(abnormal)
            continue
        rng.shuffle(normal)
        rng.shuffle(abnormal)
        keep.update(normal[:n] + abnormal[:n])
        report.skipped_categories["abnormality: left out to balance normal and abnormal"] += len(normal) + len(abnormal) - 2 * n
    return keep


def _why_not_asked(normal: list[str], abnormal: list[str]) -> str | None:
    if normal and abnormal:
        return None
    if abnormal:
        return "no image known normal (a normal study stated by a label, QA or caption)"
    if normal:
        return "no image known abnormal"
    return "abnormality unknown on every image (no label, QA or caption says)"


# --- POPE strategies -----------------------------------------------------------------------------------------


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


def _pope_choice(slot: Slot, category: str, strategy: str, rng: random.Random, pop: Popularity, hard: str | None,
                 used: set[str]) -> tuple[Choice | None, str]:
    fresh = [c for c in slot.candidates if c not in used] if used else slot.candidates  # no value twice in one image
    if not fresh:
        return None, strategy
    pool = ([c for c in fresh if c in slot.known_absent] or fresh) if slot.known_absent else fresh
    if strategy == "adversarial" and hard is not None and hard in fresh:
        value, how = hard, "adversarial"
    elif strategy == "popular":
        value, how = max(pool, key=lambda c: (pop.counts.get((category, c), 0), c)), "popular"
    else:
        value, how = pool[rng.randrange(len(pool))], "random"
    return Choice(value, KNOWN_ABSENT if value in slot.known_absent else ASSUMED_ABSENT), how


def _pope(plans: Sequence[PairPlan], singles: Sequence[Slot], strategy: str, seed: int, pop: Popularity) -> dict[Hashable, tuple[Choice | None, str]]:
    """POPE choices, each image drawing from its own RNG (seed, image id) in category order."""
    rngs: dict[str, random.Random] = {}
    used: dict[Hashable, set[str]] = {}
    out: dict[Hashable, tuple[Choice | None, str]] = {}
    items: list[PairPlan | Slot] = [*plans, *singles]
    for p in items:
        slot, category = (p.slot, p.category) if isinstance(p, PairPlan) else (p, "condition")
        hard = _hard(p, pop) if strategy == "adversarial" and isinstance(p, PairPlan) else None  # read by it alone
        iid: str = slot.key[0]  # type: ignore[index]  # every slot key is (image id, category, ...)
        rng = rngs.get(iid) or rngs.setdefault(iid, random.Random(f"{seed}:{iid}"))  # seeded once per image
        taken = used.setdefault(slot.group, set()) if slot.group is not None else set()
        choice, how = out[slot.key] = _pope_choice(slot, category, strategy, rng, pop, hard, taken)
        if choice is not None:
            taken.add(choice.value)
    return out


# --- balanced ----------------------------------------------------------------------------------------------


def _capped_assignment(members: list[PairPlan], extra: list[Slot], rng: random.Random, rounds: int = 4) -> dict[Hashable, Choice | None]:
    """Balanced assignment of the pairs among themselves, then the single slots (``extra``) spread over the values
    in proportion to how often each is ground truth.

    A value the truth rules cannot ask often enough as a hallucination loses ground-truth pairs (a random few)
    until its text balances: a cap, not a guess. Why the pairs alone: when a normal image's single question took
    a value's "no", the pairs were left with more "yes" than "no" for the common findings (atelectasis 71 more
    on ChestX-ray14), and "atelectasis? yes" won their pairs (balance.spread_partners says why the partners
    spread too)."""
    keys = [p.slot.key for p in members] + [s.key for s in extra]
    every = list(members)  # the last round's drops keep their values: every pair with a value is asked
    chosen: dict[Hashable, Choice | None] = {}
    for _ in range(rounds):
        targets = Counter(p.value for p in members)
        chosen = assign_balanced([p.slot for p in members], targets, rng)
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
    chosen = spread_partners([p.slot for p in every], {p.slot.key: p.value for p in every}, chosen, rng)
    if extra:
        chosen.update(assign_balanced(extra, _shares(Counter(p.value for p in every if chosen.get(p.slot.key)), len(extra)), rng))
    return {k: chosen.get(k) for k in keys}


def _shares(weights: Counter, total: int) -> Counter:
    """``total`` split over the keys of ``weights`` in proportion to them (largest remainders, ties by key)."""
    whole = sum(weights.values())
    if not whole:
        return Counter()
    exact = {k: total * w / whole for k, w in weights.items()}
    out = Counter({k: int(x) for k, x in exact.items()})
    for k in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[:total - sum(out.values())]:
        out[k] += 1
    return out


def _conditional_choices(conditional: list[PairPlan], singles: list[Slot], rng: random.Random,
                         stratum_of: Mapping[str, str]) -> dict[Hashable, tuple[Choice | None, str]]:
    """Every condition and position slot's value, each text balanced within each source's image type
    (`stratum_of`: image id -> source and image type), so that a model recognising the image type or the source
    (trivial: a ChestX-ray14 film looks like one) finds no prior there either. Condition texts balance apart on
    images asked 1, 2 or ``DEPTHS`` and more findings: images with several findings take the common ones as
    truths, and balanced over the whole source the images asked one finding paid for it with those as
    adversaries ("rare? yes, common? no" won 47.5% of ChestX-ray14's one-pair images, 37.9 balanced apart)."""
    out: dict[Hashable, tuple[Choice | None, str]] = {}
    # a text is (category, value), or (condition, position) for positions
    singles_of: dict[str, list[Slot]] = {}
    for slot in singles:
        singles_of.setdefault(stratum_of[slot.key[0]], []).append(slot)  # type: ignore[index]  # (image id, ...)
    per_image = Counter(p.rec.image_id for p in conditional if p.category == "condition")
    groups: dict[tuple[str, str, str, int], list[PairPlan]] = {("condition", "", t, 1): [] for t in singles_of}
    for p in conditional:
        depth = min(per_image[p.rec.image_id], DEPTHS) if p.category == "condition" else 0
        groups.setdefault((p.category, p.subject, stratum_of[p.rec.image_id], depth), []).append(p)
    for (category, _, stratum, depth), members in sorted(groups.items()):
        extra = singles_of.pop(stratum, []) if category == "condition" and depth == 1 else []
        out.update({key: (choice, "balanced") for key, choice in _capped_assignment(members, extra, rng).items()})
    return out


def _asked_so_far(choices: Mapping[Hashable, tuple[Choice | None, str]], abnormality: set[str]) -> Counter:
    """Image id -> the questions planned for it so far: two per pair or one per single slot with a value, one
    for the abnormality question (every slot key is (image id, category, ...))."""
    asked: Counter = Counter(abnormality)
    for key, (choice, _) in choices.items():
        if choice is not None:
            asked[key[0]] += 1 if key[-1] is None else 2  # type: ignore[index]  # a single slot's key ends in None
    return asked


def _balanced(plans: list[PairPlan], singles: list[Slot], rng: random.Random, report: GenerationReport,
              stratum_of: Mapping[str, str], abnormality: set[str],
              ) -> tuple[list[PairPlan], dict[Hashable, tuple[Choice | None, str]]]:
    """(the pairs asked, every slot's value): condition and position texts balanced within each image type, then
    modality and organ on their fair designs, drawn preferring the images asked least so far.

    Why this order: a design fixes how many images of each kind (value, allowed adversaries) are asked with which
    adversary, not which ones; the categories no design limits are planned first, so the draw takes, among
    interchangeable images, those with the fewest questions so far (ties in the seeded order): no image is left
    without a question while an interchangeable one with other questions keeps its pair. The design's counts,
    and so every fairness property, are the same whatever the priorities.
    """
    conditional = [p for p in plans if p.category not in ("modality", "organ")]
    out = _conditional_choices(conditional, singles, rng, stratum_of)
    asked = _asked_so_far(out, abnormality)
    kept: list[PairPlan] = []
    for category in ("modality", "organ"):  # one pair per image: the design fixes each image's adversary
        mine = [p for p in plans if p.category == category]
        priority = {p.slot.key: (asked[p.rec.image_id],) for p in mine}
        chosen = balanced_design([(p.slot.key, p.value, p.slot.candidates) for p in mine], rng, priority=priority)
        kept += [p for p in mine if p.slot.key in chosen]
        out.update({p.slot.key: (Choice(chosen[p.slot.key], KNOWN_ABSENT if chosen[p.slot.key] in p.slot.known_absent
                                        else ASSUMED_ABSENT), "balanced") for p in mine if p.slot.key in chosen})
        asked.update({p.rec.image_id: 2 for p in mine if p.slot.key in chosen})
        report.skipped_categories[f"{category}: left out so that no text or fixed answer wins"] += len(mine) - len(chosen)
    return kept + conditional, out


def plan_questions(records: Sequence[ImageRecord], seed: int, strategy: str, report: GenerationReport,
                   popularity: Popularity | None = None, scope: Scope = EXTENDED_SCOPE) -> QuestionPlan:
    """Every image's pairs and every adversarial value (modalities and organs of ``scope``), for records that have an image."""
    rng = random.Random(f"probmed-questions:{seed}")
    plans = _plan_modality_organ(records, report, scope)
    singles: list[Slot] = []
    for rec in records:
        pairs, single = _plan_conditions(rec, report)
        plans += pairs + _plan_positions(rec, report)
        singles += [single] if single else []
    abnormality = _abnormality_subset(records, rng, report)
    if strategy == "balanced":
        stratum_of = {rec.image_id: f"{rec.source} / {image_type(rec.modality, rec.organ)}" for rec in records}
        plans, choices = _balanced(plans, singles, rng, report, stratum_of, abnormality)
    else:
        pop = popularity or (Popularity.of(records) if strategy != "random" else Popularity())  # random reads none
        choices = _pope(plans, singles, strategy, seed, pop)
    plan = QuestionPlan(choices=choices, abnormality=abnormality)
    for p in plans:
        if choices.get(p.slot.key, (None, ""))[0] is not None:
            plan.pairs.setdefault(p.rec.image_id, []).append(p)
    return plan


def plans_of(plan: QuestionPlan, image_id: str, category: str) -> list[PairPlan]:
    """The asked pairs of one category of an image, in pair order."""
    pairs = plan.pairs.get(image_id)
    return [p for p in pairs if p.category == category] if pairs else []


__all__ = [
    "GenerationReport", "PairPlan", "Popularity", "QuestionPlan", "STRATEGIES", "plan_questions", "plans_of",
]
