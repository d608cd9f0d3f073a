"""VQA-RAD -> ImageRecords, from the official QA JSON and its image folder.

* organ: ``image_organ`` (HEAD -> brain, CHEST -> chest, ABD -> abdomen).
* modality: MODALITY question-answers first (an open answer naming CT/MRI/
  X-ray, or a closed "Is this a CT?" answered yes); otherwise the dataset's
  documented acquisition (CHEST: radiographs, ABD: axial CT). HEAD images are
  MRI or CT, so without a MODALITY answer they stay ``unknown``, never guessed.
* findings and positions: conditions named by closed PRES / ABN / POS
  questions answered "yes" (rule vocabulary, side and region from the
  question); conditions asked about and answered "no" are known absent.
* split: ``test`` when the image has any test-split QA (phrase_type
  test_freeform / test_para), else ``train``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from probmed.benchmark.curation.extract_rules import find_conditions, find_modality
from probmed.core.records import Finding, ImageRecord
from probmed.benchmark.sources.base import SourceContext, SourceResult, relative_path, require_file
from probmed.core.errors import SourceError

SOURCE = "VQA-RAD"
QA_FILE = "VQA_RAD Dataset Public.json"
IMAGE_DIR = "VQA_RAD Image Folder"
ORGANS = {"HEAD": "brain", "CHEST": "chest", "ABD": "abdomen"}
DOCUMENTED_MODALITY = {"CHEST": "x-ray", "ABD": "ct"}
TEST_PHRASES = {"test_freeform", "test_para"}
REQUIRED = ("qid", "image_name", "image_organ", "question", "answer", "answer_type", "question_type", "phrase_type")
WHOLE_IMAGE = ("this image", "the image", "this study", "this scan", "anything", "any abnormal", "abnormal findings", "this film")


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


def image_facts(qas: list[dict[str, Any]]) -> tuple[list[Finding], list[str], bool | None]:
    """(present findings, known-absent conditions, abnormal) from closed PRES/ABN/POS QA."""
    present: list[Finding] = []
    absent: list[str] = []
    abnormal: bool | None = None
    for qa in qas:
        qt = qa["question_type"]
        if qa["answer_type"] != "CLOSED" or not any(t in qt for t in ("PRES", "ABN", "POS")):
            continue
        ans = qa["answer"].lower()
        if ans not in ("yes", "no"):
            continue
        q = qa["question"].lower()
        if "ABN" in qt and any(w in q for w in WHOLE_IMAGE):
            says_abnormal = ("abnormal" in q or "not normal" in q or "lesion" in q)
            abnormal = (ans == "yes") == says_abnormal
        found, negated = find_conditions(qa["question"])
        if negated:
            continue  # a negated question ("is there no ...") is too easy to misread; skip it
        for f in found:
            if ans == "yes":
                finding = Finding(f["condition"], f["position"])
                if finding not in present:
                    present.append(finding)
            elif f["condition"] not in absent:
                absent.append(f["condition"])
    names = {f.condition for f in present}
    absent = [c for c in absent if c not in names]
    if present:
        abnormal = True
    return present, absent, abnormal


def load_vqarad(data_dir: Path, image_root: Path) -> SourceResult:
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
    modality_from = Counter()
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
                provenance={"origin": name, "qids": [str(qa["qid"]) for qa in items], "image_organ": organ_code},
            )
        )
    if not result.records:
        raise SourceError(f"{data_dir}: no usable VQA-RAD image")
    result.notes["modality_from"] = dict(modality_from)
    return result


def load(context: SourceContext) -> SourceResult:
    """The registry's loader (no options)."""
    return load_vqarad(context.data_dir, context.image_root)
