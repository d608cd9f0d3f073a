"""Position rules of the extended profile (issue 20): each rule on sentences written for it, not on captions."""

from __future__ import annotations

import pytest

from probmed.benchmark.curation.extract_rules import find_conditions
from probmed.benchmark.curation.profiles import EXTENDED, PAPER
from probmed.benchmark.curation.tables import region_overlaps
from probmed.benchmark.curation.vocabularies import POSITIONS_BY_ORGAN
from probmed.benchmark.truth import positions_overlap


def placed(text: str, organ: str, profile=EXTENDED) -> set[tuple[str, str | None]]:
    found, _ = find_conditions(text, organ, profile)
    return {(f["condition"], f["position"]) for f in found}


def test_a_part_of_a_structure_places_the_finding_in_the_structure() -> None:
    """"the posterior horn of the", "inferior third", "lateral wall of the": the finding is in the structure, and a
    side before the part is the structure's side."""
    assert placed("MRI of the knee: a tear of the posterior horn of the lateral meniscus.", "knee") \
        == {("tear", "lateral meniscus")}
    assert placed("Radiograph showing a fracture of the inferior third of the patella.", "knee") \
        == {("fracture", "patella")}
    assert placed("CT showing a polyp arising from the left lateral wall of the nose.", "head and neck") \
        == {("polyp", "left nasal cavity")}


def test_a_restated_finding_in_parentheses_does_not_cut_the_finding_from_its_place() -> None:
    assert placed("MRI of the left knee shows a tear (a horizontal tear) of the medial meniscus.", "knee") \
        == {("tear", "left medial meniscus")}


def test_a_displaced_fracture_keeps_its_place_but_a_displaced_structure_is_none() -> None:
    assert placed("Radiograph showing a minimally displaced fracture of the patella.", "knee") == {("fracture", "patella")}
    assert placed("CT showing a large cyst displacing the bladder.", "pelvis") == {("cyst", None)}


def test_the_caption_side_goes_only_to_the_structure_it_is_written_with() -> None:
    """"tumour at the mandible and the right nasal cavity": the right belongs to the nasal cavity, not the mandible;
    the side of the figure's subject still reaches the structures inside it."""
    assert placed("CT showing a tumor at the mandibular region and the right lateral wall of the nose.",
                  "head and neck") == {("tumor", "mandible"), ("tumor", "right nasal cavity")}
    assert placed("MRI of the right knee: tear of the medial meniscus.", "knee") == {("tear", "right medial meniscus")}


def test_a_side_before_the_finding_sides_the_structure_after_it() -> None:
    assert placed("CT shows bilateral varices in the broad ligament.", "pelvis") == {("varices", "bilateral broad ligaments")}
    assert placed("Ultrasound shows a left-sided cyst in the ovary.", "pelvis") == {("cyst", "left ovary")}


def test_a_finding_of_another_finding_is_where_that_one_is() -> None:
    assert placed("MRI shows thrombosis of the malformation in the mandible.", "head and neck") \
        == {("thrombosis", "mandible"), ("malformation", "mandible")}


def test_a_heart_caption_apex_is_not_the_lung_apex() -> None:
    assert placed("Cardiac MRI showing an apical aneurysm.", "chest") == {("aneurysm", None)}
    assert placed("CT of the chest showing an apical nodule.", "chest") == {("nodule", "lung apex")}


def test_ventricle_adjectives_and_the_aqueduct_are_brain_places() -> None:
    assert placed("MRI showing a fourth ventricular tumor.", "brain", PAPER) == {("tumor", "fourth ventricle")}
    assert ("obstruction", "cerebral aqueduct") in placed("Hydrocephalus with obstruction at the aqueduct of Sylvius.",
                                                          "brain")
    assert placed("CT shows a cyst of the vestibular aqueduct.", "brain") == {("cyst", None)}


def test_a_finding_located_in_a_place_is_there_past_its_description() -> None:
    assert placed("MRI revealing a nodule with low signal located in the left peripheral zone.", "pelvis") \
        == {("nodule", "left peripheral zone")}


def test_a_structure_shown_before_the_verb_is_not_the_finding_place() -> None:
    """"MRI of the prostate revealing a nodule": the subject of the figure, named before a verb, does not place it."""
    assert placed("Imaging of the prostate revealing a small nodule.", "pelvis") == {("nodule", None)}


