"""Every numeric parameter states its range in its type, for params and backend configs alike, and one check
applies it: a value out of range stops every command with exit 2 naming the key and the range.

The probe's values: ``release.version=1.0`` (a YAML float: AttributeError, exit 4), ``score.seed=-3`` (numpy's
ValueError, exit 4), and backend values accepted that made runs fail or hang (``timeout_s=0``,
``max_retries=-1``, ``rpm=-5``, ``backoff_base_s=-1``, ``concurrency=0``).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Union

import pytest

from probmed.cli import main
from probmed.core.params_schema import Check, Params, Section, keys_of
from probmed.inference.models.registry import BACKENDS


def unranged(hint: Any, key: str) -> list[str]:
    """The keys under `hint` whose type is a bare int or float (no Check states its range)."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        base, *checks = typing.get_args(hint)
        return [] if any(isinstance(c, Check) for c in checks) else unranged(base, key)
    if origin in (Union, types.UnionType):
        return [k for option in typing.get_args(hint) for k in unranged(option, key)]
    if origin in (list, dict):
        return unranged(typing.get_args(hint)[-1], f"{key}[]")
    if isinstance(hint, type) and issubclass(hint, Section):
        return [k for name, inner in keys_of(hint).items() for k in unranged(inner, f"{key}.{name}" if key else name)]
    return [key] if hint in (int, float) else []


def test_every_numeric_field_of_params_and_of_every_backend_config_states_its_range():
    assert unranged(Params, "") == []
    configs = {kind: BACKENDS.load(kind).config_class for kind in BACKENDS.kinds}
    assert {"openai", "hf", "blind", "random"} <= set(configs)
    for kind, config in configs.items():
        fields = typing.get_type_hints(config, include_extras=True)
        assert [f"{kind}.{k}" for name, hint in fields.items() for k in unranged(hint, name)] == []


@pytest.mark.parametrize(("override", "message"), [
    ("release.version=1.0", "params: release.version = 1.0, expected a semantic version MAJOR.MINOR.PATCH, written as "
                            "a string"),
    ("release.version='1.0'", "params: release.version = '1.0', expected a semantic version"),
    ("release.version=01.0.0", "params: release.version = '01.0.0', expected a semantic version"),
    ("score.seed=-3", "params: score.seed = -3, expected an integer in [0, 2**32)"),
    ("seed=4294967296", "params: seed = 4294967296, expected an integer in [0, 2**32)"),
    ("questions.seed=-1", "params: questions.seed = -1, expected an integer in [0, 2**32) (a seed numpy accepts) or null"),
    ("models.gpt-4o.timeout_s=0", "params: models.gpt-4o.timeout_s = 0.0, expected a number > 0 (models.yaml)"),
    ("models.gpt-4o.max_retries=-1", "params: models.gpt-4o.max_retries = -1, expected an integer >= 0 (models.yaml)"),
    ("models.gpt-4o.rpm=-5", "params: models.gpt-4o.rpm = -5.0, expected a number >= 0 or null (models.yaml)"),
    ("models.gpt-4o.backoff_base_s=-1", "params: models.gpt-4o.backoff_base_s = -1.0, expected a number >= 0"),
    ("models.gpt-4o.concurrency=0", "params: models.gpt-4o.concurrency = 0, expected a positive integer"),
    ("models.gpt-4o.max_tokens=0", "params: models.gpt-4o.max_tokens = 0, expected a positive integer"),
    ("models.tiny.max_new_tokens=-1", "params: models.tiny.max_new_tokens = -1, expected a positive integer"),
    ("models.tiny.threads=0", "params: models.tiny.threads = 0, expected a positive integer or null"),
    ("models.blind.folds=1", "params: models.blind.folds = 1, expected an integer >= 2"),
    ("models.random.seed=-2", "params: models.random.seed = -2, expected an integer in [0, 2**32)"),
])
def test_a_value_out_of_range_stops_every_command_naming_key_and_range(repo_root, override, message, capsys):
    assert main(["models", "--params", str(repo_root / "params.yaml"), override]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["0", "1", "4294967295"])
def test_seeds_in_range_and_the_repository_backends_pass(repo_root, value, capsys):
    assert main(["models", "--params", str(repo_root / "params.yaml"), f"score.seed={value}",
                 f"models.random.seed={value}", "models.gpt-4o.rpm=null", "models.gpt-4o.max_retries=0"]) == 0


def test_score_with_a_negative_seed_stops_before_scoring(repo_root, tmp_path, capsys):
    """The probe's command: `probmed score ... score.seed=-3` reached numpy (ValueError, exit 4)."""
    out = tmp_path / "scores"
    code = main(["score", str(tmp_path / "q.json"), str(tmp_path / "p.parquet"), "--out-dir", str(out),
                 "--params", str(repo_root / "params.yaml"), "score.seed=-3"])
    assert code == 2 and "score.seed = -3" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("seed", ["-3", "4294967296", "x"])
def test_a_seed_option_out_of_range_is_refused_by_the_parser(tmp_path, seed, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["baseline", "random", str(tmp_path / "q.json"), "--out", str(tmp_path / "p.parquet"), f"--seed={seed}"])
    assert stop.value.code == 2
    assert f"argument --seed: {seed!r}: expected an integer in [0, 2**32)" in capsys.readouterr().err
