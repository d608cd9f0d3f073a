"""ImageRecords -> closed yes/no probing questions (paper section 3, Appendix B).

One small generator per category (``GENERATORS``, in the order of
probmed.core.categories.CATEGORIES); each receives the image record and a
:class:`GenerationContext` (strategy, the set-level
:class:`~probmed.benchmark.question_plan.QuestionPlan`, the report) and returns
that category's questions for the image as :class:`Draft` rows. Generators draw
nothing: every seeded choice is the plan's, so they need no RNG. Per image, in
this order (rows of one image contiguous, gt before adversary): a modality pair,
an organ pair, the abnormality question, for a normal image a single
hallucinated-condition question, a condition pair per present condition of the
organ vocabulary, a position pair per positioned finding. A new category is its
spec in probmed.core.categories, its planner in benchmark.question_plan and a
generator here.

Which pairs are asked and which hallucinated value each names is decided over
the whole set first (benchmark.question_plan: truth rules, balanced texts,
POPE strategies); the generators write the questions. Wording follows the
count / mass noun table ("a mass", "an effusion", "pneumonia"; "Are the
effusions located in both lower lung zones?"), so the grammar lint
(benchmark.lint) finds nothing in a generated set.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterator, NamedTuple, Sequence

import pandas as pd

from probmed.benchmark.balance import KNOWN_ABSENT, Choice
from probmed.benchmark.contrast import CONTRAST_COLUMN, assign_contrast_pairs
from probmed.benchmark.curation.tables import (
    Site,
    absent_evidence,
    condition_nouns,
    condition_sites,
    condition_terms,
    organ_unseen,
    pleural_levels,
    region_prepositions,
)
from probmed.benchmark.lint import indefinite
from probmed.benchmark.question_plan import (
    STRATEGIES,
    GenerationReport,
    PairPlan,
    Popularity,
    QuestionPlan,
    plan_questions,
    plans_of,
)
from probmed.core.categories import CATEGORIES, CategorySpec, category
from probmed.core.errors import RecordError
from probmed.core.params_schema import Questions
from probmed.core.records import QUESTION_COLUMNS, ImageRecord, validate_question_frame
from probmed.core.release_format import question_id
from probmed.core.vocab import EXTENDED_SCOPE, MODALITY_QUESTION_NAMES, ORGAN_QUESTION_NAMES, Scope, image_type
from probmed.infra.progress import progress as progress_bar

__all__ = ["STRATEGIES", "GENERATORS", "GenerationReport", "Popularity", "generate_questions"]

ABNORMALITY_QUESTION = "Is there any abnormality in this image?"


# --- question texts ----------------------------------------------------------------------------------------


# Each text is a pure function of vocabulary values (and the cached noun table), asked once per question: cached.


@lru_cache(maxsize=None)
def modality_question(mod: str) -> str:
    return f"Is this {indefinite(MODALITY_QUESTION_NAMES[mod])} image?"


@lru_cache(maxsize=None)
def organ_question(organ: str) -> str:
    return f"Does this image show the {ORGAN_QUESTION_NAMES[organ]}?"


def condition_term(condition: str) -> str:
    """The words a question uses for a condition: "infiltrate" for "infiltration" (condition_terms.csv)."""
    term = condition_terms().get(condition)
    return term.term if term is not None else condition


def condition_phrase(condition: str) -> str:
    """"a mass", "an effusion", "pneumonia": the condition's term with the article its noun takes."""
    words = condition_term(condition)
    noun = condition_nouns().get(words.lower()) or condition_nouns().get(condition)
    return indefinite(words) if noun is not None and noun.kind == "count" else words


@lru_cache(maxsize=None)
def condition_question(condition: str) -> str:
    return f"Is there evidence of {condition_phrase(condition)} in this image?"


_SIDES = ("right", "left", "both", "bilateral")
_LUNG_WORDS = frozenset({"lung", "lungs", "zone", "zones", "hemithorax", "hemithoraces", "pleural", "space", "spaces"})


