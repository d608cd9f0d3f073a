"""Description cache keys and the prompt templates of the three settings."""

from __future__ import annotations

import dataclasses

import pytest

from probmed.core.errors import ConfigError
from probmed.inference.describe import description_key
from probmed.inference.models.registry import build_backend
from probmed.inference.prompting import PromptSet


def test_description_key_depends_on_describer_prompt_length_and_image(tiny_dir):
    models = {"a": {"backend": "hf", "model_id": str(tiny_dir)},
              "b": {"backend": "hf", "model_id": str(tiny_dir), "max_new_tokens": 3}}
    a, b = build_backend(models, "a"), build_backend(models, "b")
    p = PromptSet.from_params({})
    base = description_key(a, p, "img1")
    assert base == description_key(a, p, "img1")
    others = {
        description_key(b, p, "img1"),
        description_key(a, p, "img2"),
        description_key(a, dataclasses.replace(p, describe="Describe."), "img1"),
        description_key(a, dataclasses.replace(p, describe_max_new_tokens=8), "img1"),
        description_key(a, dataclasses.replace(p, version="v2"), "img1"),
    }
    assert base not in others and len(others) == 5


def test_prompts_per_setting():
    p = PromptSet.from_params({"vanilla": "Q: {question}", "with_description": "D: {description} Q: {question}"})
    assert p.question_prompt("vanilla", "Is this a CT scan?") == "Q: Is this a CT scan?"
    assert p.question_prompt("cot", "Is it?", " a chest film ") == "D: a chest film Q: Is it?"
    with pytest.raises(ValueError):
        p.question_prompt("described", "Is it?")
    with pytest.raises(ConfigError, match="setting"):
        p.question_prompt("fancy", "Is it?")
    with pytest.raises(ConfigError, match="question"):
        PromptSet.from_params({"vanilla": "no placeholder"})
