"""The VQA-RAD adversarial ablation set (paper Table 2, left), made by rules.

Every closed-ended test-split question answered "yes" gets an adversarial twin
asking the same thing about a hallucinated entity; the twin's answer is "no".
The paper's twins were written by experts; here documented rules are tried in
order and the first that applies makes the twin (``how`` records the rule):

1. ``side``: swap left <-> right (every side word of the question).
2. ``plane``: axial -> coronal, coronal -> sagittal, sagittal -> axial,
   posterior anterior (PA) -> anterior posterior, supine <-> prone.
3. ``abnormality``: a whole-image normality question is negated
   ("Is this image abnormal?" -> "Is this image normal?").
4. ``condition``: a condition named in the question is replaced by another
   condition of the image's organ vocabulary whose "no" is true by the truth
   rules (probmed.benchmark.truth: not named by any QA of the image, not in the
   overlap group of a present finding, none while a nonspecific finding is
   present), preferring one known absent (a VQA-RAD question about it answered
   "no"); article and number follow the new noun ("a cyst", "pneumonia", "cysts").
5. ``attribute``: normal <-> abnormal, healthy -> diseased, and size/shape
   antonyms (enlarged -> smaller than normal, widened -> narrowed, midline ->
   deviated, preserved -> blunted, adequate -> inadequate, ...).
6. ``modality``: CT <-> MRI, X-ray -> CT.
7. ``organ``: a presence/visibility question about an anatomical structure is
   asked about a structure of another body region (a head image is asked
   about the gallbladder, an abdominal image about the lateral ventricles).

A twin is rejected when its text equals a question of the same image answered
"yes", its hallucinated condition is known present, or (a side twin) a QA of the
image places the condition on the flipped side. Both questions of a pair are
tidied alike (capital letter, one question mark), so punctuation cannot tell
the twin from its source. Questions no rule covers
(general-knowledge questions, counts, contrast administration) go to the LLM
path when an endpoint is configured, otherwise they are excluded with the
reason. Every twin records its evidence: ``known_absent`` (one modality and one plane per
image, an organ out of the field of view, the antonym of an attribute or the
negation of a normality answered yes, a condition a QA answers "no") or
``assumed_absent`` (a flipped side, a condition merely not mentioned, an LLM twin).
Output: the question-file format with records in pair order (gt
first), qa_type ``vqarad_gt_<k>`` / ``vqarad_hallu_<k>``, ``id`` the image name
without extension, ``image`` the image file name.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from probmed.benchmark import truth
from probmed.benchmark.contrast import CONTRAST_COLUMN, assign_contrast_pairs
from probmed.benchmark.curation.tables import condition_nouns
from probmed.benchmark.curation.vocabularies import CONDITION_SYNONYMS, conditions_for
from probmed.benchmark.lint import determined, indefinite
from probmed.benchmark.sources.base import relative_path
from probmed.benchmark.sources.vqarad import (
    IMAGE_DIR,
    SOURCE,
    load_vqarad,
    read_qa,
)
from probmed.core.records import QUESTION_COLUMNS, ImageRecord, validate_question_frame
from probmed.core.release_format import question_id
from probmed.core.vocab import image_type

# Category of a pair in the question table (the rule itself is in ``strategy``):
# plane/patient position is acquisition (modality); a whole-image abnormality
# twin is a *pair*, so it is filed under condition, keeping the abnormality
# category for single questions as the scorer expects.
KIND_CATEGORY = {
    "side": "position",
    "plane": "modality",
    "abnormality": "condition",
    "condition": "condition",
    "attribute": "condition",
    "modality": "modality",
    "organ": "organ",
    "llm": "condition",
}
GENERAL_KNOWLEDGE = re.compile(r"^(can|could|should|would|what|why|how)\b.*\b(cause|get|indicate|highlighted|used to)\b", re.I)
PLANES = [(r"\baxial\b", "coronal"), (r"\bcoronal\b", "sagittal"), (r"\bsagittal\b", "axial"),
          (r"\bposterior anterior\b", "anterior posterior"), (r"\bsupine\b", "prone"), (r"\bprone\b", "supine")]
WHOLE_IMAGE = [
    (r"^is there any abnormality in this image\?$", "Is this image normal?"),
    (r"^is this image abnormal\?$", "Is this image normal?"),
    (r"^is anything not normal in the image\?$", "Is everything normal in the image?"),
    (r"^are there abnormal findings\?$", "Are all findings normal?"),
]
ATTRIBUTES = [
    (r"\bnon-enlarged\b", "enlarged"),
    (r"\bwider than normal\b", "narrower than normal"),
    (r"\bwithin normal size limits\b", "outside normal size limits"),
    (r"\bnot normal\b", "normal"),
    (r"\babnormal\b", "normal"),
    (r"\bnormal\b", "abnormal"),
    (r"\bhealthy\b", "diseased"),
    (r"\benlarged\b", "smaller than normal"),
    (r"\bwidened\b", "narrowed"),
    (r"\bnarrowing\b", "widening"),
    (r"\bincreased\b", "decreased"),
    (r"\bhyperinflated\b", "hypoinflated"),
    (r"\bless than half\b", "more than half"),
    (r"\bmidline\b", "deviated"),
    (r"\bpreserved\b", "blunted"),
    (r"\badequate\b", "inadequate"),
    (r"\bappropriately\b", "inappropriately"),
    (r"\bwell circumscribed\b", "poorly circumscribed"),
    (r"\bring-enhancing\b", "non-enhancing"),
    (r"\bwedge-shaped\b", "round"),
    (r"\bclearly visualized\b", "obscured"),
    (r"\bclearly defined\b", "obscured"),
    (r"\bsmall/stretched\b", "enlarged"),
    (r"\bflat\b", "elevated"),
    (r"\bdilation\b", "narrowing"),
]
MODALITIES = [(r"\bCT\b", "MRI"), (r"\bMRI\b", "CT"), (r"\bx-?ray\b", "CT"), (r"\bCXR\b", "CT scan")]
ANATOMY: dict[str, tuple[str, ...]] = {
    "brain": ("lateral ventricles", "ventricles", "optic nerve", "cerebellum", "brain"),
    "chest": ("costophrenic angles", "cardiac borders", "borders of the heart", "diaphragm", "trachea", "lung markings", "lungs", "heart", "ribs", "chest", "mediastinum"),
    "abdomen": ("gastrointestinal system", "GI tract", "gallbladder", "kidneys", "kidney", "liver", "small bowel", "bowels", "bowel", "appendix", "spleen", "pancreas"),
}
# Structures of another body region, (singular, plural) so a twin keeps the number of the word it replaces.
ANATOMY_TARGET = {
    "brain": (("gallbladder", "appendix"), ("kidneys",)),
    "chest": (("optic nerve", "cerebellum"), ("lateral ventricles",)),
    "abdomen": (("optic nerve", "cerebellum"), ("lateral ventricles",)),
}
PRESENCE = re.compile(r"\b(present|visible|seen|visualized|identified|showing|show|of the|in the patient's|contain|markings)\b", re.I)
# Phrases that match a condition synonym but are not a replaceable noun phrase.
NOT_CONDITION = {"heart enlarged", "enlarged heart", "collapse", "enhancement", "thickening", "dilation", "dilatation", "calcified"}
_TWIN_SYN = {k: v for k, v in CONDITION_SYNONYMS.items() if k not in NOT_CONDITION}
_COND_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(_TWIN_SYN, key=len, reverse=True)) + r")\b", re.I)


@dataclass
class Twin:
    """The adversarial twin of a yes-question: its text, how it was made, the entity and its evidence."""

    question: str
    kind: str
    entity: str
    evidence: str


def _sub_all(pattern: str, repl: str, text: str) -> str | None:
    out, n = re.subn(pattern, repl, text, flags=re.I)
    return out if n else None


def _fix_articles(text: str) -> str:
    """a/an agreement after a substitution ("an MRI", "a coronal")."""
    text = re.sub(r"\b([Aa])n ([^aeiouAEIOU\W])", r"\1 \2", text)
    return re.sub(r"\b([Aa]) ([aeiouAEIOU]|MRI\b|X-ray\b)", r"\1n \2", text)


def rule_side(q: str, rec: ImageRecord, **_: Any) -> Twin | None:
    """Twin by swapping left and right, unless the image's QA puts the finding on the other side too."""
    if not re.search(r"\b(left|right)\b", q, re.I):
        return None
    out = re.sub(r"\b(left|right)\b", lambda m: {"left": "right", "right": "left"}[m.group(1).lower()], q, flags=re.I)
    side = "right" if re.search(r"\bleft\b", q, re.I) else "left"
    from probmed.benchmark.curation.extract_rules import find_conditions

    for f in find_conditions(q)[0]:  # the condition must not be on the flipped side by any QA of the image
        places, _cells = truth.occupied_positions(rec, f["condition"])
        if any(p.split()[0] in (side, "bilateral", "both") for p in places if p):
            return None
    return Twin(out, "side", side, "assumed_absent")


