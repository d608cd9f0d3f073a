"""Editing one value of params.yaml keeps every other byte (comments, layout) and refuses what it
cannot edit safely."""

from __future__ import annotations

import pytest

from probmed.core.config import read_yaml_12
from probmed.core.errors import ConfigError
from probmed.core.params_edit import set_param, set_value_in_text

TEXT = """\
# top comment
models:
  a:                      # entry comment
    backend: hf
    model_id: org/name
    revision: null        # pin me
    dtype: bfloat16

  b.c:
    backend: hf
    model_id: org/other
  flow: {backend: random}
other: 1
"""


def changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(x, y) for x, y in zip(before.splitlines(), after.splitlines()) if x != y]


SHA = "0123456789abcdef0123456789abcdef01234567"


def test_replaces_the_value_and_keeps_the_comment_where_dvc_would():
    """The comment keeps its column, or follows the value by one space when it no longer fits (DVC's layout)."""
    out = set_value_in_text(TEXT, ["models", "a", "revision"], SHA)
    assert changed_lines(TEXT, out) == [("    revision: null        # pin me", f"    revision: {SHA} # pin me")]
    out = set_value_in_text(TEXT, ["models", "a", "revision"], "v1")
    assert changed_lines(TEXT, out) == [("    revision: null        # pin me", "    revision: v1          # pin me")]


def test_a_pin_in_the_repository_registry_is_what_dvc_exp_run_writes(repo_root, tmp_path):
    from dvc.utils.hydra import apply_overrides

    pinned, by_dvc = tmp_path / "pinned.yaml", tmp_path / "dvc.yaml"
    for path in (pinned, by_dvc):
        path.write_text((repo_root / "models.yaml").read_text())  # the file `probmed pin` edits
    set_param(pinned, ["models", "lingshu-7b", "revision"], SHA)
    apply_overrides(by_dvc, [f"models.lingshu-7b.revision={SHA}"])
    assert pinned.read_text() == by_dvc.read_text()


def test_inserts_a_missing_key_at_the_end_of_its_block_and_handles_dotted_names():
    out = set_value_in_text(TEXT, ["models", "b.c", "revision"], "abc")
    assert "    model_id: org/other\n    revision: abc\n  flow:" in out
    assert out.replace("    revision: abc\n", "", 1) == TEXT


def test_values_that_yaml_would_misread_are_quoted():
    assert 'revision: "true"' in set_value_in_text(TEXT, ["models", "a", "revision"], "true")
    assert f'revision: "{"0" * 40}"' in set_value_in_text(TEXT, ["models", "a", "revision"], "0" * 40)  # a number


@pytest.mark.parametrize("keys, message", [
    (["models", "nope", "revision"], "'models.nope' not found"),
    (["models", "flow", "backend"], "flow style"),
    (["models", "a"], "not a plain value"),
])
def test_refuses_what_it_cannot_edit(keys, message):
    with pytest.raises(ConfigError, match=message):
        set_value_in_text(TEXT, keys, "x")


def test_set_param_writes_atomically_and_only_that_key(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(TEXT)
    before = read_yaml_12(path)
    assert set_param(path, ["models", "a", "revision"], "f" * 40) is True
    after = read_yaml_12(path)
    before["models"]["a"]["revision"] = "f" * 40
    assert after == before
    assert set_param(path, ["models", "a", "revision"], "f" * 40) is False  # already pinned: untouched
    assert not list(tmp_path.glob(".params.yaml.*"))  # no temporary file left behind