@lru_cache(maxsize=None)
def position_question(condition: str, position: str, organ: str = "") -> str:
    """"Is the mass located in the right upper lung zone?"; both sides: "Are the effusions located in both ...?";
    pleural and extra-axial conditions by their own anatomy (condition_sites.csv), prepositions per region."""
    site = condition_sites().get((organ, condition))
    if site is not None and site.site == "pleural":
        return pleural_question(site, position)
    words = position.split()
    if site is not None and site.site == "extra-axial" and words[-1] in ("hemisphere", "hemispheres"):
        words = words[:-1]  # "left hemisphere" -> "on the left side": the tumour lies over the brain, not in it
    both = words[0] in ("both", "bilateral") and len(words) > 1
    term = condition_term(condition)
    if len(words) == 1 and words[0] in ("left", "right", "both", "bilateral"):
        where = "on both sides" if words[0] in ("both", "bilateral") else f"on the {words[0]} side"
    else:
        region = " ".join(words[1:]) if words[0] in _SIDES else position
        prep = region_prepositions().get(region, "in")
        where = f"{prep} both " + " ".join(words[1:]) if both else f"{prep} the {' '.join(words)}"
    noun = condition_nouns().get(term.lower()) or condition_nouns().get(condition)
    if (both or words == ["both"]) and noun is not None and noun.kind != "mass" and noun.plural:
        return f"Are the {noun.plural} located {where}?"
    return f"Is the {term} located {where}?"


def pleural_question(site: Site, position: str) -> str:
    """"Is there a right pleural effusion?", "Is there a left apical pneumothorax?", "Are there bilateral basal
    pleural effusions?": a pleural process by side and pleural level, never in a lung zone or a lung."""
    words = position.split()
    side = words[0] if words and words[0] in _SIDES else ""
    rest = [w for w in words[1:] if w not in _LUNG_WORDS] if side else [w for w in words if w not in _LUNG_WORDS]
    both = side in ("both", "bilateral")
    levels = pleural_levels()
    if len(rest) == 1 and rest[0] in levels:
        place, tail = levels[rest[0]] + " ", ""
    elif not rest:
        place, tail = "", ""
    else:  # "at the right costophrenic angle": the side goes with the place
        place, tail = "", " at " + " ".join(["the", *([] if both or not side else [side]), *rest])
    side_word = "bilateral " if both else f"{side} " if side and not tail else ""
    if both and site.plural:
        return f"Are there {side_word}{place}{site.plural}{tail}?"
    phrase = f"{side_word}{place}{site.noun}"
    return f"Is there {indefinite(phrase) if site.plural else phrase}{tail}?"


# --- drafts ------------------------------------------------------------------------------------------------


class Draft(NamedTuple):
    """One question of an image, before the image's own fields (id, path, source, type) are added.

    A named tuple, not a dataclass: a million are built per 100,000 images, and a tuple builds fastest."""

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
    key, gt_qa_type, hallu_qa_type = _pair_names(spec, k)
    return [
        Draft(spec.name, "gt", key, gt[0], "yes", gt[1], gt_qa_type),
        Draft(spec.name, "adversarial", key, adversary[0], "no", adversary[1], hallu_qa_type, strategy, evidence),
    ]


@lru_cache(maxsize=None)
def _pair_names(spec: CategorySpec, k: int | None) -> tuple[str, str, str]:
    """(pair key, gt qa_type, hallucinated qa_type) of a category's k-th pair, cached: asked for every pair."""
    return spec.pair_key(k), spec.gt_qa_type(k), spec.hallu_qa_type(k)


def single(spec: CategorySpec, question: str, answer: str, entity: str, strategy: str = "gt", evidence: str = "") -> Draft:
    """The category's single (unpaired) question."""
    assert spec.single_qa_type is not None, f"category {spec.name} has no single question"
    return Draft(spec.name, "single", spec.single_qa_type, question, answer, entity, spec.single_qa_type, strategy, evidence)


