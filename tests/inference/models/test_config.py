"""Typed backend configs: unknown keys are errors, answer fields make the answer-store key.

The key of every existing config in params.yaml is pinned here as it was before
the configs were typed, so answers already stored stay valid.
"""

from __future__ import annotations

import shutil
import typing

import pytest

from probmed.cli import main
from probmed.core.config import load_params, to_plain
from probmed.core.errors import ConfigError
from probmed.core.settings import get_setting
from probmed.inference.answer_store import AnswerStore, cache_key
from probmed.inference.models.mock_server import MockChatServer
from probmed.inference.models.registry import BACKENDS, build_backend
from probmed.inference.models.tiny import build_tiny_llava
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet

PROMPTS = PromptSet.from_params({})
# cache_key(fingerprint, "vanilla", "v1", "p", "img", "q") of params.yaml's models before the configs were typed
KEYS_BEFORE = {
    "random": "9e13cafb4af0ecb0c4a58d1a908deab4bd42f266e60b4a0573b536ea019056f9",
    "always-yes": "a14b74ff3f739723ed89d09eae4d841358c1f6076f91fb0b419c905614ae420d",
    "always-no": "31f1e73464af8843bc254040d6d107b978d243fc83bbd2eb2b0be295ad0111c5",
    "blind": "414c0486416af1a480b3a0119471a45a8164f12daa30d20a1d702914deeccc1d",
    "gpt-4o": "5daec8a214b77634697df493c5114f2ccf3a21d3635f5d3705c49cdeb9c04f77",
}
HF_FINGERPRINT_BEFORE = {  # the tiny model's, without the weights hash (which depends on the directory)
    "backend": "hf", "model_id": None, "revision": None, "adapter": None, "dtype": "float32",
    "mode": "generate", "max_new_tokens": 16, "system_prompt": None,
}


@pytest.fixture()
def models(repo_root, tiny_dir, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cfg = load_params(repo_root / "params.yaml", [f"models.tiny.model_id={tiny_dir}", "models.gpt-4o.enabled=true"])
    return to_plain(cfg.models)


def _key(models, name, **context):
    return cache_key(build_backend(models, name, seed=0, **context).fingerprint(), "vanilla", "v1", "p", "img", "q")


def test_existing_configs_keep_their_answer_store_keys(models, tiny_dir):
    for name, key in KEYS_BEFORE.items():
        assert _key(models, name) == key, name
    fp = dict(build_backend(models, "tiny").fingerprint())
    assert len(fp.pop("weights")) == 64
    assert fp == {**HF_FINGERPRINT_BEFORE, "model_id": str(tiny_dir)}


def test_an_unknown_key_is_an_error_naming_it(models, repo_root, tmp_path, capsys):
    models["tiny"]["max_new_tokenz"] = 3
    with pytest.raises(ConfigError, match=r"models\.tiny\.max_new_tokenz is not a parameter of backend 'hf'"):
        build_backend(models, "tiny")
    rc = main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(tmp_path / "plan"),
               "models.llava-med.max_new_tokenz=3"])  # a disabled model is checked too
    assert rc == 2 and "models.llava-med.max_new_tokenz" in capsys.readouterr().err
    assert not (tmp_path / "plan").exists()


def test_a_mistyped_value_is_an_error_naming_it(models):
    models["blind"]["folds"] = "many"
    with pytest.raises(ConfigError, match=r"models\.blind\.folds = 'many', expected int"):
        build_backend(models, "blind")
    models["blind"]["folds"] = 4
    models["tiny"]["model_id"] = None
    with pytest.raises(ConfigError, match=r"models\.tiny\.model_id is required"):
        build_backend(models, "tiny")


@pytest.mark.parametrize("kind", BACKENDS.kinds)
def test_only_answer_fields_change_the_key(kind, tiny_dir, monkeypatch):
    """Every field of every backend: a new value changes the key exactly when the field is an answer field."""
    import dataclasses

    monkeypatch.setenv("PROBMED_TEST_KEY", "sk-test")
    base = {"backend": kind, "model_id": str(tiny_dir), "base_url": "http://127.0.0.1:9/v1",
            "api_key_env": "PROBMED_TEST_KEY"}
    config_class = BACKENDS.load(kind).config_class
    names = {f.name for f in dataclasses.fields(config_class)}
    base = {k: v for k, v in base.items() if k == "backend" or k in names}
    reference = build_backend({"m": base}, "m").fingerprint()
    changed = {dict: {"field": 1}, int: 7, float: 0.25, bool: True, str: "other"}  # dict before str: dict[str, Any]; numbers in range
    hints = typing.get_type_hints(config_class)  # the types without their ranges (PositiveInt -> int)
    for f in dataclasses.fields(config_class):
        if f.name in ("enabled", "model_id", "adapter", "mode", "dtype", "base_url_env", "api_key_env",
                      "prefix_cache"):
            continue  # values that must name something real or one of a few (test_shared_prefix: prefix_cache)
        kind_of = next(t for t in changed if t.__name__ in str(hints[f.name]))
        value = "http://127.0.0.1:10/v1" if f.name == "base_url" else changed[kind_of]  # an endpoint must be a URL
        fp = build_backend({"m": {**base, f.name: value}}, "m").fingerprint()
        assert (fp != reference) == bool(f.metadata["answer"]), (kind, f.name)


@pytest.mark.slow
def test_retraining_the_served_model_or_moving_the_endpoint_changes_every_key(tmp_path, shared_data, questions):
    """tiny-served: a local directory behind an OpenAI-compatible server, keyed by content and endpoint."""
    model_dir = tmp_path / "model"
    build_tiny_llava(model_dir, seed=0)

    def run(base_url: str) -> tuple[set[str], int]:
        cfg = {"backend": "openai", "model_id": str(model_dir), "base_url": base_url, "max_tokens": 4}
        backend = build_backend({"served": cfg}, "served")
        store = tmp_path / "answers"
        result = run_predictions(questions, backend,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, shared_data, store), progress=False)
        backend.close()
        return set(result.predictions["cache_key"]), result.n_asked

    with MockChatServer() as first, MockChatServer() as second:
        keys, asked = run(first.base_url)
        assert asked == len(questions) == len(keys)
        assert run(first.base_url) == (keys, 0)  # nothing changed: every answer comes from the store
        shutil.rmtree(model_dir)
        build_tiny_llava(model_dir, seed=1)  # retrained in place: new weights, same path
        retrained, asked = run(first.base_url)
        assert asked == len(questions) and not retrained & keys
        moved, asked = run(second.base_url)
        assert asked == len(questions) and not moved & (keys | retrained)
    assert len(AnswerStore(tmp_path / "answers" / "served")) == 3 * len(questions)
