"""What a released row holds and which partition/config it falls in."""

from __future__ import annotations

import pandas as pd

from probmed.core.records import QUESTION_COLUMNS
from probmed.core.vocab import image_type
from probmed.release.table import (
    CONFIGS,
    HIDDEN_COLUMNS,
    PARTITIONS,
    RELEASE_COLUMNS,
    config_partitions,
    modality_and_organ,
    partition_masks,
    text_rows,
)


def test_released_columns_are_the_question_table_minus_the_hidden_ones():
    assert set(HIDDEN_COLUMNS) <= set(QUESTION_COLUMNS)
    kept = [c for c in RELEASE_COLUMNS if c in QUESTION_COLUMNS]
    assert kept == [c for c in QUESTION_COLUMNS if c not in HIDDEN_COLUMNS]
    assert not {"polarity", "qa_type", "strategy"} & set(RELEASE_COLUMNS)  # each says the answer
    assert {"modality", "organ", "image"} <= set(RELEASE_COLUMNS)


def test_modality_and_organ_invert_the_image_type():
    for mod, org in [("x-ray", "chest"), ("ct", "abdomen"), ("mri", "brain"), ("unknown", "brain"), ("ct", "unknown")]:
        assert modality_and_organ(image_type(mod, org)) == (mod, org)


def test_partitions_are_disjoint_and_configs_unite_them(small_set):
    q = small_set["frame"]
    masks = partition_masks(q)
    assert sum(int(m.sum()) for m in masks.values()) == len(q)
    assert set(masks) <= set(PARTITIONS)
    configs = config_partitions(list(masks))
    assert set(configs) == set(CONFIGS)  # the set has non-commercial rows and a non-paper image type
    commercial = sum(int(masks[p].sum()) for p in configs["commercial"])
    assert commercial == int((q["licence"] != "CC BY-NC 4.0").sum())
    rows = text_rows(q)
    assert list(rows.columns) == [c for c in RELEASE_COLUMNS if c != "image"]
    assert (rows["qid"] == q["qid"]).all() and isinstance(rows, pd.DataFrame)


def test_a_config_without_rows_is_left_out():
    only = [p for p in PARTITIONS if p.commercial and p.paper]
    assert set(config_partitions(only)) == {"all", "commercial", "paper"}
    nc_other = [p for p in PARTITIONS if not p.commercial and not p.paper]
    assert set(config_partitions(nc_other)) == {"all"}
