"""The settings registry is the one list of settings every stage reads."""

from __future__ import annotations

import pytest

from probmed.core.errors import ConfigError
from probmed.core.settings import (
    ABLATIONS,
    BASE_SETTING,
    IMAGE_CONTROLS,
    PROMPT_ABLATIONS,
    SETTING_NAMES,
    SETTINGS,
    get_setting,
)
from probmed.reporting import report, tracking


def test_the_table_in_order():
    assert SETTING_NAMES == ("vanilla", "cot", "described", "blank", "shuffled") and BASE_SETTING == SETTING_NAMES[0]
    assert ABLATIONS == ("cot", "described", "blank", "shuffled")
    assert PROMPT_ABLATIONS == ("cot", "described") and IMAGE_CONTROLS == ("blank", "shuffled")
    assert SETTINGS["blank"].image == "blank" and SETTINGS["vanilla"].image == "real"
    assert SETTINGS["cot"].description_by == "self" and SETTINGS["described"].description_by == "describer"


def test_an_unknown_setting_names_the_key():
    with pytest.raises(ConfigError, match=r"pipeline\.runs\.x\.setting = 'sideways', expected one of"):
        get_setting("sideways", "pipeline.runs.x.setting")


def test_the_report_and_tracking_read_the_table():
    assert list(report.SETTING_ORDER) == list(SETTING_NAMES)
    assert tracking.ABLATIONS is ABLATIONS
