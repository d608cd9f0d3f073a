"""One rule for names that become file or folder names (probmed.core.names), wherever a name enters.

The probe's names: ``../../evil`` (a release two levels above --out-dir), ``..``, ``/``, newlines and quotes.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from probmed.benchmark.questions import generate_questions
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import main
from probmed.core.config import read_yaml_12
from probmed.core.errors import UserError
from probmed.core.names import MAX_NAME_LENGTH, checked_name, is_safe_name
from probmed.core.records import write_questions

GOOD = ["probmed", "probmed-full", "gpt-4o", "qwen2.5-vl-7b", "always_yes", "_x", "1.1.0", "a" * MAX_NAME_LENGTH]
BAD = ["", ".", "..", "../../evil", "../x", "a/b", "/abs", "a\\b", "a\nb", "a\rb", 'a"b', "a'b", " a", "a b", ".hidden",
       "-x", "a" * (MAX_NAME_LENGTH + 1), "é", "a\x00b", "a\ud800", "~", "$HOME", "a*"]


@pytest.mark.parametrize("name", GOOD)
def test_a_plain_name_is_one(name):
    assert is_safe_name(name) and checked_name(name, "--name") == name


@pytest.mark.parametrize("name", BAD)
def test_a_name_that_is_not_one_folder_name_is_refused_naming_where_it_came_from(name):
    assert not is_safe_name(name)
    with pytest.raises(UserError, match="^--describer = .*: expected a name of ASCII letters"):
        checked_name(name, "--describer")


def test_non_strings_are_not_names():
    assert not any(is_safe_name(v) for v in (None, 1, 1.5, ["a"], b"a"))


@pytest.fixture()
def params_dir(repo_root, tmp_path) -> Path:
    """A copy of the repository's parameter files, to edit."""
    for name in ("params.yaml", "models.yaml", "layout.yaml"):
        shutil.copy(repo_root / name, tmp_path / name)
    return tmp_path


def edit_yaml(path: Path, change) -> None:
    data = read_yaml_12(path)  # as probmed reads it: YAML 1.2 (`yes:` a string key)
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize(("file", "change", "message"), [
    ("models.yaml", lambda d: d["models"].update({"../evil": {"backend": "always-yes"}}),
     "params: models has the key '../evil', expected a name of ASCII letters"),
    ("params.yaml", lambda d: d["datasets"]["question_sets"].update({"a/b": {"sources": ["vqarad"]}}),
     "params: datasets.question_sets has the key 'a/b', expected a name"),
    ("params.yaml", lambda d: d["pipeline"]["runs"].update({"x\ny": {"question_set": "probmed", "model": "tiny",
                                                                     "setting": "vanilla"}}),
     "params: pipeline.runs has the key 'x\\ny', expected a name"),
    ("params.yaml", lambda d: d["pipeline"]["runs"]["probmed-tiny-vanilla"].update(model="../tiny"),
     "params: pipeline.runs.probmed-tiny-vanilla.model = '../tiny', expected a name"),
    ("params.yaml", lambda d: d["pipeline"].update(describe=[".."]),
     "params: pipeline.describe[0] = '..', expected a name"),
])
def test_a_path_name_in_a_params_file_stops_every_command(params_dir, file, change, message, capsys):
    edit_yaml(params_dir / file, change)
    assert main(["models", "--params", str(params_dir / "params.yaml")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("override", ["model=../../evil", "setting=..", "settings.describer=a/b", 'model=a"b'])
def test_a_path_name_in_an_override_stops_every_command(repo_root, override, capsys):
    assert main(["models", "--params", str(repo_root / "params.yaml"), override]) == 2
    key = override.partition("=")[0]
    assert f"params: {key} = " in capsys.readouterr().err


def test_describe_refuses_a_describer_name_that_leaves_its_folder(repo_root, shared_data, tmp_path, capsys):
    """`--describer` named the description store's folder (predict.describe_dir/<describer>) before the model was
    looked up: ``../../evil`` made a folder two levels above it."""
    records = load_vqarad(shared_data / "vqa-rad", shared_data).records[:3]
    write_questions(generate_questions(records, seed=0)[0], tmp_path / "q.parquet")
    store = tmp_path / "a" / "b" / "descriptions"
    code = main(["describe", "--describer", "../../evil", "--questions", str(tmp_path / "q.parquet"), "--image-root",
                 str(shared_data), "--params", str(repo_root / "params.yaml"), f"predict.describe_dir={store}",
                 "--no-progress"])
    assert code == 2 and "--describer = '../../evil': expected a name" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["q.parquet"]
