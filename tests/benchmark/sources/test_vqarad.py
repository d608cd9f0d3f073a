"""VQA-RAD records from the real QA file."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from probmed.benchmark.sources.vqarad import QA_FILE, load_vqarad, read_qa
from probmed.core.errors import SourceError


@pytest.fixture(scope="module")
def vqarad(shared_data: Path, repo_root: Path):
    return load_vqarad(shared_data / "vqa-rad", shared_data)


def test_counts(vqarad) -> None:
    assert len(vqarad.records) == 314
    assert Counter(r.organ for r in vqarad.records) == {"brain": 103, "chest": 107, "abdomen": 104}
    assert vqarad.excluded == {"image without questions": ["synpic35356.jpg"]}
    assert sum(r.split == "test" for r in vqarad.records) == 203


def test_modality_never_guessed_for_head(vqarad, shared_data: Path) -> None:
    qas = read_qa(shared_data / "vqa-rad")
    with_modality_qa = {q["image_name"] for q in qas if "MODALITY" in q["question_type"]}
    for r in vqarad.records:
        if r.organ == "brain" and r.modality != "unknown":
            assert r.provenance["origin"] in with_modality_qa
    assert Counter(r.modality for r in vqarad.records if r.organ == "brain")["unknown"] > 0
    assert all(r.modality == "x-ray" for r in vqarad.records if r.organ == "chest")


def test_findings_from_closed_questions(vqarad) -> None:
    by = {r.image_id: r for r in vqarad.records}
    r = by["vqarad-synpic33422"]  # "Is there a left apical pneumothorax?" -> yes
    assert any(f.condition == "pneumothorax" and f.position and "left" in f.position for f in r.findings)
    assert r.abnormal is True
    for rec in vqarad.records:
        assert not {f.condition for f in rec.findings} & set(rec.absent_conditions)
    assert sum(bool(r.absent_conditions) for r in vqarad.records) > 30


def test_bad_qa_records_and_unusable_source(shared_data: Path, tmp_path: Path) -> None:
    d = tmp_path / "vqa"
    (d / "VQA_RAD Image Folder").mkdir(parents=True)
    raw = json.loads((shared_data / "vqa-rad" / QA_FILE).read_text())
    keep = [q for q in raw if q["image_name"] == "synpic54610.jpg"]
    broken = dict(keep[0])
    del broken["answer"]
    odd = {**keep[0], "image_organ": "KNEE", "qid": "x1"}
    lost = {**keep[0], "image_name": "synpic_missing.jpg", "qid": "x2"}
    (d / QA_FILE).write_text(json.dumps(keep + [broken, odd, lost]))
    shutil.copy(shared_data / "vqa-rad" / "VQA_RAD Image Folder" / "synpic54610.jpg", d / "VQA_RAD Image Folder")
    res = load_vqarad(d, tmp_path)
    assert len(res.records) == 1
    assert res.excluded["malformed QA record (missing answer)"] == [f"record {len(keep)}"]
    assert res.excluded["unknown image_organ"] == ["qid x1: KNEE"]
    assert res.excluded["missing image file"] == ["synpic_missing.jpg"]
    (d / QA_FILE).write_text("{not json")
    with pytest.raises(SourceError, match="not valid JSON"):
        load_vqarad(d, tmp_path)


def test_a_device_is_not_an_abnormality(vqarad) -> None:
    """synpic22037: "What is the foreign body?" -> "a catheter" (a Port-a-Cath): placed care, not a finding,
    so the image has no finding and asks no abnormality question (it was "abnormality? yes" on the catheter)."""
    rec = next(r for r in vqarad.records if r.image_id == "vqarad-synpic22037")
    assert rec.findings == [] and rec.abnormal is None
    assert "fracture" in rec.absent_conditions  # "Is there a rib fracture?" -> No still counts
    from probmed.benchmark.sources.vqarad import names_device

    assert names_device("Where is the tip of the Port-a-Cath catheter located?") and not names_device("a bullet fragment")


def test_a_sign_answered_by_normal_anatomy_is_no_lesion(vqarad) -> None:
    """synpic33302: "What is hyperdensity under the diaphragm on the left?" -> "Stomach bubble" made a normal
    radiograph abnormal (the by-eye check: "abnormality? yes", false): the answer names normal anatomy."""
    rec = next(r for r in vqarad.records if r.image_id == "vqarad-synpic33302")
    assert rec.abnormal is None and rec.findings == []
    lesion = next(r for r in vqarad.records if r.image_id == "vqarad-synpic35191")  # "Where are the lesions?" -> cerebellum
    assert lesion.abnormal is True
