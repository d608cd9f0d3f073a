"""VQA-RAD -> ImageRecords, from the official QA JSON and its image folder.

* organ: ``image_organ`` (HEAD -> brain, CHEST -> chest, ABD -> abdomen).
* modality: MODALITY question-answers first (an open answer naming CT/MRI/
  X-ray, or a closed "Is this a CT?" answered yes); otherwise the dataset's
  documented acquisition (CHEST: radiographs, ABD: axial CT). HEAD images are
  MRI or CT, so without a MODALITY answer they stay ``unknown``, never guessed.
* findings and positions: conditions named by closed PRES / ABN / POS
  questions answered "yes", and by open ones, in the question ("Where is the
  mass?" presupposes a mass) or the answer ("What is the abnormality?" ->
  "right paratracheal mass lesion"), with side and region. A "foreign body" the
  pair names as a medical device ("What is the foreign body?" -> "a catheter";
  curation/tables/devices.csv) is placed care, not a finding.
* known absent: a condition asked about with no side or place and answered
  "no" ("Is a pleural effusion present?" -> no). "Is there a pneumothorax on the
  left?" or "... in the liver?" -> no says nothing about the rest of the image,
  so it is not absence evidence.
* normal / abnormal: only **whole-image** questions decide (WHOLE_IMAGE: "Is this
  image normal?", "Are there abnormal findings?", "Is anything wrong in the
  image?", "Is this image normal or abnormal?"), not "Is the liver normal?".
  Polarity comes from the answer: "normal?" + yes is normal, "abnormal?" + yes
  is abnormal, a choice question is read from the word answered. The image
  is abnormal when a whole-image answer says so or a finding or an abnormal sign
  (a lesion, a hyperintensity: ABNORMAL_SIGNS; not one an open answer names as
  normal anatomy, normal_anatomy.csv: "Stomach bubble") is described, normal
  only when a whole-image answer says so and nothing contradicts it; when its QA
  disagree (two whole-image answers, or "normal" beside a present finding) the
  image is left unknown and asks no abnormality question.
* every QA pair is kept in ``provenance.qa`` (question, answer, type), so
  hallucinated organs, conditions and positions are checked against all of them.
* split: ``test`` when the image has any test-split QA (phrase_type
  test_freeform / test_para), else ``train``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from probmed.benchmark.curation.extract_rules import find_conditions, find_modality
from probmed.benchmark.curation.tables import devices, normal_anatomy
from probmed.benchmark.sources.base import (
    SourceContext,
    SourceResult,
    relative_path,
    require_file,
)
from probmed.core.errors import SourceError
from probmed.core.licences import VQARAD as LICENCE
from probmed.core.records import Finding, ImageRecord

SOURCE = "VQA-RAD"
QA_FILE = "VQA_RAD Dataset Public.json"
IMAGE_DIR = "VQA_RAD Image Folder"
ORGANS = {"HEAD": "brain", "CHEST": "chest", "ABD": "abdomen"}
DOCUMENTED_MODALITY = {"CHEST": "x-ray", "ABD": "ct"}
TEST_PHRASES = {"test_freeform", "test_para"}
REQUIRED = ("qid", "image_name", "image_organ", "question", "answer", "answer_type", "question_type", "phrase_type")
# Whole-image normality questions: (pattern on the lower-cased question without punctuation, what a "yes"
# says: True = abnormal, False = normal, None = a choice question whose answer names the word).
_SUBJECT = r"(this|the) (\w+ )?(image|scan|study|film|picture|radiograph|x ?ray|xray|ct|mri)( study)?"
WHOLE_IMAGE: tuple[tuple[str, bool | None], ...] = (
    (rf"^(is|are) {_SUBJECT} normal or abnormal$", None),
    (rf"^(is|are) {_SUBJECT} (normal|healthy|unremarkable)$", False),
    (r"^is this an? (normal|healthy) (image|scan|study|film|picture|radiograph|x ?ray|ct|mri)$", False),
    (r"^is this an image of normal physiology$", False),
    (r"^are the findings normal$", False),
    (rf"^(is|are) {_SUBJECT} abnormal$", True),
    (r"^is this an abnormal (image|scan|study|film|picture|radiograph|x ?ray|ct|mri)$", True),
    (r"^(is|are) there (an |any )?(abnormality|abnormalities|abnormal findings)( (in|on) (this|the) (image|scan|study|film))?$", True),
    (r"^(is )?anything (abnormal|wrong|irregular|not normal) in (this|the) (image|scan|study|film)$", True),
    (rf"^does {_SUBJECT} (represent|show) an abnormality$", True),
)
# A question restricted to a side or a place says nothing about the rest of the image.
_LOCATIVE = re.compile(r"\b(left|right|bilateral|both)\b|\b(in|on|of|at|within|near|under|along|above|below) (the|this|a|an) ")
# Abnormal signs that name no condition (a lesion, a hyperintensity): they make an image abnormal too.
ABNORMAL_SIGNS = re.compile(r"\b(lesions?|hyper-?intens\w*|hypo-?intens\w*|hyper-?dens\w*|hypo-?dens\w*|opacit\w*)\b")
NOTHING = frozenset({"no", "none", "nothing", "normal", "not seen", "n/a"})
_WHOLE_RE = [(re.compile(p), says) for p, says in WHOLE_IMAGE]


def read_qa(data_dir: Path, result: SourceResult | None = None) -> list[dict[str, Any]]:
    """The QA records with the fields we use, normalised; malformed ones are excluded by qid."""
    path = require_file(Path(data_dir) / QA_FILE, "VQA-RAD QA file")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise SourceError(f"{path}: expected a JSON list of QA records")
    out = []
    for i, rec in enumerate(raw):
        missing = [k for k in REQUIRED if not isinstance(rec, dict) or k not in rec]
        if missing:
            if result is not None:
                result.exclude(f"malformed QA record (missing {', '.join(missing)})", f"record {i}")
            continue
        if rec["image_organ"] not in ORGANS:
            if result is not None:
                result.exclude("unknown image_organ", f"qid {rec['qid']}: {rec['image_organ']}")
            continue
        out.append(
            {
                **rec,
                "answer": str(rec["answer"]).strip(),
                "answer_type": str(rec["answer_type"]).strip().upper(),
                "question": " ".join(str(rec["question"]).split()),
                "test": rec["phrase_type"] in TEST_PHRASES,
            }
        )
    if not out:
        raise SourceError(f"{path}: no usable QA record")
    return out


def qa_modality(qas: list[dict[str, Any]]) -> str | None:
    """Modality stated by the image's MODALITY question-answers, majority vote."""
    votes: Counter[str] = Counter()
    for qa in qas:
        if "MODALITY" not in qa["question_type"]:
            continue
        if qa["answer_type"] == "OPEN":
            mod = find_modality(qa["answer"].lower())
        elif qa["answer"].lower() == "yes":
            mod = find_modality(qa["question"].lower())
        else:
            continue
        if mod in ("x-ray", "ct", "mri"):
            votes[mod] += 1
    return votes.most_common(1)[0][0] if votes else None