def rule_plane(q: str, **_: Any) -> Twin | None:
    """Twin by naming another imaging plane."""
    for pat, repl in PLANES:
        out = _sub_all(pat, repl, q)
        if out:
            return Twin(out, "plane", repl, "known_absent")
    return None


def rule_abnormality(q: str, **_: Any) -> Twin | None:
    """Twin of a whole-image abnormality question: its fixed counterpart, known absent."""
    for pat, repl in WHOLE_IMAGE:
        if re.match(pat, q, re.I):
            return Twin(repl, "abnormality", "normal", "known_absent")
    return None


def _noun_form(new: str, matched: str, before: str) -> tuple[str, str]:
    """(replacement text, the text before it) with article and number fitted to the new noun."""
    noun = condition_nouns().get(new)
    plural = matched.lower() != CONDITION_SYNONYMS.get(matched.lower(), matched.lower()) and matched.lower().endswith("s")
    article = re.search(r"\b(an?)\s+$", before, re.I)
    if noun is None or noun.kind == "mass":
        return new, before[: article.start()] if article else before
    if plural and noun.plural:
        return noun.plural, before
    if article:
        return indefinite(new), before[: article.start()]
    if noun.kind == "count" and not determined(before):  # "Is there cardiomegaly?" -> "Is there a cyst?", not "... cyst?"
        return indefinite(new), before
    return new, before


