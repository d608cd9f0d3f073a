"""The category specs: one description per category that generation, scoring, tables and the original format share."""

from __future__ import annotations

import pytest

from probmed.core.categories import (
    CATEGORIES,
    CATEGORY_SPECS,
    PAIRED_CATEGORIES,
    PER_IMAGE_CATEGORIES,
    PROCEDURAL_STAGES,
    category,
    prerequisites,
)
from probmed.core.release_format import parse_qa_type


def test_the_five_categories_of_the_paper() -> None:
    assert CATEGORIES == ("modality", "organ", "abnormality", "condition", "position")
    assert PAIRED_CATEGORIES == ("modality", "organ", "condition", "position")
    assert PER_IMAGE_CATEGORIES == ("condition", "position")
    assert PROCEDURAL_STAGES == ("abnormality", "condition", "position")
    assert prerequisites("abnormality") == ("modality", "organ")
    assert prerequisites("position") == ("modality", "organ", "abnormality", "condition")
    assert category("condition").title == "Condition/Finding"


def test_original_qa_type_names_follow_from_the_spec() -> None:
    organ, condition = category("organ"), category("condition")
    assert (organ.gt_qa_type(), organ.hallu_qa_type(), organ.pair_key()) == ("body_part_gt", "body_part_hallu", "body_part")
    assert (condition.gt_qa_type(2), condition.hallu_qa_type(2), condition.pair_key(2)) == (
        "entity_gt_2", "entity_hallu_2", "entity_2")
    with pytest.raises(ValueError, match="organ: pairs are not numbered"):
        organ.gt_qa_type(0)
    with pytest.raises(ValueError, match="condition: pairs are numbered"):
        condition.gt_qa_type()
    with pytest.raises(KeyError, match="unknown question category 'colour'"):
        category("colour")


def test_release_format_reads_every_name_the_specs_write() -> None:
    for spec in CATEGORY_SPECS:
        if spec.paired:
            k = 3 if spec.indexed else None
            assert parse_qa_type(spec.gt_qa_type(k)) == (spec.name, "gt", spec.pair_key(k))
            assert parse_qa_type(spec.hallu_qa_type(k)) == (spec.name, "adversarial", spec.pair_key(k))
        if spec.single_qa_type:
            assert parse_qa_type(spec.single_qa_type) == (spec.name, "single", spec.single_qa_type)
    assert parse_qa_type("vqarad_hallu_4") == (None, "adversarial", "vqarad_4")
    for bad in ("modality_gt_1", "entity_gt", "abnormality_gt", "grounding", "entity_hallu_x"):
        assert parse_qa_type(bad) is None