@dataclass
class GenerationContext:
    """What every category generator may read besides the image record."""

    strategy: str
    plan: QuestionPlan
    report: GenerationReport = field(default_factory=GenerationReport)


Generator = Callable[[ImageRecord, GenerationContext], list[Draft]]


def _planned_pairs(rec: ImageRecord, ctx: GenerationContext, name: str, text: Callable[[PairPlan, str], str]) -> list[Draft]:
    out: list[Draft] = []
    for p in plans_of(ctx.plan, rec.image_id, name):
        choice, how = ctx.plan.choices[p.slot.key]
        assert isinstance(choice, Choice)
        evidence = label_evidence(rec, choice.evidence) if name == "condition" else choice.evidence
        out += pair(category(name), p.k, (text(p, p.value), p.value), (text(p, choice.value), choice.value), how, evidence)
    return out


def label_evidence(rec: ImageRecord, evidence: str) -> str:
    """A "no" resting on the source's absent labels, with how sure they are: ChestX-ray14's are mined from
    reports by NLP (``nlp_absent``, absent_evidence.csv), not seen by a reader."""
    return absent_evidence().get(rec.source, evidence) if evidence == KNOWN_ABSENT else evidence


def modality_questions(rec: ImageRecord, ctx: GenerationContext) -> list[Draft]:
    """One pair when the plan asks it: the image's modality and another askable one."""
    return _planned_pairs(rec, ctx, "modality", lambda p, v: modality_question(v))


def organ_questions(rec: ImageRecord, ctx: GenerationContext) -> list[Draft]:
    """One pair when the plan asks it: the image's organ and one out of its field of view; none of an image that
    does not show its organ (organ_unseen.csv: a skull radiograph does not show the brain)."""
    if (rec.modality, rec.organ) in organ_unseen():
        if plans_of(ctx.plan, rec.image_id, "organ"):
            ctx.report.skipped_categories[f"organ: {rec.modality} images do not show the {rec.organ}"] += 1
        return []
    return _planned_pairs(rec, ctx, "organ", lambda p, v: organ_question(v))


def abnormality_questions(rec: ImageRecord, ctx: GenerationContext) -> list[Draft]:
    """One single question on the images the plan balances between normal and abnormal."""
    if rec.image_id not in ctx.plan.abnormality:
        return []
    answer = "yes" if rec.abnormal else "no"  # a "no" rests on a label ("No Finding", a whole-image QA answer)
    return [single(category("abnormality"), ABNORMALITY_QUESTION, answer, "abnormality", "gt",
                   "" if rec.abnormal else label_evidence(rec, KNOWN_ABSENT))]


def condition_questions(rec: ImageRecord, ctx: GenerationContext) -> list[Draft]:
    """A normal image's single hallucinated condition; a pair per present condition of the organ vocabulary."""
    out: list[Draft] = []
    choice, how = ctx.plan.single(rec.image_id) or (None, "")
    if choice is not None:
        out.append(single(category("condition"), condition_question(choice.value), "no", choice.value, how,
                          label_evidence(rec, choice.evidence)))
    return out + _planned_pairs(rec, ctx, "condition", lambda p, v: condition_question(v))


def position_questions(rec: ImageRecord, ctx: GenerationContext) -> list[Draft]:
    """A pair per positioned finding: its position and one that overlaps no place of the finding."""
    return _planned_pairs(rec, ctx, "position", lambda p, v: position_question(p.subject, v, rec.organ))


# One generator per category of probmed.core.categories, called in this (the categories') order.
GENERATORS: dict[str, Generator] = {
    "modality": modality_questions,
    "organ": organ_questions,
    "abnormality": abnormality_questions,
    "condition": condition_questions,
    "position": position_questions,
}
assert tuple(GENERATORS) == CATEGORIES, "one generator per category, in the categories' order"


