"""MLflow tracking against a real sqlite tracking DB (no server: see test_pipeline for that)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from metrics_factory import make_metrics
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from probmed.core.errors import ScoresError
from probmed.reporting.tracking import (
    RunSpec,
    Tracker,
    clean_params,
    file_md5,
    log_model_runs,
    metrics_from_scores,
)


def _write(tmp: Path, setting: str, seed: int) -> tuple[Path, Path]:
    score_dir = tmp / "scores" / setting
    score_dir.mkdir(parents=True)
    metrics = score_dir / "metrics.json"
    metrics.write_text(json.dumps(make_metrics(seed)))
    (score_dir / "by_category.csv").write_text("category,accuracy\nmodality,1\n")
    preds = tmp / f"pred-{setting}.parquet"
    pd.DataFrame({"qid": ["a"], "label": ["yes"]}).to_parquet(preds)
    return metrics, preds


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("track")
    questions = tmp / "questions.parquet"
    pd.DataFrame({"qid": ["a", "b"]}).to_parquet(questions)
    tracker = Tracker(f"sqlite:///{tmp / 'mlflow.db'}", "probmed-test", tmp / "mlruns")
    specs = []
    for seed, setting in enumerate(("cot", "vanilla", "described")):  # vanilla not first on purpose
        metrics, preds = _write(tmp, setting, seed)
        specs.append(
            RunSpec(
                model="tiny",
                setting=setting,
                question_set="probmed",
                metrics_path=metrics,
                questions_path=questions,
                predictions_path=preds,
                params={"model": {"id": "build/models/tiny", "revision": "r1", "api_key": "sk-SECRET"}, "seed": 0},
                artifact_paths=[metrics.parent / "by_category.csv"],
            )
        )
    ids = log_model_runs(tracker, specs, repo_dir=tmp)
    return tracker, ids, specs, questions


def test_one_run_per_setting_and_ablations_are_children(logged):
    tracker, ids, _, questions = logged
    assert set(ids) == {"vanilla", "cot", "described"} and len(set(ids.values())) == 3
    client = tracker.client
    vanilla = client.get_run(ids["vanilla"])
    assert MLFLOW_PARENT_RUN_ID not in vanilla.data.tags
    for setting in ("cot", "described"):
        run = client.get_run(ids[setting])
        assert run.data.tags[MLFLOW_PARENT_RUN_ID] == ids["vanilla"]
        assert run.data.tags["probmed.setting"] == setting
    assert vanilla.data.tags["probmed.questions_dvc_md5"] == file_md5(questions)
    assert vanilla.info.status == "FINISHED"


def test_params_metrics_artifacts_and_no_secret(logged):
    tracker, ids, specs, _ = logged
    run = tracker.client.get_run(ids["vanilla"])
    params = run.data.params
    assert params["model.revision"] == "r1" and params["run.setting"] == "vanilla" and params["seed"] == "0"
    assert not any("sk-SECRET" in v for v in params.values()) and "model.api_key" not in params
    expected = make_metrics(1)["by_category"]["condition"]["accuracy_adv_pairs"]
    assert run.data.metrics["by_category.condition.accuracy_adv_pairs"] == pytest.approx(expected)
    assert "by_image_type.x-ray_chest.modality.accuracy_adv_pairs" in run.data.metrics
    assert "procedural.position.accuracy" not in run.data.metrics  # null stays absent, not 0
    top = {a.path for a in tracker.client.list_artifacts(ids["vanilla"])}
    assert top == {"scores", "predictions"}
    scores = {a.path for a in tracker.client.list_artifacts(ids["vanilla"], "scores")}
    assert {"scores/metrics.json", "scores/by_category.csv"} <= scores


def test_relogging_updates_the_same_run(logged):
    tracker, ids, specs, _ = logged
    again = log_model_runs(tracker, specs)
    assert again == ids
    changed = RunSpec(**{**specs[1].__dict__, "params": {"model": {"revision": "r2"}}})
    assert tracker.log(changed) != ids["vanilla"]


def test_metrics_from_scores_skips_nan_and_slugs_names():
    scores = make_metrics(3)
    scores["by_category"]["position"]["precision"] = float("nan")
    flat = metrics_from_scores(scores)
    assert "by_category.position.precision" not in flat
    assert flat["overall.n_questions"] == 400
    assert all(" " not in name for name in flat)


def test_clean_params_drops_credentials_keeps_env_var_names():
    out = clean_params({"api": {"api_key": "x", "api_key_env": "OPENAI_API_KEY", "max_new_tokens": 8, "hf_token": "y"}})
    assert out == {"api.api_key_env": "OPENAI_API_KEY", "api.max_new_tokens": "8"}


def test_missing_or_malformed_metrics_is_a_clear_error(tmp_path, logged):
    tracker = logged[0]
    with pytest.raises(ScoresError, match="not found"):
        tracker.log(RunSpec("m", "vanilla", "q", tmp_path / "nope.json"))
    bad = tmp_path / "metrics.json"
    bad.write_text("[1, 2]")
    with pytest.raises(ScoresError, match="by_category"):
        tracker.log(RunSpec("m", "vanilla", "q", bad))


def test_audit_is_one_run_per_question_set_updated_in_place(logged, tmp_path):
    tracker = logged[0]
    (tmp_path / "audit.md").write_text("# Question-set audit\n")
    first = tracker.log_audit({"audit_oracle_margin_overall": 0.5, "audit_lint_findings": 0.0}, tmp_path, "probmed-full")
    again = tracker.log_audit({"audit_oracle_margin_overall": 0.25, "audit_lint_findings": 0.0}, tmp_path, "probmed-full")
    assert first == again
    run = tracker.client.get_run(first)
    assert run.data.tags["probmed.kind"] == "audit" and run.data.metrics["audit_oracle_margin_overall"] == 0.25
    assert [a.path for a in tracker.client.list_artifacts(first, "audit")] == ["audit/audit.md"]
