"""Rule extractor: negation, vocabularies, and precision/recall on the hand-labelled real captions."""

from __future__ import annotations

import json
from pathlib import Path

from probmed.benchmark.curation.extract_eval import evaluate
from probmed.benchmark.curation.extract_rules import extract, is_empty
from probmed.benchmark.sources.captions import medicat_id

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "caption_labels.json"


def test_negation_is_not_a_finding() -> None:
    ex = extract("x", "Chest radiograph with no evidence of pneumothorax. Large right pleural effusion.")
    assert [f["condition"] for f in ex.findings] == ["effusion"]
    assert ex.findings[0]["position"] == "right"  # the pleura is implied by "pleural effusion": the side only
    assert ex.negated == ["pneumothorax"]
    assert (ex.modality, ex.organ) == ("x-ray", "chest")
    ex = extract("y", "Axial CT of the head without hemorrhage, but with a left frontal mass.")  # regions need the organ
    assert ex.negated == ["hemorrhage"] and ex.findings == [{"condition": "mass", "position": "left frontal lobe"}]


def test_other_and_unknown() -> None:
    assert extract("u", "Ultrasound of the right knee.").modality == "other"
    assert extract("u", "Ultrasound of the right knee.").organ == "other"
    assert is_empty(extract("e", "Figure 3. Follow-up at 6 months."))


def _captions(shared: Path) -> dict[str, str]:
    caps = dict(l.split("\t", 1) for l in (shared / "roco-captions/test/radiology/captions.txt").read_text(encoding="utf-8").splitlines())
    for line in (shared / "medicat-sample/sample.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        caps[medicat_id(row)] = row["s2_caption"]
    return caps


def test_precision_recall_on_hand_labelled_captions(shared_data: Path) -> None:
    labels = json.loads(FIXTURE.read_text())["labels"]
    assert len(labels) >= 40
    assert {l["source"] for l in labels} == {"ROCO", "MedICaT"}
    caps = _captions(shared_data)
    preds = {l["id"]: extract(l["id"], caps[l["id"]]).to_json() for l in labels}
    scores = evaluate(labels, preds)
    print(json.dumps(scores))
    # Floors a little under the measured values (see the issue note), so a regression fails.
    assert scores["modality"]["precision"] >= 0.95 and scores["modality"]["recall"] >= 0.8
    assert scores["organ"]["precision"] >= 0.9 and scores["organ"]["recall"] >= 0.7
    assert scores["condition"]["precision"] >= 0.75 and scores["condition"]["recall"] >= 0.5
    assert scores["position"]["recall"] > 0.1


def test_evaluate_counts() -> None:
    labels = [{"id": "a", "modality": "ct", "organ": "unknown", "findings": [{"condition": "mass", "position": "liver"}]}]
    s = evaluate(labels, {"a": {"modality": "mri", "organ": "chest", "findings": [{"condition": "mass", "position": None}]}})
    assert s["modality"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "predicted": 1, "labelled": 1, "accuracy": 0.0}
    assert s["organ"]["labelled"] == 0 and s["organ"]["recall"] is None
    assert s["condition"]["tp"] == 1 and s["position"]["tp"] == 0


ROCO_LABELS = Path(__file__).resolve().parents[2] / "fixtures" / "roco_images_caption_labels.json"


def test_roco_images_labelled_set_meets_every_goal_on_both_parts(shared_data: Path) -> None:
    """>= 150 captions over every image type, a third held out; each part meets the issue's goals."""
    from probmed.benchmark.curation.extract_eval import (
        missed_goals,
        read_roco_captions,
        score_labelled_set,
    )

    labels = json.loads(ROCO_LABELS.read_text())["labels"]
    assert len(labels) >= 150 and len({l["id"] for l in labels}) == len(labels)
    held = [l for l in labels if l["part"] == "heldout"]
    assert len(held) >= len(labels) / 3
    types = {(l["modality"], l["organ"]) for l in labels}
    assert {(m, o) for m in ("x-ray", "ct", "mri") for o in ("abdomen", "brain", "spine")} | {("ct", "chest"), ("mri", "chest")} <= types
    scores = score_labelled_set(ROCO_LABELS, read_roco_captions(shared_data / "roco-images" / "metadata.csv"), extract)
    print(json.dumps({p: {k: s[k] for k in ("modality", "organ", "condition", "position")} for p, s in scores.items()}))
    for part in ("dev", "heldout"):
        assert missed_goals(scores[part]) == [], part


def test_goal_check_names_what_is_missed() -> None:
    from probmed.benchmark.curation.extract_eval import missed_goals

    labels = [{"id": "a", "modality": "ct", "organ": "chest", "findings": [{"condition": "mass", "position": "left lung"}]}]
    scores = evaluate(labels, {"a": {"modality": "ct", "organ": "abdomen", "findings": [{"condition": "mass", "position": None}]}})
    assert scores["modality"]["accuracy"] == 1.0 and scores["organ"]["accuracy"] == 0.0
    assert missed_goals(scores) == ["organ accuracy 0.0 < 0.9", "position precision None < 0.8", "position recall 0.0 < 0.5"]


def test_positions_follow_the_organ_vocabulary() -> None:
    ex = extract("p", "Chest CT showing a mass in the upper lobe of the right lung and metastases in each lung.")
    assert ex.findings == [{"condition": "mass", "position": "right upper lobe"}, {"condition": "metastasis", "position": "bilateral lungs"}]
    ex = extract("b", "Axial T2-weighted MRI of the brain: left cerebellar atrophy and a right frontal lesion consistent with an abscess.")
    assert (ex.modality, ex.organ) == ("mri", "brain")
    assert {(f["condition"], f["position"]) for f in ex.findings} == {
        ("atrophy", "left cerebellar hemisphere"), ("lesion", "right frontal lobe"), ("abscess", "right frontal lobe")}
    ex = extract("s", "Sagittal MRI of the lumbar spine showing a disc herniation at L4/L5 and at L5/S1.")
    assert [f["position"] for f in ex.findings] == ["lumbar spine", "lumbosacral junction"]


def test_figure_flags_and_ambiguity() -> None:
    assert "multi-panel figure" in extract("m", "Axial (a) and coronal (b) CT of the abdomen.").flags
    assert "animal study" in extract("a", "CT of the chest of a dog with a lung mass.").flags
    ex = extract("x", "Brain CT and MR diffusion images showing no intracranial lesion.")
    assert ex.modality == "unknown" and any("ambiguous modality" in f for f in ex.flags)
    ex = extract("o", "CT scan study of neck and thorax")
    assert ex.organ == "unknown" and any("ambiguous organ" in f for f in ex.flags)
    assert extract("n", "T2-weighted axial MRI of the brain showing no obvious abnormality").normal
