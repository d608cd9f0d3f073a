"""A normal *study* on real roco-extended captions: abnormality is asked only of images known normal or abnormal.

Why: the abnormality question's "no" is true only when the whole study is normal. A caption that calls one
structure normal ("the normal left hemidiaphragm", "compressing the normal parenchyma") says nothing of the rest,
and one that calls an earlier study normal says nothing of this one.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from probmed.benchmark.curation.extract_rules import extract
from probmed.benchmark.curation.profiles import EXTENDED, PAPER

LABELS = Path(__file__).parents[2] / "fixtures" / "roco_extended_caption_labels.json"
NORMAL_STUDIES = {
    "ROCO_14775": "Normal lung ultrasound",
    "ROCO_16516": "Normal AP radiograph of left knee.",
    "ROCO_26438": "Normal X-ray left hip",
    "ROCO_49704": "Control chest X-ray: normal.",
    "ROCO_53696": "MR imaging of the normal prostate.",
    "ROCO_35779": "Transperineal sonography of normal female anatomy",
}
NORMAL_STRUCTURE_ONLY = {
    "ROCO_78315": "Note the normal left hemidiaphragm (a rib is discontinuous)",
    "ROCO_67762": "dilated sheath surrounding normal optic nerves",
    "ROCO_70536": "cystic lesions compressing the normal parenchyma",
    "ROCO_52974": "lung metastasis; the preoperative radiograph was normal",
    "ROCO_40125": "bilobed testicle with the same normal echogenicity",
    "ROCO_22339": "calculus seen after a normal saline enema",
}


@pytest.fixture(scope="module")
def captions(shared_data: Path) -> dict[str, str]:
    with open(shared_data / "roco-extended" / "metadata.csv", newline="", encoding="utf-8") as fh:
        return {row["roco_id"]: row["caption"] for row in csv.DictReader(fh)}


def test_captions_stating_a_normal_study_are_normal(captions: dict[str, str]) -> None:
    for roco_id, what in NORMAL_STUDIES.items():
        ex = extract(roco_id, captions[roco_id], EXTENDED)
        assert ex.normal and not ex.findings, (roco_id, what)


def test_normal_about_one_structure_or_another_study_is_not_a_normal_study(captions: dict[str, str]) -> None:
    for roco_id, what in NORMAL_STRUCTURE_ONLY.items():
        assert not extract(roco_id, captions[roco_id], EXTENDED).normal, (roco_id, what)


def test_normal_study_detection_on_the_hand_labels(captions: dict[str, str]) -> None:
    """Every caption labelled a normal study is found and none is claimed wrongly, on both parts."""
    labels = json.loads(LABELS.read_text(encoding="utf-8"))["labels"]
    for part in ("dev", "heldout"):
        rows = [(label["normal"], extract(label["id"], captions[label["id"]], EXTENDED).normal)
                for label in labels if label["part"] == part]
        assert sum(1 for truth, got in rows if got and not truth) == 0, part  # precision 1.0
        assert sum(1 for truth, got in rows if truth and not got) == 0, part  # recall 1.0
        assert any(truth for truth, _ in rows), part


def test_the_paper_profile_reads_normal_as_before() -> None:
    # the extended cues stay in the extended profile: the paper's sources extract exactly as before
    assert not extract("x", "MR imaging of the normal prostate.", PAPER).normal
    assert extract("x", "Axial CT of the brain: normal study.", PAPER).normal
