"""Prompts for the settings of core.settings: vanilla, chain-of-thought, external description.

- vanilla: the question plus a one-word answer instruction;
- cot: the model first describes the image itself, then answers with its own
  description in the prompt (paper section 4.3);
- described: a description from another (describer) model is placed in the
  prompt (the paper used GPT-4o; the offline default is the local model).
Templates live in params.yaml (`settings:`), versioned by `settings.prompt_version`,
which is part of every answer-store key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from probmed.core.errors import ConfigError
from probmed.core.params_schema import Settings, build_section, check_params
from probmed.core.settings import Setting, get_setting


@dataclass(frozen=True)
class PromptSet:
    """Resolved templates for one run."""

    version: str
    system_prompt: str | None
    vanilla: str
    describe: str
    with_description: str
    describe_max_new_tokens: int
    describer: str

    @classmethod
    def from_settings(cls, settings: Settings) -> "PromptSet":
        """The templates of the ``settings:`` section, each checked for the placeholders it must hold."""
        for key in ("vanilla", "with_description"):
            if "{question}" not in getattr(settings, key):
                raise ConfigError(f"settings.{key}: template must contain {{question}}")
        if "{description}" not in settings.with_description:
            raise ConfigError("settings.with_description: template must contain {description}")
        return cls(
            version=str(settings.prompt_version),
            system_prompt=settings.system_prompt or None,
            vanilla=settings.vanilla,
            describe=settings.describe,
            with_description=settings.with_description,
            describe_max_new_tokens=int(settings.describe_max_new_tokens),
            describer=str(settings.describer),
        )

    @classmethod
    def from_params(cls, settings: Mapping[str, Any] | None) -> "PromptSet":
        """From a plain (partial) ``settings:`` mapping: checked, the keys it leaves out at their defaults."""
        mapping = dict(settings or {})
        check_params(mapping, Settings)
        return cls.from_settings(build_section(mapping, Settings, "settings"))

    def question_prompt(self, setting: Setting | str, question: str, description: str | None = None) -> str:
        """The user text for one question in `setting` (a name is looked up in core.settings)."""
        spec = setting if isinstance(setting, Setting) else get_setting(setting)
        if spec.description_by is None:
            return self.vanilla.format(question=question)
        if description is None:
            raise ValueError(f"setting {spec.name!r} needs a description")
        return self.with_description.format(question=question, description=description.strip())

