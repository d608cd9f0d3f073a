"""The prompting settings a model is evaluated in: one table, read by every stage.

A setting decides what goes into the prompt besides the question. The run loop
asks for a description when a setting needs one, `probmed plan` checks run
names and the `described_runs` group against it, and the report and MLflow
treat every setting with a description as an ablation of `vanilla` (child runs,
ablation deltas), in this table's order.

Adding a setting: one entry here, its prompt template under `settings:` in
params.yaml (prompting.PromptSet), and its branch in PromptSet.question_prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from probmed.core.errors import ConfigError

Describer = Literal["self", "describer"]


@dataclass(frozen=True)
class Setting:
    """One setting: its name, who describes the image first (None: nobody), and what it means."""

    name: str
    description_by: Describer | None
    summary: str

    @property
    def is_ablation(self) -> bool:
        """Compared against the base setting (child MLflow runs, ablation-delta figures)."""
        return self.description_by is not None


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("vanilla", None, "the question and a one-word answer instruction"),
        Setting("cot", "self", "the model describes the image, then answers with its own description in the prompt"),
        Setting("described", "describer", "the prompt carries a description by settings.describer (paper: GPT-4o)"),
    )
}
BASE_SETTING = "vanilla"
SETTING_NAMES: tuple[str, ...] = tuple(SETTINGS)
ABLATIONS: tuple[str, ...] = tuple(name for name, s in SETTINGS.items() if s.is_ablation)


def get_setting(name: str, key: str = "setting") -> Setting:
    """The setting called `name`, or a ConfigError naming the params `key` that holds it."""
    if name not in SETTINGS:
        raise ConfigError(f"params: {key} = {name!r}, expected one of {list(SETTING_NAMES)}")
    return SETTINGS[name]
