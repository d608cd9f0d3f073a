"""Vocabularies: position phrases per organ and the condition names the new sources use."""

from __future__ import annotations

import pytest

from probmed.benchmark.curation.vocabularies import (
    BRAIN_BOX_POSITIONS,
    CONDITION_SYNONYMS,
    CONDITIONS_BY_ORGAN,
    CXR_POSITIONS,
    TEXT_POSITIONS,
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