def image_questions(rec: ImageRecord, ctx: GenerationContext) -> list[Draft]:
    """Every category's questions for one image, in category order."""
    return [draft for generate in GENERATORS.values() for draft in generate(rec, ctx)]


def _with_images(records: Sequence[ImageRecord], report: GenerationReport) -> list[ImageRecord]:
    """Records that can be asked about: an image, and the first record of an id."""
    out: list[ImageRecord] = []
    seen: set[str] = set()
    for rec in records:
        reason = "no image (caption-only record)" if not rec.image_path else "duplicate image_id" if rec.image_id in seen else None
        if reason:
            report.excluded.setdefault(reason, []).append(rec.image_id)
            continue
        seen.add(rec.image_id)
        out.append(rec)
    return out


# The row of one question, in QUESTION_COLUMNS order (a plain tuple: a million rows are built per 100k images);
# contrast_id, the last column, is set over the whole table once the rows exist (benchmark.contrast).
_ROW_ORDER = ("qid", "image_id", "image_path", "source", "category", "polarity", "pair_id", "question", "answer",
              "entity", "image_type", "qa_type", "strategy", "evidence", "licence")
assert (*_ROW_ORDER, CONTRAST_COLUMN) == QUESTION_COLUMNS, "the question row follows QUESTION_COLUMNS"


def _image_rows(rec: ImageRecord, drafts: list[Draft]) -> list[tuple[str | None, ...]]:
    """The table rows of one image's drafts, with the image's own fields added."""
    iid, path, source, licence = rec.image_id, rec.image_path, rec.source, rec.licence or ""
    itype = image_type(rec.modality, rec.organ)
    return [(question_id(iid, d.qa_type, d.question), iid, path, source, d.category, d.polarity, f"{iid}:{d.pair_key}",
             d.question, d.answer, d.entity, itype, d.qa_type, d.strategy, d.evidence, licence) for d in drafts]


def generate_questions(
    records: Sequence[ImageRecord],
    seed: int = 0,
    strategy: str = Questions().strategy,
    popularity: Popularity | None = None,
    progress: bool = False,
    scope: Scope = EXTENDED_SCOPE,
) -> tuple[pd.DataFrame, GenerationReport]:
    """Questions for every record with an image (modality and organ pairs in ``scope``); returns (table, report)."""
    if strategy not in STRATEGIES:
        raise RecordError(f"question strategy {strategy!r} not in {STRATEGIES}")
    report = GenerationReport(strategy=strategy)
    with collector_paused():
        recs = _with_images(records, report)
        ctx = GenerationContext(strategy, plan_questions(recs, seed, strategy, report, popularity, scope), report)
        rows: list[tuple[str | None, ...]] = []
        for rec in progress_bar(recs, desc="questions", unit="record", disable=not progress, leave=False):
            drafts = image_questions(rec, ctx)
            if not drafts:
                report.excluded.setdefault("nothing askable", []).append(rec.image_id)
                continue
            report.images += 1
            rows += _image_rows(rec, drafts)
        columns = [list(values) for values in zip(*rows)] or [[] for _ in _ROW_ORDER]
        frame = pd.DataFrame(dict(zip(_ROW_ORDER, columns)), columns=list(_ROW_ORDER))
        frame = assign_contrast_pairs(frame, seed)  # the last step: a table's contrast pairs are drawn among its own rows
        report.questions = len(frame)
        validate_question_frame(frame, "generated questions")
    return frame, report


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a question set is built, then restore it as it was.

    Why: generation allocates millions of small acyclic objects (slots, drafts, rows) that stay alive until the
    table exists, and every full collection rescans all of them: ~40 % of the CPU time for 100,000 records
    (benchmarks/generate_speed.py). Reference counting still frees what dies; only cycle detection waits."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
