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
from probmed.core.settings import Setting, get_setting

DEFAULTS: dict[str, Any] = {
    "prompt_version": "v1",
    "system_prompt": None,
    "vanilla": "{question} Answer with a single word: yes or no.",
    "describe": "Describe the medical image: its modality, the body part, and any abnormal findings with their location.",
    "with_description": "Description of the image: {description}\n{question} Answer with a single word: yes or no.",
    "describe_max_new_tokens": 64,
    "describer": "tiny",
}


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
    def from_params(cls, settings: Mapping[str, Any] | None) -> "PromptSet":
        merged = {**DEFAULTS, **{k: v for k, v in dict(settings or {}).items() if k in DEFAULTS}}
        for key in ("vanilla", "with_description"):
            if "{question}" not in merged[key]:
                raise ConfigError(f"settings.{key}: template must contain {{question}}")
        if "{description}" not in merged["with_description"]:
            raise ConfigError("settings.with_description: template must contain {description}")
        return cls(
            version=str(merged["prompt_version"]),
            system_prompt=merged["system_prompt"] or None,
            vanilla=merged["vanilla"],
            describe=merged["describe"],
            with_description=merged["with_description"],
            describe_max_new_tokens=int(merged["describe_max_new_tokens"]),
            describer=str(merged["describer"]),
        )

    def question_prompt(self, setting: Setting | str, question: str, description: str | None = None) -> str:
        """The user text for one question in `setting` (a name is looked up in core.settings)."""
        spec = setting if isinstance(setting, Setting) else get_setting(setting)
        if spec.description_by is None:
            return self.vanilla.format(question=question)
        if description is None:
            raise ValueError(f"setting {spec.name!r} needs a description")
        return self.with_description.format(question=question, description=description.strip())

