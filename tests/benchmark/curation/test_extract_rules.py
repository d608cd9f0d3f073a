"""Rule extractor: negation, vocabularies, and precision/recall on the hand-labelled real captions."""

from __future__ import annotations

import json
from pathlib import Path

from probmed.benchmark.curation.extract_eval import evaluate
from probmed.benchmark.curation.extract_rules import extract, find_conditions, is_empty
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
    caps = dict(line.split("\t", 1) for line in (shared / "roco-captions/test/radiology/captions.txt").read_text(encoding="utf-8").splitlines())
    for line in (shared / "medicat-sample/sample.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        caps[medicat_id(row)] = row["s2_caption"]
    return caps


def test_precision_recall_on_hand_labelled_captions(shared_data: Path) -> None:
    labels = json.loads(FIXTURE.read_text())["labels"]
    assert len(labels) >= 40
    assert {label["source"] for label in labels} == {"ROCO", "MedICaT"}
    caps = _captions(shared_data)
    preds = {label["id"]: extract(label["id"], caps[label["id"]]).to_json() for label in labels}
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
    assert len(labels) >= 150 and len({label["id"] for label in labels}) == len(labels)
    held = [label for label in labels if label["part"] == "heldout"]
    assert len(held) >= len(labels) / 3
    types = {(label["modality"], label["organ"]) for label in labels}
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


# --- the extended profile (issue 20): ultrasound and the organs beyond the paper's four ----------------------


def test_extended_profile_reads_ultrasound_and_the_new_organs_while_the_paper_profile_does_not() -> None:
    from probmed.benchmark.curation.profiles import EXTENDED

    ex = extract("u", "Transvaginal ultrasound showing a right ovarian cyst.", EXTENDED)
    assert (ex.modality, ex.organ, ex.findings) == ("ultrasound", "pelvis", [{"condition": "cyst", "position": "right ovary"}])
    assert (extract("k", "Ultrasound of the right knee.", EXTENDED).modality, extract("k", "Ultrasound of the right knee.", EXTENDED).organ) == ("ultrasound", "knee")
    assert extract("k", "Ultrasound of the right knee.").organ == "other"  # the paper's profile, as before
    assert extract("d", "Periapical radiograph of the maxillary incisors.", EXTENDED).modality == "other"  # a dental film
    assert extract("c", "Contrast-enhanced ultrasound of the liver lesion.", EXTENDED).modality == "other"
    assert extract("t", "CT of the neck showing a mass in the left side of the thyroid.", EXTENDED).findings == [
        {"condition": "mass", "position": "left thyroid lobe"}]
    clavicle = extract("x", "X-ray of the left clavicle showing a mid-shaft clavicle fracture.", EXTENDED)
    assert (clavicle.organ, clavicle.findings) == ("shoulder", [{"condition": "fracture", "position": "left clavicle"}])
    assert extract("h", "MRI of the hip and knee.", EXTENDED).organ == "unknown"  # two organs with the technique
    assert extract("f", "Axial CT of the face and neck showing a parotid mass.", EXTENDED).organ == "head and neck"


def test_extended_negation_and_context_cues() -> None:
    from probmed.benchmark.curation.profiles import EXTENDED

    ex = extract("n", "Chest X-ray with a bullet in the left hilum. Neither pneumothorax nor fractures are seen.", EXTENDED)
    assert [f["condition"] for f in ex.findings] == ["foreign body"] and set(ex.negated) == {"pneumothorax", "fracture"}
    assert extract("u", "Radiograph of the femur showing solid union of the fracture.", EXTENDED).findings == []
    assert extract("p", "A woman presented with swelling of the neck; ultrasound of the thyroid.", EXTENDED).findings == []


ROCO_EXTENDED_LABELS = Path(__file__).resolve().parents[2] / "fixtures" / "roco_extended_caption_labels.json"
# Goals the rules miss on a part, measured (docs/benchmark/extraction.md): they are reported, not bent toward;
# each stays a floor so a regression still fails. Position vocabularies of the new organs are long-tailed
# (a structure per finding: "right preseptal region", "longus colli tendon"): the held-out part names many
# structures the dev part never did. The position rules learnt from the dev part's errors (part-of phrases, caption
# sides, joints, relations) raised dev to P 0.898 R 0.674 but held-out only to P 0.577 R 0.353 (from 0.538 / 0.329):
# measured once, after the rules were written. The dev2 part (a second development sample, labelled afterwards)
# measured P 0.651 R 0.368 on those same rules: an honest estimate of how they generalise. Rules written from dev2's
# errors (structure vocabularies, relations, coordinated lobes, the figure's subject) raised dev2 to P 0.848 R 0.513
# (its goals met) and dev to 0.909 / 0.694, and left held-out unchanged at P 0.577 R 0.353 (measured once, at the
# end: unchanged).
KNOWN_SHORTFALLS: dict[tuple[str, str, str], float] = {
    ("heldout", "position", "precision"): 0.57,
    ("heldout", "position", "recall"): 0.35,
}


def test_roco_extended_labelled_set_meets_every_goal_on_both_parts(shared_data: Path) -> None:
    """The extended profile on the roco-extended labels: each part meets the goals, but for the known shortfalls,
    which hold their measured floors; modality and organ claims are precise (abstaining beats a wrong organ)."""
    from probmed.benchmark.curation.extract_eval import GOALS, LABELLED_SETS, read_roco_captions, score_labelled_set
    from probmed.benchmark.curation.profiles import EXTENDED

    labelled = LABELLED_SETS["roco-extended"]
    assert labelled.profile is EXTENDED
    captions = read_roco_captions(shared_data / labelled.captions)
    scores = score_labelled_set(ROCO_EXTENDED_LABELS, captions, lambda i, c: extract(i, c, EXTENDED))
    print(json.dumps({p: {k: s[k] for k in ("modality", "organ", "condition", "position")} for p, s in scores.items()}))
    for part in ("dev", "dev2", "heldout"):
        for (fld, metric), goal in GOALS.items():
            floor = KNOWN_SHORTFALLS.get((part, fld, metric), goal)
            assert scores[part][fld][metric] >= floor, (part, fld, metric, scores[part][fld][metric])
        assert scores[part]["modality"]["precision"] >= 0.95 and scores[part]["organ"]["precision"] >= 0.95, part


def test_between_two_places_names_neither_as_the_site(shared_data: Path) -> None:
    """ROCO_65374: "a mixed attenuated mass between the liver and pancreas" was asked "mass in the liver? yes" and
    "mass in the pancreas? yes" (qids 0ebd16cc78e7ea0e, ccdf7f06925547c8): a relation, not a site."""
    import csv

    with (shared_data / "roco-images" / "metadata.csv").open(encoding="utf-8") as f:
        caption = next(r["caption"] for r in csv.DictReader(f) if r["roco_id"] == "ROCO_65374")
    findings = extract("ROCO_65374", caption).findings
    assert ("mass", None) in {(f["condition"], f["position"]) for f in findings}
    assert not any(f["position"] in ("liver", "pancreas") for f in findings if f["condition"] == "mass")
    found, _ = find_conditions("A mass is seen between the liver and the right kidney.", organ="abdomen")
    assert found == [{"condition": "mass", "position": None}]
    found, _ = find_conditions("A mass in the liver.", organ="abdomen")
    assert found == [{"condition": "mass", "position": "liver"}]


def test_a_heart_chamber_is_not_the_brain(shared_data: Path) -> None:
    """ROCO_51595: "MR scan showing left ventricular aneurysm ... under pectoralis minor" was a brain image (the by-eye
    check: "Does this image show the brain? yes" of a cardiac MR): a left or right ventricle is the heart's."""
    import csv

    with (shared_data / "roco-images" / "metadata.csv").open(encoding="utf-8") as f:
        caption = next(r["caption"] for r in csv.DictReader(f) if r["roco_id"] == "ROCO_51595")
    assert extract("ROCO_51595", caption).organ == "chest"
    assert extract("x", "MRI of the brain: dilated lateral ventricles and third ventricle.").organ == "brain"


def test_cannot_be_distinguished_from_is_a_relation_not_a_site(shared_data: Path) -> None:
    """ROCO_68166: a retroperitoneal cystic mass that "cannot be distinguished from spleen, pancreas, and stomach" was
    asked "Is the mass located in the stomach? yes" (false in the by-eye check)."""
    import csv

    with (shared_data / "roco-images" / "metadata.csv").open(encoding="utf-8") as f:
        caption = next(r["caption"] for r in csv.DictReader(f) if r["roco_id"] == "ROCO_68166")
    masses = [f["position"] for f in extract("ROCO_68166", caption).findings if f["condition"] == "mass"]
    assert masses and not any(p in ("spleen", "pancreas", "stomach") for p in masses)


def _roco_caption(shared: Path, folder: str, roco_id: str) -> str:
    import csv

    with (shared / folder / "metadata.csv").open(encoding="utf-8") as f:
        return next(r["caption"] for r in csv.DictReader(f) if r["roco_id"] == roco_id)


def test_an_organ_is_the_region_imaged_not_a_structure_mentioned(shared_data: Path) -> None:
    """Issue 38: the organ read from a caption is the region the figure shows. Each real caption below was read as
    another region from a word (figures opened: a coronal MRI of the back and thorax, an HRCT of the lung bases,
    two abdominal CTs, a transabdominal ultrasound of the uterus, an upper abdominal CT)."""
    from probmed.benchmark.curation.profiles import EXTENDED, PAPER

    def organ(folder: str, roco_id: str) -> str:
        profile = EXTENDED if folder == "roco-extended" else PAPER
        return extract(roco_id, _roco_caption(shared_data, folder, roco_id), profile).organ

    # a landmark names a structure beside the finding, not the field: "under the left scapula ... to the 10th rib"
    assert organ("roco-extended", "ROCO_55096") == "unknown"  # was shoulder
    # an arrow head is a pointer, a pancreatic head part of the pancreas
    assert organ("roco-images", "ROCO_23461") == "chest"  # was brain
    assert organ("roco-images", "ROCO_52022") == "abdomen" and organ("roco-images", "ROCO_47228") == "abdomen"
    # "transabdominal" is the ultrasound's approach: the uterus is in the pelvis
    assert organ("roco-extended", "ROCO_51402") == "pelvis"  # was abdomen
    # the patient's disease ("in a patient with adenocarcinoma of the prostate") and a complaint or score ("hip pain",
    # "Harris hip score") name no imaged region
    assert organ("roco-extended", "ROCO_58700") == "unknown"  # was pelvis
    assert organ("roco-extended", "ROCO_31558") == "unknown"  # was pelvis
    assert extract("f", "Axial MRI showing periventricular nodules in a child with cardiac rhabdomyomas.", EXTENDED).organ == "brain"
    # the organ's own words still decide: named with the technique, or a landmark beside the renal hilum
    assert extract("c", "CT of the chest showing a lesion under the left scapula.", EXTENDED).organ == "chest"
    assert extract("s", "MRI of the left shoulder in a patient with diabetes.", EXTENDED).organ == "shoulder"
    assert organ("roco-extended", "ROCO_73938") == "abdomen"  # "next to the renal transplant's hilum": not the lung's
    assert extract("h", "Axial CT of the head showing a left frontal mass.").organ == "brain"


def test_a_scapular_site_abstains_from_the_shoulder_question(shared_data: Path) -> None:
    """The scapula's body, borders and the space beneath it lie on the posterior chest wall: a shoulder caption that
    names it may belong to a chest film or a view of the chest wall (ROCO_44526: a lesion of the inferior border, the
    joint not clearly in view; ROCO_19381: a crop of the chest wall). Shoulder views keep their organ question."""
    from probmed.benchmark.curation.extract_rules import organ_abstention

    for roco_id in ("ROCO_44526", "ROCO_19381"):
        reason = organ_abstention(_roco_caption(shared_data, "roco-extended", roco_id), "shoulder")
        assert reason and "scapula" in reason, roco_id
    assert organ_abstention(_roco_caption(shared_data, "roco-extended", "ROCO_42037"), "shoulder") is None  # a clavicle film
    assert organ_abstention("Scapular Y view of the right shoulder showing anterior dislocation.", "shoulder") is None
    assert organ_abstention("Chest radiograph: a mass under the left scapula.", "chest") is None  # the chest shows it
    from probmed.benchmark.curation.tables import off_field_sites
    from probmed.core.vocab import EXTENDED_ORGANS

    assert set(off_field_sites()) <= set(EXTENDED_ORGANS) and all(s.why for v in off_field_sites().values() for s in v)