def whole_image_vote(qa: dict[str, Any]) -> bool | None:
    """True (abnormal) / False (normal) when ``qa`` is a whole-image normality question, else None."""
    q = re.sub(r"[^a-z0-9 ]", " ", qa["question"].lower())
    q = " ".join(q.split())
    ans = qa["answer"].lower().strip(" .")
    for rx, says in _WHOLE_RE:
        if not rx.match(q):
            continue
        if says is None:  # "normal or abnormal": the answer names the word
            return {"abnormal": True, "normal": False}.get(ans)
        if ans in ("yes", "no"):
            return says if ans == "yes" else not says
        return None
    return None


def _findings_of(qa: dict[str, Any]) -> tuple[list[Finding], list[str]]:
    """(present findings, known-absent conditions) one QA pair states."""
    qt, ans = qa["question_type"], qa["answer"].lower().strip(" .")
    if not any(t in qt for t in ("PRES", "ABN", "POS")):
        return [], []
    if qa["answer_type"] == "OPEN":
        if ans in NOTHING:
            return [], []
        # "Where is the mass?" presupposes the mass; "What is the abnormality?" is answered by one
        found = find_conditions(qa["question"])[0] + find_conditions(qa["answer"])[0]
        device = names_device(f"{qa['question']} {qa['answer']}")
        return [Finding(f["condition"], f["position"]) for f in found if not (device and f["condition"] == DEVICE_AS)], []
    if ans not in ("yes", "no"):
        return [], []
    found, negated = find_conditions(qa["question"])
    if negated:
        return [], []  # a negated question ("is there no ...") is too easy to misread; skip it
    if ans == "yes":
        return [Finding(f["condition"], f["position"]) for f in found], []
    if _LOCATIVE.search(qa["question"].lower()):
        return [], []  # "a pneumothorax in the left apex?" -> no: it may be elsewhere
    return [], [f["condition"] for f in found]


