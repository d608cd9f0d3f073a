"""The run plan: every params key checked before any work, the message naming the key."""

from __future__ import annotations

import shutil

import pytest

from probmed.cli import main
from probmed.core.config import load_params, to_plain
from probmed.core.errors import ConfigError
from probmed.core.params_schema import parse_params
from probmed.pipeline.plan import evaluations, write_plan


@pytest.fixture()
def cfg(repo_root, tmp_path):
    params = to_plain(load_params(repo_root / "params.yaml"))
    (tmp_path / "data").mkdir()
    for source in params["datasets"]["sources"].values():  # every raw source folder the plan checks
        (tmp_path / "data" / source["dir"]).mkdir()
    return params, tmp_path


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"model": "no-such-model"}, r"pipeline\.runs\.probmed-tiny-vanilla\.model = 'no-such-model' is not a model"),
        ({"model": "gpt-4o"}, r"pipeline\.runs\.probmed-tiny-vanilla\.model = 'gpt-4o' is disabled"),
        ({"setting": "sideways"}, r"pipeline\.runs\.probmed-tiny-vanilla\.setting = 'sideways'"),
        ({"question_set": "nope"}, r"pipeline\.runs\.probmed-tiny-vanilla\.question_set = 'nope' is not a dataset"),
        ({"setting": "described"}, r"go under pipeline\.described_runs"),
    ],
)
def test_bad_run_config_names_the_key(cfg, override, message):
    params, root = cfg
    params["pipeline"]["runs"]["probmed-tiny-vanilla"].update(override)
    with pytest.raises(ConfigError, match=message):
        write_plan(parse_params(params), root / "plan", root)
    assert not (root / "plan").exists()  # nothing written before the check passes


def test_missing_dataset_names_the_key(cfg):
    params, root = cfg
    shutil.rmtree(root / "data" / "vqa-rad")
    with pytest.raises(ConfigError, match=r"datasets\.sources\.vqarad: raw data .*vqa-rad not found"):
        write_plan(parse_params(params), root / "plan", root)
    params["datasets"]["question_sets"]["probmed"]["sources"].append("roco")
    with pytest.raises(ConfigError, match=r"datasets\.question_sets\.probmed\.sources lists 'roco'"):
        write_plan(parse_params(params), root / "plan", root)


def test_plan_checks_every_registry_key(cfg):
    """A model's backend (enabled or not), a data source and a run's setting must be registered."""
    params, root = cfg
    params["models"]["llava-med"]["backend"] = "hugging-face"
    with pytest.raises(ConfigError, match=r"models\.llava-med\.backend = 'hugging-face' is not a known model backend"):
        write_plan(parse_params(params), root / "plan", root)
    params["models"]["llava-med"]["backend"] = "hf"
    params["datasets"]["sources"]["xrays"] = {"dir": "chestxray14"}
    with pytest.raises(ConfigError, match=r"datasets\.sources\.xrays is not a known data source; .*'vqarad'"):
        write_plan(parse_params(params), root / "plan", root)
    assert not (root / "plan").exists()


def test_plan_lists_every_evaluation_and_writes_a_constant_gate(cfg):
    params, root = cfg
    plan = write_plan(parse_params(params), root / "plan", root)
    names = {e.name for e in evaluations(parse_params(params))}
    assert {e["name"] for e in plan["evaluations"]} == names
    assert names == set(params["pipeline"]["runs"]) | set(params["pipeline"]["described_runs"])
    gate = (root / "plan" / "gate").read_text()
    params["models"]["tiny"]["max_new_tokens"] = 3
    write_plan(parse_params(params), root / "plan", root)
    assert (root / "plan" / "gate").read_text() == gate  # model params never invalidate every stage


def test_plan_cli_exits_2_with_the_key(repo_root, tmp_path, capsys):
    rc = main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(tmp_path / "p"),
               "pipeline.runs.probmed-tiny-cot.model=gpt-4o"])
    assert rc == 2
    assert "pipeline.runs.probmed-tiny-cot.model = 'gpt-4o' is disabled" in capsys.readouterr().err
    rc = main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(tmp_path / "p"),
               "pipeline.runs.probmed-tiny-cot.model=llava-med"])  # a hub model runs once pinned
    assert rc == 2
    err = capsys.readouterr().err
    assert "pipeline.runs.probmed-tiny-cot.model = 'llava-med'" in err and "probmed pin llava-med" in err
