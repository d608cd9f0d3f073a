"""The training stages as a table: one row per stage (pretrain, adapt), with what differs between them.

Like core/settings.py and core/categories.py: the training code (probmed.finetune.train)
and the transfer study ask a stage's row, never its name. Kept free of heavy imports,
so the command line can offer the stage names without loading the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probmed.core.errors import ConfigError


@dataclass(frozen=True)
class StageSpec:
    """What differs between the training stages; everything else is one code path.

    Like core/settings.py and core/categories.py: a stage is a row of this table, and
    the code asks the row, never the stage's name.
    """

    name: str  # finetune.<name> holds its params, <out_dir>/<name>.json its summary
    mode: str  # "full": every weight trains | "lora": an adapter on a frozen base
    output: str  # the directory under finetune.out_dir the stage publishes
    artifact: str  # the MLflow artifact folder of the published weights
    builds_base: bool  # starts from finetune.base_model (or only points at it: finetune.<name>.enabled false),
    #                    may add description examples (finetune.<name>.describe); else starts from the base stage
    owns_split: bool  # writes splits.parquet; a stage that does not checks it is training on the same split
    domain_only: bool  # trains on finetune.domain only; else on every (source, modality, organ) group

    @property
    def weights_dir(self) -> str:
        """Where in its output the stage saves its weights: a full model with its processor under model/."""
        return "model" if self.mode == "full" else ""


STAGE_SPECS: dict[str, StageSpec] = {spec.name: spec for spec in (
    StageSpec("pretrain", "full", "pretrain", "model", builds_base=True, owns_split=True, domain_only=False),
    StageSpec("adapt", "lora", "adapter", "adapter", builds_base=False, owns_split=False, domain_only=True),
)}
STAGES: tuple[str, ...] = tuple(STAGE_SPECS)
BASE_STAGE = next(spec for spec in STAGE_SPECS.values() if spec.builds_base)  # what later stages start from
DOMAIN_STAGE = next(spec for spec in STAGE_SPECS.values() if spec.domain_only)  # what the transfer study probes


def stage_spec(stage: str) -> StageSpec:
    """The table row of a stage name (ConfigError for any other name)."""
    if stage not in STAGE_SPECS:
        raise ConfigError(f"fine-tuning stage {stage!r} not in {STAGES}")
    return STAGE_SPECS[stage]


def run_file(out_dir: str | Path, stage: str) -> Path:
    """``<out_dir>/<stage>.run.json``: the stage's MLflow run id and seconds, kept out of its DVC-tracked summary."""
    return Path(out_dir) / f"{stage}.run.json"
