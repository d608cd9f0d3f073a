"""`probmed score` takes dotted overrides anywhere on the line, like every other command."""

from __future__ import annotations

import json
from pathlib import Path

from test_scoring_cli import files  # noqa: F401  (the fixture)

from probmed.cli import main

PARAMS = str(Path(__file__).resolve().parents[2] / "params.yaml")


def test_overrides_before_between_and_after_the_options_all_apply(files, tmp_path: Path) -> None:  # noqa: F811
    qfile, pfile = files
    out = tmp_path / "scores"
    assert main(["score", "score.ci_level=0.9", str(qfile), str(pfile), "score.bootstrap_resamples=30",
                 "--out-dir", str(out), "--params", PARAMS, "score.seed=7"]) == 0
    meta = json.loads((out / "metrics.json").read_text())["meta"]
    assert (meta["bootstrap_resamples"], meta["seed"], meta["ci_level"]) == (30, 7, 0.9)


def test_positional_override_that_is_not_key_value_is_refused(files, tmp_path: Path, capsys) -> None:  # noqa: F811
    qfile, pfile = files
    out = tmp_path / "scores"
    assert main(["score", str(qfile), str(pfile), "bootstrap", "--out-dir", str(out), "--params", PARAMS]) == 2
    assert "key=value" in capsys.readouterr().err
    assert not out.exists()