DEVICE_AS = "foreign body"  # what a device is read as by the condition words ("What is the foreign body?")


def names_device(text: str) -> bool:
    """True when a QA pair names a medical device (devices.csv): a "foreign body" that is placed care (a
    Port-a-Cath, VQA-RAD synpic22037) is not an abnormality, and an image whose only finding it is has none."""
    low = text.lower()
    return any(re.search(rf"(?<![\w-]){re.escape(d)}s?(?![\w-])", low) for d in devices())


def describes_lesion(qa: dict[str, Any]) -> bool:
    """A PRES/ABN/POS pair that affirms an abnormal sign no condition name covers ("Where are the hyperintensities?")."""
    if not any(t in qa["question_type"] for t in ("PRES", "ABN", "POS")):
        return False
    ans = qa["answer"].lower().strip(" .")
    if qa["answer_type"] == "OPEN":  # a sign answered by normal anatomy ("Stomach bubble") is no lesion
        return ans not in NOTHING and ans not in normal_anatomy() and bool(ABNORMAL_SIGNS.search(f"{qa['question']} {qa['answer']}".lower()))
    return ans == "yes" and bool(ABNORMAL_SIGNS.search(qa["question"].lower()))


def image_facts(qas: list[dict[str, Any]]) -> tuple[list[Finding], list[str], bool | None]:
    """(present findings, known-absent conditions, abnormal) from the image's QA (module docstring)."""
    present: list[Finding] = []
    absent: list[str] = []
    votes: set[bool] = set()
    signs = False
    for qa in qas:
        vote = whole_image_vote(qa)
        if vote is not None:
            votes.add(vote)
            continue
        found, gone = _findings_of(qa)
        present += [f for f in found if f not in present]
        absent += [c for c in gone if c not in absent]
        signs = signs or describes_lesion(qa)
    names = {f.condition for f in present}
    absent = [c for c in absent if c not in names]
    described = bool(present) or signs
    if len(votes) > 1 or (votes == {False} and described):
        return present, absent, None  # the image's own QA disagree
    if votes:
        return present, absent, votes.pop()
    return present, absent, True if described else None


def load_vqarad(data_dir: Path, image_root: Path) -> SourceResult:
    """VQA-RAD -> one record per image, its modality, organ and findings read from its QA pairs."""
    data_dir = Path(data_dir)
    result = SourceResult(SOURCE)
    qas = read_qa(data_dir, result)
    by_image: dict[str, list[dict[str, Any]]] = {}
    for qa in qas:
        by_image.setdefault(qa["image_name"], []).append(qa)
    img_dir = data_dir / IMAGE_DIR
    if not img_dir.is_dir():
        raise SourceError(f"VQA-RAD image folder not found: {img_dir}")
    on_disk = {p.name for p in img_dir.iterdir() if p.is_file()}
    for name in sorted(on_disk - set(by_image)):
        result.exclude("image without questions", name)
    modality_from: Counter[str] = Counter()
    for name in sorted(by_image):
        items = by_image[name]
        if name not in on_disk:
            result.exclude("missing image file", name)
            continue
        organs = {qa["image_organ"] for qa in items}
        if len(organs) != 1:
            result.exclude("conflicting image_organ", f"{name}: {sorted(organs)}")
            continue
        organ_code = organs.pop()
        mod = qa_modality(items)
        modality_from["qa" if mod else ("documented" if organ_code in DOCUMENTED_MODALITY else "unknown")] += 1
        mod = mod or DOCUMENTED_MODALITY.get(organ_code, "unknown")
        findings, absent, abnormal = image_facts(items)
        result.records.append(
            ImageRecord(
                image_id=f"vqarad-{Path(name).stem}",
                source=SOURCE,
                modality=mod,
                organ=ORGANS[organ_code],
                abnormal=abnormal,
                findings=findings,
                absent_conditions=absent,
                image_path=relative_path(img_dir / name, image_root),
                split="test" if any(qa["test"] for qa in items) else "train",
                licence=LICENCE,
                provenance={
                    "origin": name,
                    "qids": [str(qa["qid"]) for qa in items],
                    "image_organ": organ_code,
                    "qa": [[qa["question"], qa["answer"], qa["question_type"]] for qa in items],
                },
            )
        )
    if not result.records:
        raise SourceError(f"{data_dir}: no usable VQA-RAD image")
    result.notes["modality_from"] = dict(modality_from)
    return result


def load(context: SourceContext) -> SourceResult:
    """The registry's loader (no options)."""
    return load_vqarad(context.data_dir, context.image_root)