def test_a_place_beside_a_sided_structure_gives_its_side_only() -> None:
    assert placed("There is a mass inferior to the left submandibular gland.", "head and neck") == {("mass", "left")}
    assert placed("The trachea is deviated to the right, with a mass.", "head and neck") == {("mass", None)}
    assert placed("Lesion in the right level III and posterior to the carotid sheath.", "head and neck") \
        == {("lesion", "right level iii")}


def test_a_described_structure_before_its_verb_is_its_place() -> None:
    assert placed("The distal ureter is dilated within the bladder.", "pelvis") == {("dilatation", "distal ureter")}
    assert placed("Ultrasound: the left distal ureter is markedly dilated.", "pelvis") \
        == {("dilatation", "left distal ureter")}


def test_a_ureteral_calculus_is_a_kidney_stone_in_the_ureter() -> None:
    assert placed("CT showing a calculus in the left ureter.", "abdomen") == {("kidney stone", "left ureter")}
    assert not positions_overlap("abdomen", "left ureter", "right kidney")
    assert positions_overlap("abdomen", "left ureter", "left kidney") and positions_overlap("abdomen", "ureter", "bladder")


def test_a_joint_effusion_is_in_the_joint_the_caption_names() -> None:
    assert placed("MRI of the right hip showing joint effusion.", "pelvis") == {("effusion", "right hip joint")}
    assert placed("Widening of the left sacroiliac joint with fluid in the joint.", "pelvis") \
        >= {("effusion", "left sacroiliac joint")}
    assert placed("Radiograph showing dislocation of the left hip.", "pelvis") == {("dislocation", "left hip joint")}
    assert placed("Radiograph showing a fracture of the left hip.", "pelvis") == {("fracture", "left hip")}


def test_an_unplaced_finding_whose_name_holds_its_place_takes_the_caption_side() -> None:
    assert placed("Left ankle radiograph demonstrating talar tilt.", "foot") == {("talar tilt", "left")}
    assert placed("Ankle radiograph demonstrating talar tilt.", "foot") == {("talar tilt", None)}
    assert placed("Right ankle radiograph, left foot film: talar tilt.", "foot") == {("talar tilt", None)}  # two sides


def test_an_implied_place_written_out_with_a_side_is_kept() -> None:
    assert placed("Ultrasound shows an effusion in the left pleural space.", "chest") == {("effusion", "left pleural space")}
    assert placed("CT: right pleural effusion.", "chest") == {("effusion", "right")}


@pytest.mark.parametrize("organ", ["brain", "abdomen", "pelvis"])
def test_new_places_are_in_the_vocabulary_and_overlap_what_holds_them(organ: str) -> None:
    """A new position is askable (in the organ's vocabulary) and overlaps the structures it shares tissue with, so a
    hallucinated "no" never names the place the finding is in."""
    new = {"brain": ("cerebral aqueduct", ("fourth ventricle", "third ventricle", "brainstem", "midline")),
           "abdomen": ("left ureter", ("left kidney", "bladder", "retroperitoneum")),
           "pelvis": ("right distal ureter", ("bladder",))}[organ]
    assert new[0] in POSITIONS_BY_ORGAN[organ]
    for other in new[1]:
        assert positions_overlap(organ, new[0], other), (new[0], other)
    assert region_overlaps()[organ]


def test_a_side_only_finding_takes_a_structure_of_its_own_phrase_only() -> None:
    """"bilateral proptosis with ... enlarged lacrimal glands": the glands are the enlargement's, not the proptosis'."""
    assert placed("MRI shows bilateral proptosis with enlarged lacrimal glands.", "head and neck") \
        == {("proptosis", "bilateral"), ("enlargement", "bilateral lacrimal glands")}
    assert placed("CT showing a lesion on the left angle of the mandible.", "head and neck") == {("lesion", "left mandible")}