def rule_condition(q: str, rec: ImageRecord, rng: random.Random, **_: Any) -> Twin | None:
    """Twin by naming another condition of the organ and modality, one the record knows absent when it can."""
    m = _COND_RE.search(q)
    if not m:
        return None
    asked = _TWIN_SYN[m.group(1).lower()]
    allowed = truth.condition_adversaries(rec, conditions_for(rec.organ, rec.modality))
    cands = [c for c in allowed if c not in truth.overlapping([asked]) and c not in q.lower()]
    absent = [c for c in cands if c in truth.known_absent_conditions(rec)]
    pool = absent or cands
    if not pool:
        return None
    new = pool[rng.randrange(len(pool))]
    phrase, before = _noun_form(new, m.group(1), q[: m.start()])
    out = _fix_articles(before + phrase + q[m.end() :])
    ev = "known_absent" if absent else "assumed_absent"
    return Twin(out, "condition", new, ev)


def rule_attribute(q: str, **_: Any) -> Twin | None:
    """Twin by swapping a size or shape attribute for its opposite."""
    for pat, repl in ATTRIBUTES:
        out = _sub_all(pat, repl, q)
        if out:
            return Twin(_fix_articles(out), "attribute", repl, "known_absent")
    return None


def rule_modality(q: str, rec: ImageRecord, **_: Any) -> Twin | None:
    """Twin by naming another modality than the image's."""
    for pat, repl in MODALITIES:
        out = _sub_all(pat, repl, q)
        if out:
            return Twin(_fix_articles(out), "modality", repl, "known_absent")
    return None


def rule_organ(q: str, rec: ImageRecord, rng: random.Random, **_: Any) -> Twin | None:
    """Twin of a presence question by naming another organ in place of the image's own."""
    if not PRESENCE.search(q):
        return None
    for term in ANATOMY.get(rec.organ, ()):
        m = re.search(rf"\b{re.escape(term)}\b", q, re.I)
        if m:
            singular, plural = ANATOMY_TARGET[rec.organ]
            targets = plural if term.endswith("s") and term not in ("GI tract",) else singular
            new = targets[rng.randrange(len(targets))]
            return Twin(q[: m.start()] + new + q[m.end() :], "organ", new, "known_absent")
    return None


