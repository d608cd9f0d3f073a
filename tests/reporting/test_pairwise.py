"""`probmed compare A B`: two runs named by score folder, by name or by MLflow run id, compared with the paired bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from comparison_runs import QUESTION_SET, write_scores

from probmed.cli import main
from probmed.core.params_schema import Score
from probmed.scoring.compare import Bootstrap, paired_differences

RESAMPLES = 200


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pairwise") / "scores"
    write_scores(root)
    return root


def _per_image(root: Path, model: str, setting: str) -> pd.DataFrame:
    return pd.read_parquet(root / QUESTION_SET / model / setting / "per_image.parquet")


def _compare(tmp_path: Path, monkeypatch, *argv: str) -> int:
    monkeypatch.chdir(tmp_path)  # a checkout whose params file states nothing: the schema's defaults
    (tmp_path / "params.yaml").write_text("seed: 0\n")
    return main(["compare", *argv, f"score.bootstrap_resamples={RESAMPLES}"])


def test_score_folders_give_the_paired_bootstrap_of_scoring_compare(scored, tmp_path, monkeypatch, capsys):
    a, b = scored / QUESTION_SET / "looker" / "vanilla", scored / QUESTION_SET / "looker" / "blank"
    assert _compare(tmp_path, monkeypatch, str(a), str(b), "--out", "out") == 0
    page = capsys.readouterr().out
    got = json.loads((tmp_path / "out" / "compare.json").read_text())
    expected = paired_differences(_per_image(scored, "looker", "vanilla"), _per_image(scored, "looker", "blank"),
                                  Bootstrap(RESAMPLES, Score().seed, Score().ci_level))
    assert [(r["category"], r["metric"]) for r in got["differences"]] == list(zip(expected["category"], expected["metric"]))
    for row, (_, exp) in zip(got["differences"], expected.iterrows()):
        assert row["diff"] == pytest.approx(exp["diff"]) and row["ci_low"] == pytest.approx(exp["ci_low"])
    overall = next(r for r in got["differences"] if r["category"] == "overall" and r["metric"] == "strict")
    assert overall["ci_low"] > 0  # the looker depends on the image: the drop with a blank image is real
    assert "| overall (pooled units) |" in page and (tmp_path / "out" / "compare.md").read_text() in page


def test_names_under_a_score_root_default_to_vanilla(scored, tmp_path, monkeypatch):
    assert _compare(tmp_path, monkeypatch, "looker/cot", "looker", "--scores-root", str(scored)) == 0
    out = tmp_path / "build/adhoc/compare/looker_cot-vs-looker"  # by hand: under paths.adhoc, nothing at the root
    got = json.loads((out / "compare.json").read_text())
    assert got["a"]["source"].endswith(f"{QUESTION_SET}/looker/cot") and got["b"]["source"].endswith("looker/vanilla")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "params.yaml"]


def test_an_mlflow_run_id_reads_the_runs_per_image_artifact(scored, tmp_path, monkeypatch):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("probmed", artifact_location=(tmp_path / "mlruns").as_uri())
    run = client.create_run(experiment, run_name=f"{QUESTION_SET}/blind/vanilla")
    client.log_artifact(run.info.run_id, str(scored / QUESTION_SET / "blind" / "vanilla" / "per_image.parquet"), "scores")
    client.set_terminated(run.info.run_id)
    folder = scored / QUESTION_SET / "looker" / "vanilla"
    assert _compare(tmp_path, monkeypatch, str(folder), run.info.run_id, "--out", "by-id", f"tracking.uri={uri}") == 0
    assert _compare(tmp_path, monkeypatch, str(folder), str(scored / QUESTION_SET / "blind" / "vanilla"),
                    "--out", "by-folder") == 0
    by_id = json.loads((tmp_path / "by-id" / "compare.json").read_text())
    by_folder = json.loads((tmp_path / "by-folder" / "compare.json").read_text())
    assert by_id["b"]["label"] == f"{QUESTION_SET}/blind/vanilla"
    assert by_id["differences"] == by_folder["differences"]


def test_unknown_runs_and_runs_on_other_questions_exit_2(scored, tmp_path, monkeypatch, capsys):
    assert _compare(tmp_path, monkeypatch, "nowhere/x/y", "looker", "--scores-root", str(scored)) == 2
    assert "'nowhere/x/y': not a score folder" in capsys.readouterr().err
    other = tmp_path / "other"
    write_scores(other, n_images=40)
    assert _compare(tmp_path, monkeypatch, str(other / QUESTION_SET / "looker" / "vanilla"),
                    str(scored / QUESTION_SET / "looker" / "vanilla")) == 2
    assert "not scored on the same questions" in capsys.readouterr().err
    assert not (tmp_path / "build").exists()  # nothing written for a refused comparison
