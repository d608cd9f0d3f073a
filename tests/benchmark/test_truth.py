"""Truth of every "no": each rule on a real image from ../shared/data that the earlier rules got wrong."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from probmed.benchmark import truth
from probmed.benchmark.audit.truthcheck import contradiction
from probmed.benchmark.curation.tables import field_of_view, overlap_groups
from probmed.benchmark.curation.vocabularies import (
    CONDITIONS_BY_ORGAN,
    conditions_for,
    positions_for,
)
from probmed.benchmark.sources.chestxray14 import load_chestxray14
from probmed.benchmark.sources.vqarad import load_vqarad, whole_image_vote
from probmed.core.records import ImageRecord
from probmed.core.vocab import ASKABLE_MODALITIES, ASKABLE_ORGANS, PAPER_ORGANS


@pytest.fixture(scope="module")
def cxr(shared_data: Path, repo_root: Path) -> dict[str, ImageRecord]:
    res = load_chestxray14(shared_data / "chestxray14", repo_root / "build/images/chestxray14", repo_root, write_images=False)
    return {r.image_id: r for r in res.records}


@pytest.fixture(scope="module")
def vqa(shared_data: Path, repo_root: Path) -> dict[str, ImageRecord]:
    return {r.image_id: r for r in load_vqarad(shared_data / "vqa-rad", shared_data).records}


def no(category: str, question: str, entity: str = "") -> SimpleNamespace:
    return SimpleNamespace(category=category, question=question, entity=entity, answer="no")


def test_organ_in_the_field_of_view_is_never_a_no(cxr, vqa) -> None:
    # the earlier rules asked "Does this image show the spine?" -> no of this chest radiograph
    chest = cxr["cxr14-00000147_001"]
    assert truth.organ_adversaries(chest) == ("brain", "pelvis", "knee", "hand", "foot")
    assert truth.organ_adversaries(chest, PAPER_ORGANS) == ("brain",)  # the paper's scope
    assert contradiction(no("organ", "Does this image show the spine?", "spine"), chest)
    assert contradiction(no("organ", "Does this image show the abdomen?", "abdomen"), chest)
    assert contradiction(no("organ", "Does this image show the brain?", "brain"), chest) is None
    # an abdominal CT shows the lung bases and the lumbar spine
    assert truth.organ_adversaries(vqa["vqarad-synpic19605"], PAPER_ORGANS) == ("brain",)
    assert "pelvis" not in truth.organ_adversaries(vqa["vqarad-synpic19605"])  # an abdominal CT reaches the pelvis
    # every (modality, organ) the sources give keeps at least one organ out of view, spine excepted
    for organ in ("chest", "abdomen", "brain"):
        assert set(ASKABLE_ORGANS) - truth.organs_in_view("x-ray", organ) - {organ}
    assert truth.organs_in_view("mri", "spine") >= {"chest", "abdomen", "brain"}
    assert field_of_view()  # the data table is read


# (organ of the image, organs it may show): the new organs' fields of view (issue 20), as a clinician reads them
NEW_ORGAN_VIEWS = (
    ("pelvis", {"abdomen", "spine"}),                       # a pelvic CT shows the lower abdomen and the sacrum
    ("shoulder", {"chest", "head and neck", "spine"}),      # a shoulder film shows the upper chest and the neck base
    ("head and neck", {"spine", "brain", "chest", "shoulder"}),  # a neck CT: cervical spine; a face CT: the brain
    ("spine", {"pelvis", "head and neck", "shoulder"}),
    ("chest", {"shoulder", "head and neck"}),
    ("abdomen", {"pelvis"}),
    ("brain", {"head and neck"}),
)


@pytest.mark.parametrize("organ,shown", NEW_ORGAN_VIEWS)
def test_new_organs_in_view_are_never_a_no(organ: str, shown: set[str]) -> None:
    for modality in ASKABLE_MODALITIES:
        rec = ImageRecord(image_id=f"t-{modality}-{organ}", source="test", modality=modality, organ=organ)
        asked = set(truth.organ_adversaries(rec))
        assert not asked & (shown | {organ}), (modality, organ, asked & shown)
        assert asked, (modality, organ)  # some organ stays out of view: the pair can be asked
        for other in shown:
            assert contradiction(no("organ", f"Does this image show the {other}?", other), rec)
            assert contradiction(no("organ", f"Does this image show the {other}?"), rec)  # read from the text
        for other in asked:
            assert contradiction(no("organ", f"Does this image show the {other}?", other), rec) is None


def test_every_askable_image_type_keeps_an_organ_out_of_view() -> None:
    for modality in ASKABLE_MODALITIES:
        for organ in ASKABLE_ORGANS:
            rec = ImageRecord(image_id="t", source="test", modality=modality, organ=organ)
            assert truth.organ_adversaries(rec), (modality, organ)
            # the paper's scope asks no organ of the new ones, and none in view
            assert set(truth.organ_adversaries(rec, PAPER_ORGANS)) <= set(PAPER_ORGANS) - truth.organs_in_view(modality, organ)


def test_condition_overlapping_a_present_finding_is_never_a_no(cxr) -> None:
    # pneumonia is present; the label table says infiltration and consolidation are absent, yet both overlap it
    rec = cxr["cxr14-00000193_019"]
    assert {"infiltration", "consolidation"} <= set(rec.absent_conditions)
    allowed = truth.condition_adversaries(rec, conditions_for("chest", "x-ray"))
    assert "infiltration" not in allowed and "consolidation" not in allowed and "pneumonia" not in allowed
    assert "infiltration" not in truth.known_absent_conditions(rec)
    assert contradiction(no("condition", "Is there evidence of infiltration in this image?", "infiltration"), rec)
    assert "pneumothorax" in allowed and "pneumothorax" in truth.known_absent_conditions(rec)
    # mass and nodule overlap; a specific diagnosis overlaps the generic words, never another diagnosis
    assert "nodule" in truth.overlapping(["mass"])
    assert {"tumor", "mass"} <= truth.overlapping(["glioma"]) and "meningioma" not in truth.overlapping(["glioma"])
    assert {"hemorrhage", "hematoma"} <= overlap_groups()["bleed"]


def test_condition_named_by_any_qa_of_the_image_is_never_a_no(vqa) -> None:
    # "The hemorrhage is adjacent to what structures?" presupposes a hemorrhage; the earlier rules asked it as a no
    rec = vqa["vqarad-synpic51426"]
    assert "hemorrhage" in truth.present_conditions(rec)
    allowed = truth.condition_adversaries(rec, CONDITIONS_BY_ORGAN["brain"])
    assert "hemorrhage" not in allowed and "hematoma" not in allowed
    assert contradiction(no("condition", "Is there evidence of hemorrhage in this image?", "hemorrhage"), rec)
    # a nonspecific finding (an opacity, a lesion) may be any condition: nothing is surely absent
    lesion = ImageRecord("x", "VQA-RAD", "ct", "abdomen", True, [{"condition": "lesion"}], image_path="x.png")
    assert truth.condition_adversaries(lesion, CONDITIONS_BY_ORGAN["abdomen"]) == ()


def test_evidence_known_absent_only_when_a_label_or_answer_says_so(vqa) -> None:
    # "Is a pleural effusion present?" -> no: known absent
    assert "effusion" in truth.known_absent_conditions(vqa["vqarad-synpic60423"])
    # "Is a pneumothorax present in the left apex?" -> no says nothing about the right: not absence evidence
    assert "pneumothorax" not in vqa["vqarad-synpic13385"].absent_conditions


def test_vqarad_whole_image_rule_reads_only_whole_image_questions_and_takes_polarity_from_the_answer(vqa) -> None:
    # marked normal by the earlier rules, abnormal by their own QA
    assert vqa["vqarad-synpic32081"].abnormal is True  # "Is anything wrong in the image?" -> Yes
    assert vqa["vqarad-synpic19114"].abnormal is True  # "Are the findings normal?" -> No
    assert vqa["vqarad-synpic53574"].abnormal is True  # infarcts described, no whole-image question
    # QA disagree: "Does this scan represent an abnormality?" -> No, yet it asks where the hyperintensities are
    assert vqa["vqarad-synpic27142"].abnormal is None
    # only regional questions ("Is there evidence of any abnormalities of the lung parenchyma?"): unknown
    assert vqa["vqarad-synpic25821"].abnormal is None
    assert vqa["vqarad-synpic60423"].abnormal is False  # "Anything abnormal in this image?" -> No
    qa = {"answer_type": "CLOSED"}
    assert whole_image_vote({**qa, "question": "Is this image normal?", "answer": "no"}) is True
    assert whole_image_vote({**qa, "question": "Is this image abnormal?", "answer": "no"}) is False
    assert whole_image_vote({**qa, "question": "Is this image normal or abnormal?", "answer": "abnormal"}) is True
    assert whole_image_vote({**qa, "question": "Is the liver normal?", "answer": "yes"}) is None
    assert whole_image_vote({**qa, "question": "Any abnormal findings in the lower lung fields?", "answer": "no"}) is None


def test_position_never_overlaps_the_true_region(cxr) -> None:
    # the effusion's box spans the right middle and upper zones; "both middle lung zones" was asked as a no
    rec = cxr["cxr14-00000344_003"]
    allowed = truth.position_adversaries(rec, "effusion", positions_for("chest", "x-ray"))
    # (on this film's located lung field, apex 0.13 H, the box (0.22-0.44 H) lies below the right upper zone)
    for p in ("both middle lung zones", "right lung", "right middle lung zone", "both lungs"):
        assert p not in allowed
    assert allowed == ()  # a pleural box stands for its side, and one box per label leaves the left unknown
    assert truth.position_adversaries(rec, "effusion", positions_for("chest", "x-ray", "effusion")) == ()
    assert contradiction(no("position", "Is the effusion located in both middle lung zones?", "both middle lung zones"), rec)
    # the enlarged heart reaches the lower lung zones: cardiomegaly has no lung zone and no position pair
    heart = cxr["cxr14-00000211_041"]
    assert [f.position for f in heart.findings if f.condition == "cardiomegaly"] == ["cardiac silhouette"]
    assert "left lower lung zone" not in truth.position_adversaries(heart, "cardiomegaly", positions_for("chest", "x-ray"))


def test_text_positions_overlap_by_side_and_region() -> None:
    assert truth.positions_overlap("brain", "left frontal lobe", "left hemisphere")
    assert not truth.positions_overlap("brain", "left frontal lobe", "right frontal lobe")
    assert truth.positions_overlap("brain", "bilateral frontal lobes", "right frontal lobe")
    assert not truth.positions_overlap("brain", "left frontal lobe", "left occipital lobe")
    assert truth.positions_overlap("chest", "left lung apex", "left upper lung zone")
    assert not truth.positions_overlap("chest", "right lung base", "right upper lung zone")
    assert truth.positions_overlap("abdomen", "liver", "right upper quadrant")


def test_one_box_per_label_leaves_the_other_side_unknown(cxr) -> None:
    """ChestX-ray14 draws one box per label, so a box says nothing of the other side (qid 20198948a5650a36: a right
    effusion box, "left lower lung zone? no"). cxr14-00013911_000: one Nodule box, right middle zone; only places
    with a part on the right are free ("both": false on its right half alone)."""
    rec = cxr["cxr14-00013911_000"]
    free = truth.position_adversaries(rec, "nodule", positions_for("chest", "x-ray"))
    assert free and all(p.startswith(("right ", "both ")) for p in free)
    assert not any(p.startswith("left") for p in free)
    assert truth.position_adversaries(cxr["cxr14-00022369_013"], "effusion", positions_for("chest", "x-ray")) == ()


def test_nlp_absent_label_is_not_asked_where_the_image_shows_a_basal_opacity(cxr) -> None:
    """cxr14-00026911_000: effusion labelled, left base opacified; the report-mined 'no atelectasis' was asked as
    "atelectasis? no" (qid 5aa5729fb428a538). An effusion and the collapse it causes are one basal opacity."""
    rec = cxr["cxr14-00026911_000"]
    assert "atelectasis" in rec.absent_conditions
    assert "atelectasis" not in truth.condition_adversaries(rec, conditions_for("chest", "x-ray"))


def test_no_disease_newer_than_the_source(cxr, vqa) -> None:
    chest = cxr["cxr14-00000147_001"]  # a 2017 radiograph
    vocab = conditions_for("chest", "x-ray")
    assert "covid-19 pneumonia" in vocab and "covid-19 pneumonia" not in truth.condition_adversaries(chest, vocab)
    recent = ImageRecord("x", "COVID-19 IDC", "ct", "chest", False, [], [])
    assert "covid-19 pneumonia" in truth.condition_adversaries(recent, conditions_for("chest", "ct"))


def test_both_hemispheres_overlaps_the_cerebellum() -> None:
    """ROCO_05654, bilateral cerebellar hemorrhages, was asked "Are the hemorrhages located in both hemispheres? no"
    (the by-eye check: the cerebellum has hemispheres too)."""
    assert truth.positions_overlap("brain", "cerebellum", "both hemispheres")
    assert not truth.positions_overlap("brain", "cerebellum", "left frontal lobe")


def test_a_pleural_box_stands_for_its_whole_side(cxr) -> None:
    """cxr14-00017188_002: the Effusion box lies on the right hemidiaphragm but is zoned "middle", and the set asked
    "Is there a right basal pleural effusion? no" (false in the by-eye check): fluid and air move within the pleural
    space, so a pleural box leaves no place on its side free, and one box per label none on the other."""
    rec = cxr["cxr14-00017188_002"]
    assert truth.position_adversaries(rec, "effusion", positions_for("chest", "x-ray")) == ()
    nodule = cxr["cxr14-00013911_000"]  # a nodule's box still frees the rest of its side
    assert truth.position_adversaries(nodule, "nodule", positions_for("chest", "x-ray"))


def test_the_deep_white_matter_of_a_lobe_is_periventricular() -> None:
    """ROCO_64409, "a right sided deep parietal infarct", was asked "right periventricular white matter? no"."""
    assert truth.positions_overlap("brain", "right parietal lobe", "right periventricular white matter")
    assert not truth.positions_overlap("brain", "right parietal lobe", "left periventricular white matter")