RULES: tuple[Callable[..., Twin | None], ...] = (rule_side, rule_plane, rule_abnormality, rule_condition, rule_attribute, rule_modality, rule_organ)


def exclusion_reason(q: str, question_type: str) -> str:
    """Why a yes-question gets no twin (general knowledge, counts, contrast, ...)."""
    if GENERAL_KNOWLEDGE.search(q):
        return "general-knowledge question, not about an entity in the image"
    if "COUNT" in question_type:
        return "count question: no hallucinated entity to ask about"
    if "contrast" in q.lower():
        return "contrast administration: no alternative known to be absent"
    return "no rule applies (no side, plane, condition, attribute, modality or anatomy term)"


def tidy(q: str) -> str:
    """One form for every question of the set: single spaces, a capital letter, exactly one question mark."""
    q = " ".join(str(q).split()).rstrip(" .?!")
    return (q[:1].upper() + q[1:] + "?") if q else q


def _norm(q: str) -> str:
    return re.sub(r"[^a-z0-9 ]", "", q.lower()).strip()


def _closed_yes_questions(qas: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """(the test split's closed questions answered yes, contiguous per image; every image's yes-questions)."""
    yes_by_image: dict[str, set[str]] = {}
    for qa in qas:
        if qa["answer"].lower() == "yes":
            yes_by_image.setdefault(qa["image_name"], set()).add(_norm(qa["question"]))
    selected = [qa for qa in qas if qa["test"] and qa["answer_type"] == "CLOSED" and qa["answer"].lower() == "yes"]
    order: dict[str, int] = {}
    for qa in selected:
        order.setdefault(qa["image_name"], len(order))
    selected.sort(key=lambda qa: order[qa["image_name"]])  # stable: contiguous per image, file order within
    return selected, yes_by_image


def _twin(q: str, qa: dict[str, Any], rec: ImageRecord, rng: random.Random, answered_yes: set[str],
          llm: Callable[[dict[str, Any]], Twin | None] | None) -> tuple[Twin | None, str, str]:
    """(twin, how it was made, why there is none) for the tidied question ``q``: the first rule whose
    twin is not itself a question answered yes (or already asked of the image: ``answered_yes`` holds
    both), else the LLM when configured."""
    rejected = []
    pre_excluded = GENERAL_KNOWLEDGE.search(q) or "COUNT" in qa["question_type"]
    for rule in () if pre_excluded else RULES:
        cand = rule(q, rec=rec, rng=rng)
        if cand is None:
            continue
        cand.question = tidy(_fix_articles(cand.question))
        if _norm(cand.question) in answered_yes or _norm(cand.question) == _norm(q):
            rejected.append(rule.__name__)
            continue
        return cand, f"rules:{cand.kind}", ""
    if not pre_excluded and llm is not None:
        twin = llm({"question": q, "organ": rec.organ, "modality": rec.modality, "known_present": [f.condition for f in rec.findings]})
        if twin is not None:
            twin.question = tidy(twin.question)
            if _norm(twin.question) not in answered_yes:
                return twin, "llm", ""
            rejected.append("llm")
    reason = exclusion_reason(q, qa["question_type"])
    if rejected:
        reason += f"; twins of {rejected} equal a question answered yes or already in the set"
    return None, "", reason


def _pair_rows(q: str, qa: dict[str, Any], twin: Twin, how: str, rec: ImageRecord, k: int, path: str) -> list[dict[str, Any]]:
    """The ground-truth question ``q`` and its twin as pair k, in the question-table layout."""
    stem = Path(qa["image_name"]).stem
    itype = image_type(rec.modality, rec.organ)
    category = KIND_CATEGORY[twin.kind]
    rows = []
    for polarity, text, answer, entity, qa_type, strategy, evidence in (
        ("gt", q, "yes", "", f"vqarad_gt_{k}", "gt", f"VQA-RAD qid {qa['qid']} ({qa['question_type']})"),
        ("adversarial", twin.question, "no", twin.entity, f"vqarad_hallu_{k}", how, twin.evidence),
    ):
        rows.append(
            {"qid": question_id(stem, qa_type, text), "image_id": stem, "image_path": path, "source": SOURCE,
             "category": category, "polarity": polarity, "pair_id": f"{stem}:vqarad_{k}", "question": text,
             "answer": answer, "entity": entity, "image_type": itype, "qa_type": qa_type, "strategy": strategy,
             "evidence": evidence, "licence": rec.licence or ""}
        )
    return rows


def build_vqarad_adversarial(
    data_dir: Path,
    image_root: Path,
    seed: int = 0,
    llm: Callable[[dict[str, Any]], Twin | None] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """(question table in pair order, report) for the test split's closed "yes" questions."""
    data_dir = Path(data_dir)
    records = {r.provenance["origin"]: r for r in load_vqarad(data_dir, image_root).records}
    selected, yes_by_image = _closed_yes_questions(read_qa(data_dir))
    rows: list[dict[str, Any]] = []
    made: Counter = Counter()
    excluded: list[dict[str, str]] = []
    asked_by_image: dict[str, set[str]] = {}  # normalised texts already in the set, per image: none twice
    for qa in selected:
        name, q = qa["image_name"], tidy(qa["question"])
        rec = records.get(name)
        if rec is None:
            excluded.append({"qid": str(qa["qid"]), "image": name, "question": q, "reason": "image not usable (see source report)"})
            continue
        asked = asked_by_image.setdefault(name, set())
        if _norm(q) in asked:  # the same question asked twice in VQA-RAD (another qid): one pair is enough
            excluded.append({"qid": str(qa["qid"]), "image": name, "question": q, "reason": "question already in the set for this image"})
            continue
        # a twin equal to a question already in the set for this image is rejected like one answered yes
        twin, how, reason = _twin(q, qa, rec, random.Random(f"{seed}:{qa['qid']}"), yes_by_image.get(name, set()) | asked, llm)
        if twin is None:
            excluded.append({"qid": str(qa["qid"]), "image": name, "question": q, "reason": reason})
            continue
        made[how] += 1
        asked |= {_norm(q), _norm(twin.question)}
        path = relative_path(data_dir / IMAGE_DIR / name, image_root)
        rows += _pair_rows(q, qa, twin, how, rec, len(rows) // 2, path)  # pair k = pairs so far
    table = pd.DataFrame(rows, columns=[c for c in QUESTION_COLUMNS if c != CONTRAST_COLUMN])
    frame = validate_question_frame(assign_contrast_pairs(table, seed), "VQA-RAD adversarial set")  # the last step
    report = {
        "selected": len(selected),
        "twins_by_rules": sum(v for h, v in made.items() if h.startswith("rules:")),
        "twins_by_rule_kind": {h.split(":", 1)[1]: v for h, v in sorted(made.items()) if h.startswith("rules:")},
        "twins_by_llm": made.get("llm", 0),
        "excluded": len(excluded),
        "llm_configured": llm is not None,
        "exclusions": excluded,
    }
    return frame, report


def official_records(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with ``image`` = the image file name (the set's image root is the VQA-RAD image folder)."""
    out = frame.copy()
    out["image_path"] = out["image_path"].map(lambda p: Path(p).name)
    return out


def report_markdown(report: dict[str, Any]) -> str:
    """The adversarial set's report as Markdown: counts, twins by rule and exclusions."""
    lines = [
        "# VQA-RAD adversarial set",
        "",
        f"- closed test-split questions answered yes: {report['selected']}",
        f"- twins by rules: {report['twins_by_rules']} ({', '.join(f'{k} {v}' for k, v in report['twins_by_rule_kind'].items())})",
        f"- twins by LLM: {report['twins_by_llm']} (endpoint configured: {report['llm_configured']})",
        f"- excluded: {report['excluded']}",
        "",
        "| qid | image | question | reason |",
        "|---|---|---|---|",
    ]
    lines += [f"| {e['qid']} | {e['image']} | {e['question']} | {e['reason']} |" for e in report["exclusions"]]
    return "\n".join(lines) + "\n"
