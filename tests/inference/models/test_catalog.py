"""`probmed models`: the registry and the paper profile, checked and listed."""

from __future__ import annotations

import json

import pytest

from probmed.cli import main
from probmed.core.config import merge_registries, read_yaml_12
from probmed.core.errors import ConfigError
from probmed.core.params_schema import ProfileModel, parse_params
from probmed.inference.models.catalog import check_profile, profile_rows

PAPER_TABLE3 = {"LLaVA-v1", "LLaVA-v1.6", "MiniGPT-v2", "LLaVA-Med-v1", "LLaVA-Med-v1.5", "CheXagent", "BiomedGPT",
                "Med-Flamingo", "RadFM", "Gemini-Pro", "GPT-4V", "GPT-4o"}


@pytest.fixture(scope="module")
def params(repo_root) -> dict:
    data = read_yaml_12(repo_root / "params.yaml")
    merge_registries(data, repo_root / "params.yaml")  # the registry is models.yaml, beside it
    return data


def test_paper_profile_covers_table3_and_every_runnable_model_is_registered(params):
    typed = parse_params(params)
    models, profiles = typed.models, typed.model_profiles
    paper = check_profile(models, profiles, "paper")
    assert PAPER_TABLE3 <= set(paper)
    for label, spec in paper.items():
        if spec.model:
            entry = models[spec.model]
            assert {"hf": "hf", "api": "openai"}[spec.runs] == entry["backend"], label
            assert entry.get("hardware"), label
        else:
            assert spec.why, label


def test_current_models_are_registered_with_hardware_and_unpinned(params):
    models = params["models"]
    expected = {"medgemma-4b": "google/medgemma-4b-it", "lingshu-7b": "lingshu-medical-mllm/Lingshu-7B",
                "huatuogpt-vision-7b": "FreedomIntelligence/HuatuoGPT-Vision-7B-Qwen2.5VL",
                "llava-med": "chaoyinshe/llava-med-v1.5-mistral-7b-hf", "llava-1.5": "llava-hf/llava-1.5-7b-hf",
                "qwen2.5-vl-7b": "Qwen/Qwen2.5-VL-7B-Instruct"}
    for name, model_id in expected.items():
        entry = models[name]
        assert entry["model_id"] == model_id and entry["backend"] == "hf" and entry["device"] == "auto"
        assert "enabled" not in entry and entry["revision"] is None and entry["hardware"]  # enabled once pinned
        assert not entry.get("trust_remote_code")
    assert models["gemini-1.5-pro"]["base_url"].startswith("https://generativelanguage.googleapis.com/")


def test_profile_errors_name_the_key():
    models = {"m": {"backend": "hf"}}
    with pytest.raises(ConfigError, match=r"model_profiles.p.X.runs = 'gpu'"):  # the schema checks `runs`
        parse_params({"models": models, "model_profiles": {"p": {"X": {"runs": "gpu"}}}})
    with pytest.raises(ConfigError, match=r"model_profiles.p.X.model = 'zz' is not in models"):
        check_profile(models, {"p": {"X": ProfileModel(runs="hf", model="zz")}}, "p")
    with pytest.raises(ConfigError, match="must say why"):
        check_profile(models, {"p": {"X": ProfileModel(runs="unsupported")}}, "p")
    with pytest.raises(ConfigError, match="model_profiles.q not found"):
        profile_rows(models, {"p": {}}, "q")


def test_models_command_lists_registry_and_profile(repo_root, capsys):
    assert main(["models", "--params", str(repo_root / "params.yaml"), "--json"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["lingshu-7b"]["status"] == "not pinned" and rows["tiny"]["status"] == "ready"
    assert rows["gpt-4o"]["status"].startswith("disabled")
    assert main(["models", "--params", str(repo_root / "params.yaml"), "--profile", "paper"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("| model | runs |") and "| CheXagent | unsupported |" in table


def test_models_prints_text_as_written_in_a_terminal(repo_root, capsys):
    """A terminal gets `>=`, not the HTML entity a Markdown file needs outside code."""
    assert main(["models", "--params", str(repo_root / "params.yaml")]) == 0
    table = capsys.readouterr().out
    assert ">=" in table and "&gt;" not in table and "&lt;" not in table and "&amp;" not in table
