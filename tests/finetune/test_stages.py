"""The training stages table: one row per stage, what differs between them, looked up by name."""

from __future__ import annotations

import pytest

from probmed.core.errors import ConfigError
from probmed.core.params_schema import FinetuneProfile
from probmed.finetune.stages import BASE_STAGE, DOMAIN_STAGE, STAGE_SPECS, STAGES, stage_spec


def test_one_row_per_stage_with_its_own_output_and_params_section() -> None:
    assert STAGES == ("pretrain", "adapt")
    assert len({spec.output for spec in STAGE_SPECS.values()}) == len(STAGES)  # no two stages publish to one place
    assert all(spec.name in FinetuneProfile.__dataclass_fields__ for spec in STAGE_SPECS.values())
    assert (BASE_STAGE.name, BASE_STAGE.mode, BASE_STAGE.weights_dir) == ("pretrain", "full", "model")
    assert (DOMAIN_STAGE.name, DOMAIN_STAGE.output, DOMAIN_STAGE.weights_dir) == ("adapt", "adapter", "")
    assert [s.name for s in STAGE_SPECS.values() if s.owns_split] == [BASE_STAGE.name]


def test_an_unknown_stage_is_a_config_error() -> None:
    assert stage_spec("adapt") is DOMAIN_STAGE
    with pytest.raises(ConfigError, match="fine-tuning stage 'finish' not in"):
        stage_spec("finish")
