"""Parameters are plain data: no interpolation (a key through ${oc.env:...}), no YAML alias bomb, no deep nesting.

The inputs are those of the issue's probe: the ``oc.env`` override of ``probmed models`` and ``probmed
track``, a billion-laughs params.yaml (9^9 leaves), a ~280-character alias override and a 100,000-level
nesting. Each is refused with exit 2 naming the key, before OmegaConf (or any command) sees it.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from probmed.cli import main
from probmed.core.config import load_params, read_yaml_12
from probmed.core.errors import ConfigError

FAKE_KEY = "sk-test-SECRET123456789"
ENV_OVERRIDE = "models.random.hardware=${oc.env:OPENAI_API_KEY}"


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    return FAKE_KEY


def test_an_oc_env_override_exits_2_naming_the_key_and_prints_no_secret(repo_root, fake_key, capsys):
    assert main(["models", "--params", str(repo_root / "params.yaml"), ENV_OVERRIDE]) == 2
    out, err = capsys.readouterr()
    assert "overrides: models.random.hardware" in err and "interpolation" in err
    assert fake_key not in out + err and "SECRET1234" not in out + err


def test_an_interpolation_in_the_params_file_is_refused(repo_root, tmp_path, fake_key):
    text = (repo_root / "params.yaml").read_text(encoding="utf-8")
    path = tmp_path / "params.yaml"
    path.write_text(text.replace("  experiment: probmed\n", "  experiment: ${oc.env:OPENAI_API_KEY}\n"))
    with pytest.raises(ConfigError, match=r"tracking\.experiment: '\$\{\.\.\.\}' interpolation") as info:
        load_params(path)
    assert fake_key not in str(info.value)
    with pytest.raises(ConfigError, match=r"overrides: report\.title"):  # any ${...}, not only oc.env
        load_params(repo_root / "params.yaml", ["report.title=${tracking.uri}"])


def test_track_with_an_oc_env_override_refuses_before_any_work(repo_root, tmp_path, fake_key, monkeypatch, capsys):
    """`probmed track` refuses in the loader, so no tracking database is opened (nothing in mlflow.db)."""
    monkeypatch.chdir(tmp_path)  # tracking.uri is sqlite:///mlflow.db, relative to the working directory
    code = main(["track", "--params", str(repo_root / "params.yaml"), "--scores-root", str(tmp_path / "scores"),
                 "models.gpt-4o.hardware=${oc.env:OPENAI_API_KEY}"])
    out, err = capsys.readouterr()
    assert code == 2 and "models.gpt-4o.hardware" in err and "interpolation" in err
    assert fake_key not in out + err
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "build").exists()


def billion_laughs(depth: int = 9) -> str:
    """The probe's bomb: each line an anchored list of nine aliases of the line before (9^depth leaves)."""
    lines = ["lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"lol{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


@pytest.mark.timeout(30)  # a hang guard; the time the refusal takes is measured by benchmarks/refusal_speed.py
def test_a_billion_laughs_params_file_is_refused_within_100_mb(repo_root, tmp_path, capsys):
    path = tmp_path / "params.yaml"
    path.write_text((repo_root / "params.yaml").read_text(encoding="utf-8") + billion_laughs())
    tracemalloc.start()
    try:
        code = main(["models", "--params", str(path)])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err
    assert code == 2 and f"parameter file {path}: key lol0 (line " in err and "anchor or alias" in err
    assert peak < 100 * 2**20, f"refusal peaked at {peak / 2**20:.0f} MB"  # expanded, it is 9^9 leaves


def alias_override(levels: int = 6) -> str:
    """The probe's one-line bomb: ``report.lol=[&l0 [1,...], &l1 [*l0,...], ...]`` (about 280 characters)."""
    items = ["&l0 [1,1,1,1,1,1,1,1,1]"] + [f"&l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return f"report.lol=[{', '.join(items)}]"


@pytest.mark.timeout(30)  # a hang guard; the time the refusal takes is measured by benchmarks/refusal_speed.py
def test_an_alias_override_is_refused_before_it_expands(repo_root, capsys):
    override = alias_override()
    assert 250 < len(override) < 300
    tracemalloc.start()
    try:
        assert main(["models", "--params", str(repo_root / "params.yaml"), override]) == 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"refusal peaked at {peak / 2**20:.0f} MB"  # expanded, it is 9^6 leaves
    assert "override report.lol=...: key report.lol[0] (line 1): a YAML anchor or alias" in capsys.readouterr().err


def test_an_anchor_is_refused_even_when_never_aliased(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("seed: 0\nreport:\n  title: &t ProbMed\n")
    with pytest.raises(ConfigError, match=r"key report\.title \(line 3\): a YAML anchor or alias"):
        read_yaml_12(path)


@pytest.mark.timeout(60)
def test_nesting_100000_levels_deep_exits_2_not_4(repo_root, tmp_path, capsys):
    deep = "[" * 100_000 + "]" * 100_000
    assert main(["models", "--params", str(repo_root / "params.yaml"), f"report.deep={deep}"]) == 2
    assert "key report.deep[0][0]" in capsys.readouterr().err
    path = tmp_path / "params.yaml"
    path.write_text(f"seed: 0\ndeep: {deep}\n")
    with pytest.raises(ConfigError, match=r"parameter file .*: key deep\[0\].* nested more than 32 levels"):
        read_yaml_12(path)
    with pytest.raises(ConfigError, match="more than 32 parts"):
        load_params(repo_root / "params.yaml", ["report" + ".a" * 5000 + "=1"])


def test_the_real_params_file_is_plain(repo_root):
    """params.yaml itself has no anchor, alias, interpolation or deep nesting (and loads as before)."""
    cfg = load_params(repo_root / "params.yaml", ["report.title=costs $5 {per run}"])  # a dollar is no interpolation
    assert cfg.report.title == "costs $5 {per run}" and cfg.seed == 0


@pytest.mark.timeout(30)
def test_the_pin_command_reads_params_through_the_same_loader(tmp_path, capsys):
    path = tmp_path / "params.yaml"
    path.write_text(billion_laughs())
    assert main(["pin", "tiny", "--params", str(path)]) == 2
    assert "anchor or alias" in capsys.readouterr().err


def test_no_partial_output_when_refused(repo_root, tmp_path):
    out = tmp_path / "plan"
    assert main(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(out), ENV_OVERRIDE]) == 2
    assert not out.exists()
    assert not list(Path(tmp_path).iterdir())
