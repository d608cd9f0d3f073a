"""A checkpoint that ships its own modelling code runs only with trust_remote_code: true, and its code
is part of what the answer-store key names."""

from __future__ import annotations

import json
import shutil

import pytest

from probmed.core.errors import BackendError
from probmed.inference.models.base import Item
from probmed.inference.models.registry import build_backend
from probmed.inference.prompting import PromptSet

CUSTOM_CODE = '''
from transformers import LlavaConfig, LlavaForConditionalGeneration


class CustomLlavaConfig(LlavaConfig):
    model_type = "custom_llava"


class CustomLlavaForConditionalGeneration(LlavaForConditionalGeneration):
    config_class = CustomLlavaConfig
'''


@pytest.fixture(scope="module")
def custom_dir(tmp_path_factory, tiny_dir):
    """The tiny LLaVA re-labelled as an architecture transformers does not know, defined by a .py file."""
    out = tmp_path_factory.mktemp("remote") / "custom"
    shutil.copytree(tiny_dir, out)
    (out / "custom_llava.py").write_text(CUSTOM_CODE)
    config = json.loads((out / "config.json").read_text())
    config.update(model_type="custom_llava", architectures=["CustomLlavaForConditionalGeneration"],
                  auto_map={"AutoConfig": "custom_llava.CustomLlavaConfig",
                            "AutoModelForImageTextToText": "custom_llava.CustomLlavaForConditionalGeneration"})
    (out / "config.json").write_text(json.dumps(config))
    return out


def entry(path, **extra) -> dict:
    return {"m": {"backend": "hf", "model_id": str(path), "dtype": "float32", "mode": "logits", **extra}}


def items(shared_data, questions):
    prompts = PromptSet.from_params({})
    return [Item(qid=r.qid, image_id=r.image_id, image_path=shared_data / r.image_path,
                 prompt=prompts.question_prompt("vanilla", r.question), question=r.question)
            for r in questions.head(2).itertuples()]


def test_custom_code_is_refused_without_the_opt_in(custom_dir, shared_data, questions):
    backend = build_backend(entry(custom_dir), "m")
    with pytest.raises(BackendError, match=r"trust_remote_code=true and a pinned revision"):
        backend.answer(items(shared_data, questions))


def test_custom_code_runs_with_the_opt_in_and_its_code_is_in_the_key(custom_dir, tmp_path, shared_data, questions):
    trusted = build_backend(entry(custom_dir, trust_remote_code=True), "m")
    answers = trusted.answer(items(shared_data, questions))
    assert type(trusted.load()[0]).__name__ == "CustomLlavaForConditionalGeneration"
    assert all(0.0 <= a.p_yes <= 1.0 for a in answers)
    fp = trusted.fingerprint()
    assert fp["trust_remote_code"] is True
    edited = tmp_path / "edited"
    shutil.copytree(custom_dir, edited)
    (edited / "custom_llava.py").write_text(CUSTOM_CODE + "\n# changed\n")
    assert build_backend(entry(edited, trust_remote_code=True), "m").fingerprint()["weights"] != fp["weights"]


def test_trust_remote_code_must_be_a_boolean(custom_dir):
    from probmed.core.errors import ConfigError

    with pytest.raises(ConfigError, match="trust_remote_code"):
        build_backend(entry(custom_dir, trust_remote_code="yes"), "m")