def test_a_projection_names_the_film_not_the_side_of_the_finding() -> None:
    """ROCO_41077 ("Left lateral radiograph reveals ... pleural fluid") was asked "left pleural effusion? yes" and
    "right pleural effusion? no" of a lateral film, where no side can be seen: "left lateral" is the projection."""
    from probmed.benchmark.curation.extract_rules import extract

    for text in ("Left lateral radiograph reveals a small pleural effusion.",
                 "Right lateral decubitus view shows a layering pleural effusion.",
                 "Left anterior oblique film showing a pleural effusion."):
        assert extract("p", text, EXTENDED).findings == [{"condition": "effusion", "position": None}], text
    assert extract("p", "Chest X-ray shows a left pleural effusion.", EXTENDED).findings \
        == [{"condition": "effusion", "position": "left"}]
    assert placed("CT showing hemorrhage in the right lateral ventricle.", "brain") \
        == {("hemorrhage", "right lateral ventricle")}



def test_two_lobes_of_one_side_written_with_one_noun_are_both_places() -> None:
    """"right middle and lower lobe": the side and the noun are written once, the finding is in both lobes."""
    assert placed("Radiograph showing opacification in the right middle and lower lobe.", "chest") \
        == {("opacity", "right middle lobe"), ("opacity", "right lower lobe")}
    assert placed("CT shows consolidation in the left upper and lower lobes.", "chest") \
        == {("consolidation", "left upper lobe"), ("consolidation", "left lower lobe")}
    assert placed("Radiograph showing a nodule in the left lower lung field.", "chest") \
        == {("nodule", "left lower lung zone")}
    # one finding over the upper and lower zones likely covers the middle one too: the lung, not two zones
    assert placed("Radiograph showing a mass in the left upper and lower lung fields.", "chest") == {("mass", "left lung")}


def test_outside_a_structure_or_a_direction_toward_it_is_not_its_site() -> None:
    assert placed("CT shows a lesion extending toward the left orbit.", "head and neck") == {("lesion", None)}
    assert placed("Ultrasound shows a cyst outside the liver.", "abdomen") == {("cyst", None)}
    assert placed("CT shows a cyst overlying the anterior portion of the bladder.", "pelvis") == {("cyst", None)}
    assert placed("Ultrasound shows a cyst in the porta hepatis.", "abdomen") == {("cyst", "porta hepatis")}


def test_a_vein_named_after_an_organ_is_a_place_of_its_own_not_the_organ() -> None:
    """"thrombosis of the right hepatic vein" is not in the liver's parenchyma nor an ovarian vein in the ovary; the
    vein overlaps its organ, so neither is asked as a "no"."""
    assert placed("Ultrasound showing thrombosis of the right hepatic vein.", "abdomen") \
        == {("thrombosis", "right hepatic vein")}
    assert placed("CT showing a dilated left ovarian vein.", "pelvis") == {("dilatation", "left ovarian vein")}
    assert placed("CT showing right ovarian vein thrombosis.", "abdomen") == {("thrombosis", "right ovarian vein")}
    assert positions_overlap("abdomen", "right ovarian vein", "right adnexa")
    assert placed("CT showing thrombosis of the renal vein.", "abdomen") == {("thrombosis", None)}
    assert positions_overlap("abdomen", "right hepatic vein", "liver")
    assert positions_overlap("pelvis", "left ovarian vein", "left ovary")
    assert not positions_overlap("pelvis", "left ovarian vein", "right ovary")


@pytest.mark.parametrize(("text", "organ", "expected"), [
    ("CT shows a cystic lesion in the left submandibular space.", "head and neck", ("lesion", "left submandibular space")),
    ("CT showing a mass in the right pterygopalatine fossa.", "head and neck", ("mass", "right pterygopalatine fossa")),
    ("CT showing bilateral supraclavicular lymphadenopathy.", "head and neck",
     ("lymphadenopathy", "bilateral supraclavicular fossae")),
    ("MRI shows edema of the pubic symphysis.", "pelvis", ("edema", "pubic symphysis")),
    ("Radiograph shows a fracture of the left proximal femur.", "pelvis", ("fracture", "left proximal femur")),
    ("Radiograph showing a fracture of the upper end of the humerus.", "shoulder", ("fracture", "proximal humerus")),
    ("Ultrasound shows a gastric ulcer.", "abdomen", ("ulcer", "stomach")),
    ("CT shows a calcium deposit in the prevertebral soft tissue.", "head and neck",
     ("calcification", "prevertebral soft tissue")),
])
def test_structures_of_each_region_complete_the_vocabulary(text: str, organ: str, expected: tuple[str, str]) -> None:
    """Structures the captions name beside the ones listed (a space around a gland, a fossa, a joint of two bones,
    the end of a long bone): each a place of its own, askable and overlapping what it is part of or holds."""
    assert placed(text, organ) == {expected}
    assert any(p == expected[1] or p.endswith(" " + expected[1]) for p in POSITIONS_BY_ORGAN[organ])


