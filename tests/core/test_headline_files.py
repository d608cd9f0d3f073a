"""Headline metrics files hold numbers only, rounded, so `dvc metrics` and `dvc exp show` can compare them."""

from __future__ import annotations

import json
import math

import pytest

from probmed.core.headline import DIGITS, headline_values, write_headline


def test_numbers_are_rounded_and_undefined_numbers_are_null(tmp_path):
    written = write_headline({"probmed": {"tiny/vanilla": {"condition": 12.34567, "position": math.nan,
                                                           "organ": None, "modality": 50}}},
                             tmp_path / "metrics" / "evaluation.json")
    assert written == {"probmed": {"tiny/vanilla": {"condition": round(12.34567, DIGITS), "position": None,
                                                    "organ": None, "modality": 50.0}}}
    assert json.loads((tmp_path / "metrics" / "evaluation.json").read_text()) == written


@pytest.mark.parametrize("bad", ["0c5f...", True, [1, 2]])
def test_anything_but_a_number_is_refused_naming_the_leaf(bad):
    with pytest.raises(ValueError, match=r"headline\.finetune\.run_id = .*must be a number or null"):
        headline_values({"finetune": {"run_id": bad}})
