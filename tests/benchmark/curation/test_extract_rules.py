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
    assert ex.findings[0]["position"] == "right pleura"
    assert ex.negated == ["pneumothorax"]
    assert (ex.modality, ex.organ) == ("x-ray", "chest")
    ex = extract("y", "Axial CT without hemorrhage, but with a left frontal mass.")
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
    assert s["modality"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "predicted": 1, "labelled": 1}
    assert s["organ"]["labelled"] == 0 and s["organ"]["recall"] is None
    assert s["condition"]["tp"] == 1 and s["position"]["tp"] == 0
