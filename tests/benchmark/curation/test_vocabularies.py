"""Vocabularies: position phrases per organ and the condition names the new sources use."""

from __future__ import annotations

import pytest

from probmed.benchmark.curation.vocabularies import (
    BRAIN_BOX_POSITIONS,
    CONDITION_SYNONYMS,
    CONDITIONS_BY_ORGAN,
    CXR_POSITIONS,
    POSITION_REGIONS,
    TEXT_POSITIONS,
    conditions_for,
    position_phrase,
    positions_for,
)


def test_position_phrase_composes_side_and_region() -> None:
    assert position_phrase("left", "frontal lobe") == "left frontal lobe"
    assert position_phrase("bilateral", "lower lobe") == "bilateral lower lobes"
    assert position_phrase("bilateral", "hilum") == "bilateral hila"
    assert position_phrase("right", None) == "right"
    assert position_phrase("left", "sellar region", ()) == "sellar region"  # sideless region drops the side
    assert position_phrase("left", "middle lobe", ("right",)) == "middle lobe"  # no left middle lobe
    with pytest.raises(ValueError, match="side 'up'"):
        position_phrase("up", "lung")


def test_every_organ_vocabulary_is_unique_and_holds_the_box_positions() -> None:
    for organ, phrases in TEXT_POSITIONS.items():
        assert len(phrases) == len(set(phrases)), organ
        assert "left middle lobe" not in phrases
    assert set(BRAIN_BOX_POSITIONS) <= set(positions_for("brain", "mri"))
    assert positions_for("chest", "x-ray") == CXR_POSITIONS  # radiograph zones from boxes
    assert "right upper lobe" in positions_for("chest", "ct") and "right upper lobe" not in CXR_POSITIONS


def test_new_source_conditions_are_canonical_and_reachable() -> None:
    canonical = set(CONDITION_SYNONYMS.values())
    for organ, names in (("brain", ("glioma", "meningioma", "pituitary tumor")), ("chest", ("covid-19 pneumonia", "ground-glass opacity"))):
        for name in names:
            assert name in CONDITIONS_BY_ORGAN[organ] and name in canonical
    assert CONDITION_SYNONYMS["pituitary adenoma"] == "pituitary tumor"
    assert CONDITION_SYNONYMS["ggos"] == "ground-glass opacity"
    assert CONDITION_SYNONYMS["glioblastoma"] == "glioma"


def test_the_new_organs_vocabularies_are_reachable_and_their_tables_consistent() -> None:
    """Every condition of a new organ is a canonical name the extended rules produce; every position parses
    back to its region (so the truth rules compare like with like); every clinical table row names real values."""
    from probmed.benchmark.curation.profiles import EXTENDED
    from probmed.benchmark.curation.tables import condition_nouns, field_of_view, organ_regions, region_overlaps
    from probmed.benchmark.truth import parse_position
    from probmed.core.vocab import EXTENDED_ORGANS, ORGANS

    new = [o for o in EXTENDED_ORGANS if o not in ("abdomen", "brain", "chest", "spine")]
    produced = set(EXTENDED.synonyms.values())
    nouns = condition_nouns()
    for organ in new:
        for condition in CONDITIONS_BY_ORGAN[organ]:
            assert condition in produced and condition in nouns, (organ, condition)
        regions = {region for _, region, _ in POSITION_REGIONS[organ]}
        for phrase in TEXT_POSITIONS[organ]:
            side, region = parse_position(phrase)
            assert region in regions, (organ, phrase, region)
        for a, b in region_overlaps().get(organ, ()):
            assert a in regions and b in regions, (organ, a, b)
    for (_, organ), in_view in field_of_view().items():
        assert organ in EXTENDED_ORGANS and in_view <= set(EXTENDED_ORGANS), organ
    assert set(organ_regions().values()) <= set(ORGANS)
    assert organ_regions()["hip"] == "pelvis" and organ_regions()["face"] == organ_regions()["neck"] == "head and neck"
    assert "tear" in CONDITIONS_BY_ORGAN["knee"] and "tear" not in conditions_for("knee", "x-ray")  # a radiograph shows no tear
    assert "fracture" not in conditions_for("knee", "ultrasound") and "tear" in conditions_for("knee", "mri")