@pytest.mark.parametrize(("organ", "place", "holder"), [
    ("head and neck", "left submandibular space", "left submandibular gland"),
    ("head and neck", "right pterygopalatine fossa", "right maxillary sinus"),
    ("pelvis", "pubic symphysis", "left pubic bone"),
    ("pelvis", "left proximal femur", "left femoral neck"),
    ("abdomen", "porta hepatis", "liver"),
])
def test_new_structures_overlap_what_holds_them(organ: str, place: str, holder: str) -> None:
    assert positions_overlap(organ, place, holder)


def test_parts_of_a_structure_joined_or_compound_still_place_the_finding_in_it() -> None:
    """"body and ramus of the mandible", "the dorsolateral wall of the left maxillary sinus": parts, not places."""
    assert placed("CT showing a lytic lesion involving the body and ramus of the mandible.", "head and neck") \
        == {("lesion", "mandible")}
    assert placed("CT showing a tumor attached to the posterolateral wall of the right maxillary sinus.",
                  "head and neck") == {("tumor", "right maxillary sinus")}
    # "and" joins two places here, not two parts of one: the walls are nobody's
    assert placed("CT showing thickening of the walls and the bladder.", "pelvis") == {("thickening", None)}


def test_a_place_that_opens_the_next_finding_after_a_comma_is_that_finding_s() -> None:
    """"calcification at its rim, probably ovarian cystadenoma": "ovarian" names the cystadenoma's place."""
    assert placed("CT: a mass with calcification at its rim, probably a right ovarian cystadenoma.", "pelvis") \
        == {("mass", None), ("calcification", None), ("tumor", "right ovary")}
    assert placed("CT showing calcification in the right ovary, with a cyst.", "pelvis") \
        >= {("calcification", "right ovary")}


def test_the_figure_s_subject_holds_an_unplaced_finding_of_its_clause() -> None:
    """"Mandibular occlusal radiograph shows a lesion", "Ultrasound of the right kidney shows a cyst": the subject is
    where the finding is shown; a whole field of view without a side, a place of another organ in the clause, or a
    condition whose name holds its own place leave it unplaced."""
    assert placed("Mandibular occlusal radiograph shows a lesion.", "head and neck") == {("lesion", "mandible")}
    assert placed("Frontal left knee radiograph suggestive of malignant transformation.", "knee") \
        == {("tumor", "left knee")}
    assert placed("Ultrasound of the right kidney shows a cyst.", "abdomen") == {("cyst", "right kidney")}
    assert placed("Radiograph of the left hand shows a fracture.", "hand") == {("fracture", "left hand")}
    assert placed("CT of the neck showing a lesion.", "head and neck") == {("lesion", None)}
    assert placed("Paranasal sinus CT shows an intranasal mass.", "head and neck") == {("mass", "nasal cavity")}
    assert placed("CT of the thyroid showing a mass and lung metastases.", "head and neck") \
        == {("mass", None), ("metastasis", None)}
    assert placed("Ultrasound of the right kidney shows ascites.", "abdomen") == {("ascites", None)}
    assert ("cyst", "right kidney") not in placed("Ultrasound of the right kidney shows a cyst.", "abdomen", PAPER)


def test_an_explained_finding_takes_its_diagnosis_place_but_joined_findings_do_not_share_one() -> None:
    """"bilateral airspace consolidation and cardiomegaly": the side is the consolidation's, not the heart's."""
    assert placed("Radiograph showing bilateral consolidation and cardiomegaly.", "chest") \
        == {("consolidation", "bilateral"), ("cardiomegaly", None)}
    assert placed("MRI showing a lesion (arrow) compatible with a lipoma under the deltoid.", "shoulder") \
        == {("lesion", "deltoid"), ("tumor", "deltoid")}
    assert placed("MRI showing a lesion, with a lipoma under the deltoid.", "shoulder") \
        == {("lesion", None), ("tumor", "deltoid")}
