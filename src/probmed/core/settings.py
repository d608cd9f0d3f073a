"""The prompting settings a model is evaluated in: one table, read by every stage.

A setting decides what goes into the prompt besides the question, and which
image the model sees. The run loop asks for a description when a setting needs
one and substitutes the image when a setting replaces it (probmed.inference.ablation);
`probmed plan` checks run names and the `described_runs` group against it; the
report and MLflow treat every setting but `vanilla` as an ablation of it (child
runs, paired differences), in this table's order.

Two kinds of ablation:
- prompt ablations (`cot`, `described`): the real image, a description in the prompt;
- image ablations (`blank`, `shuffled`): the vanilla prompt with the real image
  replaced. Their drop from `vanilla` is the model's visual reliance
  (probmed.scoring.compare); a model whose drop is indistinguishable from 0
  answers without looking.

Adding a setting: one entry here, its prompt template under `settings:` in
params.yaml (prompting.PromptSet) and its branch in PromptSet.question_prompt
when it changes the prompt, or an image kind in probmed.inference.ablation when
it changes the image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from probmed.core.errors import ConfigError

Describer = Literal["self", "describer"]
ImageKind = Literal["real", "blank", "shuffled"]


@dataclass(frozen=True)
class Setting:
    """One setting: its name, who describes the image first (None: nobody), which image the
    model sees (`real`, or a control that replaces it) and what it means."""

    name: str
    description_by: Describer | None
    summary: str
    image: ImageKind = "real"

    @property
    def is_ablation(self) -> bool:
        """Compared against the base setting (child MLflow runs, paired-difference tables and figures)."""
        return self.description_by is not None or self.image != "real"

    @property
    def is_image_control(self) -> bool:
        """The real image is replaced: the drop from the base setting is visual reliance."""
        return self.image != "real"


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("vanilla", None, "the question and a one-word answer instruction"),
        Setting("cot", "self", "the model describes the image, then answers with its own description in the prompt"),
        Setting("described", "describer", "the prompt carries a description by settings.describer (paper: GPT-4o)"),
        Setting("blank", None, "the vanilla prompt with a uniform image of the original size (its mean grey)",
                image="blank"),
        Setting("shuffled", None, "the vanilla prompt with the image of another record of a different image type "
                "(a seeded permutation)", image="shuffled"),
    )
}
BASE_SETTING = "vanilla"
SETTING_NAMES: tuple[str, ...] = tuple(SETTINGS)
ABLATIONS: tuple[str, ...] = tuple(name for name, s in SETTINGS.items() if s.is_ablation)
PROMPT_ABLATIONS: tuple[str, ...] = tuple(name for name in ABLATIONS if not SETTINGS[name].is_image_control)
IMAGE_CONTROLS: tuple[str, ...] = tuple(name for name in ABLATIONS if SETTINGS[name].is_image_control)


def get_setting(name: str, key: str = "setting") -> Setting:
    """The setting called `name`, or a ConfigError naming the params `key` that holds it."""
    if name not in SETTINGS:
        raise ConfigError(f"params: {key} = {name!r}, expected one of {list(SETTING_NAMES)}")
    return SETTINGS[name]
