"""MLflow tracking against a real sqlite tracking DB (no server: see test_pipeline for that)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from metrics_factory import make_metrics
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from probmed.cli import main as cli_main
from probmed.core.errors import DatabaseError, ScoresError, TrackingError
from probmed.infra.clock import epoch_ms, write_work_log
from probmed.infra.tracking_store import EXPERIMENT_KIND, unique_run_name
from probmed.reporting.run_metrics import MAX_METRICS, metrics_from_scores
from probmed.reporting.tracking import (
    RunSpec,
    Tracker,
    clean_params,
    file_md5,
    log_model_runs,
)

WORK = {"answering": {"started_at": "2026-01-02T03:04:05.000Z", "finished_at": "2026-01-02T03:05:00.500Z"},
        "scoring": {"started_at": "2026-01-02T03:06:00.000Z", "finished_at": "2026-01-02T03:06:01.250Z"}}


def _write(tmp: Path, setting: str, seed: int) -> tuple[Path, Path]:
    score_dir = tmp / "scores" / setting
    score_dir.mkdir(parents=True, exist_ok=True)
    metrics = score_dir / "metrics.json"
    metrics.write_text(json.dumps(make_metrics(seed)))
    (score_dir / "by_category.csv").write_text("category,accuracy\nmodality,1\n")
    preds = tmp / f"pred-{setting}.parquet"
    pd.DataFrame({"qid": ["a"], "label": ["yes"]}).to_parquet(preds)
    if setting == "vanilla":  # the others were made before work logs existed
        write_work_log(score_dir, {"scoring": WORK["scoring"]})  # each stage logs its own work, outside its output
        write_work_log(preds, {"answering": WORK["answering"]})
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
                artifact_paths=sorted(p for p in metrics.parent.iterdir() if p.name != "metrics.json"),
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
    assert run.data.metrics["strict/condition"] == round(expected, 2)
    overall = make_metrics(1)["overall"]  # the overalls under the report's names (reporting.overall), no bare "overall"
    assert run.data.metrics["strict/overall_paper_weighted"] == overall["accuracy_adv_pairs_original_weighting"]
    assert run.data.metrics["strict/overall_pooled"] == round(overall["accuracy_adv_pairs"], 2)
    assert "strict/overall" not in run.data.metrics and "strict/overall_questions" not in run.data.metrics
    assert run.data.metrics["procedural/condition"] == 30.0 and run.data.metrics["random/averaged_overall"] == 50.0
    assert "procedural/position" not in run.data.metrics  # null stays absent, not 0
    assert len(run.data.metrics) <= MAX_METRICS and not any(k.startswith("by_image_type") for k in run.data.metrics)
    top = {a.path for a in tracker.client.list_artifacts(ids["vanilla"])}
    assert top == {"scores", "predictions", "plots"}  # no report in an evaluation run
    scores = {a.path for a in tracker.client.list_artifacts(ids["vanilla"], "scores")}
    assert {"scores/metrics.json", "scores/by_category.csv", "scores/all_metrics.json"} <= scores
    assert not any("work" in path for path in scores)  # timings are no artifact: the run's own start and end
    assert [a.path for a in tracker.client.list_artifacts(ids["vanilla"], "plots")] == ["plots/per_category.png"]
    long_tail = json.loads(Path(tracker.client.download_artifacts(ids["vanilla"], "scores/all_metrics.json")).read_text())
    rows = [dict(zip(long_tail["columns"], row)) for row in long_tail["data"]]
    assert {"section": "scores", "image_type": "X-ray - Chest", "category": "modality", "metric": "n_images",
            "value": 5.0} in rows


def _snapshot(tracker: Tracker, run_id: str) -> tuple:
    run = tracker.client.get_run(run_id)
    history = {k: [(m.value, m.timestamp) for m in tracker.client.get_metric_history(run_id, k)] for k in run.data.metrics}
    artifacts = sorted(a.path for top in tracker.client.list_artifacts(run_id)
                       for a in ([top] if not top.is_dir else tracker.client.list_artifacts(run_id, top.path)))
    return run.info.run_name, run.info.status, run.info.end_time, run.data.params, run.data.tags, history, artifacts


def test_a_logged_evaluation_is_neither_relogged_nor_retagged(logged, monkeypatch):
    """`dvc exp run` re-runs `track`: the evaluations it did not recompute keep their runs exactly as they were."""
    tracker, ids, specs, _ = logged
    before = {s: _snapshot(tracker, i) for s, i in ids.items()}
    monkeypatch.setenv("DVC_EXP_NAME", "wrong-sook")
    assert log_model_runs(tracker, specs) == ids
    assert {s: _snapshot(tracker, i) for s, i in ids.items()} == before
    assert not tracker.client.search_runs([tracker.experiment_id], "tags.`probmed.dvc_experiment` = 'wrong-sook'")


def test_new_scores_make_a_new_run_and_leave_the_old_one(logged, tmp_path, monkeypatch):
    """Other scorer params (score.bootstrap_resamples) give other numbers: a run of its own, the baseline untouched."""
    tracker, ids, specs, _ = logged
    before = _snapshot(tracker, ids["vanilla"])
    score_dir = tmp_path / "vanilla"
    score_dir.mkdir()
    metrics = make_metrics(1)
    metrics["overall"]["ci95_high"] = 51.01
    (score_dir / "metrics.json").write_text(json.dumps(metrics))
    params = {**specs[1].params, "score": {"bootstrap_resamples": 300}}
    changed = RunSpec(**{**specs[1].__dict__, "metrics_path": score_dir / "metrics.json", "params": params,
                         "artifact_paths": []})
    monkeypatch.setenv("DVC_EXP_NAME", "wrong-sook")
    new_id = tracker.log(changed)
    assert new_id != ids["vanilla"] and _snapshot(tracker, ids["vanilla"]) == before
    (found,) = tracker.client.search_runs([tracker.experiment_id], "tags.`probmed.dvc_experiment` = 'wrong-sook'")
    assert found.info.run_id == new_id and found.info.run_name == "probmed/tiny/vanilla @wrong-sook"
    assert found.data.params["score.bootstrap_resamples"] == "300" and found.data.metrics["strict/ci95_high"] == 51.01
    assert tracker.log(changed) == new_id  # and it is found again, not duplicated


def test_run_metrics_are_few_grouped_and_rounded():
    scores = make_metrics(3)
    scores["by_category"]["position"]["averaged_accuracy"] = float("nan")
    scores["overall"]["averaged_accuracy"] = 48.888888888888886
    flat = metrics_from_scores(scores)
    assert "averaged/position" not in flat and flat["averaged/overall"] == 48.89
    assert flat["answers/questions"] == 400 and flat["answers/images"] == 60
    assert {k.split("/")[0] for k in flat} <= {"strict", "averaged", "gt_only", "random", "answers", "pope",
                                               "procedural", "known_absent"}
    assert len(flat) <= MAX_METRICS and all(len(k) <= 32 and " " not in k for k in flat)  # strict/overall_question_weighted
    assert flat["strict/overall_question_weighted"] == scores["overall"]["accuracy_adv_pairs_question_weighting"]


def test_the_experiment_is_model_development_and_the_question_set_is_a_dataset(logged):
    tracker, ids, _, questions = logged
    key, value = EXPERIMENT_KIND
    assert tracker.client.get_experiment(tracker.experiment_id).tags[key] == value
    run = tracker.client.get_run(ids["vanilla"])
    (dataset,) = run.inputs.dataset_inputs
    assert dataset.dataset.name == "probmed" and dataset.dataset.digest == file_md5(questions)
    assert json.loads(dataset.dataset.source)["uri"] == str(questions)
    assert json.loads(dataset.dataset.schema)["mlflow_colspec"][0]["name"] == "qid"


def test_a_run_lasts_its_own_work_not_the_pipelines_wait(logged):
    """Answering 55.5 s, then a minute of other stages, then scoring 1.25 s: the run lasts 56.75 s."""
    tracker, ids, _, _ = logged
    run = tracker.client.get_run(ids["vanilla"])
    assert run.info.start_time == epoch_ms(WORK["answering"]["started_at"])
    assert run.info.end_time - run.info.start_time == 55_500 + 1_250


def test_the_runs_table_opens_with_the_headline_metrics(logged):
    """MLflow 3.17 ignores mlflow.experimentKind for the first page: the link picks the runs table and a view."""
    from probmed.reporting.tracking import SHARED_VIEW_TAG, runs_table_url

    tracker = logged[0]
    view = json.loads(tracker.client.get_experiment(tracker.experiment_id).tags[f"{SHARED_VIEW_TAG}headline"])
    columns = view["selectedColumns"]
    assert "metrics.`strict/overall_paper_weighted`" in columns and "metrics.`strict/condition`" in columns
    assert "metrics.`strict/overall_pooled`" in columns and "metrics.`strict/overall`" not in columns
    assert "params.`model.weights_sha256`" in columns and not any("answers/" in c for c in columns)
    url = runs_table_url("http://127.0.0.1:5000", tracker.experiment_id)
    assert url == (f"http://127.0.0.1:5000/#/experiments/{tracker.experiment_id}/runs"
                   "?workflowType=machine_learning&viewStateShareKey=headline")


def test_run_names_are_unique_and_carry_the_dvc_experiment(logged, monkeypatch):
    tracker, ids, specs, _ = logged
    names = [tracker.client.get_run(i).info.run_name for i in ids.values()]
    assert sorted(names) == ["probmed/tiny/cot", "probmed/tiny/described", "probmed/tiny/vanilla"]
    taken = {r.info.run_name for r in tracker.client.search_runs([tracker.experiment_id])}
    fresh = unique_run_name(tracker.client, tracker.experiment_id, "probmed/tiny/vanilla")
    assert fresh not in taken and fresh.startswith("probmed/tiny/vanilla #")
    monkeypatch.setenv("DVC_EXP_NAME", "three-twins")
    changed = RunSpec(**{**specs[1].__dict__, "params": {"model": {"revision": "r3"}}})  # another model revision
    run = tracker.client.get_run(tracker.log(changed))
    assert run.info.run_name == "probmed/tiny/vanilla @three-twins"
    assert run.data.tags["probmed.dvc_experiment"] == "three-twins"


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


def test_audit_is_one_run_per_distinct_audit_never_rewritten(logged, tmp_path):
    tracker = logged[0]
    (tmp_path / "audit.md").write_text("# Question-set audit\n")
    first = tracker.log_audit({"audit_oracle_margin_overall": 0.5, "audit_lint_findings": 0.0}, tmp_path, "probmed-full")
    assert tracker.log_audit({"audit_oracle_margin_overall": 0.5, "audit_lint_findings": 0.0}, tmp_path,
                             "probmed-full") == first
    other = tracker.log_audit({"audit_oracle_margin_overall": 0.25, "audit_lint_findings": 0.0}, tmp_path, "probmed-full")
    assert other != first
    run = tracker.client.get_run(first)
    assert run.data.tags["probmed.kind"] == "audit" and run.data.metrics["audit_oracle_margin_overall"] == 0.5
    assert tracker.client.get_run(other).data.metrics["audit_oracle_margin_overall"] == 0.25
    assert [a.path for a in tracker.client.list_artifacts(first, "audit")] == ["audit/audit.md"]


# --- the tracking database is never replaced; each run is complete or completed next time; one writer -------


def _spec(tmp: Path, setting: str = "vanilla") -> RunSpec:
    metrics, preds = _write(tmp, setting, 0)
    questions = tmp / "questions.parquet"
    pd.DataFrame({"qid": ["a", "b"]}).to_parquet(questions)
    return RunSpec(model="tiny", setting=setting, question_set="probmed", metrics_path=metrics,
                   questions_path=questions, predictions_path=preds, params={"model": {"revision": "r1"}, "seed": 0})


def test_a_run_whose_writing_fails_is_failed_and_completed_next_call(tmp_path):
    """One lifecycle for every run (core.tracking_store.writing_run): an error while writing marks it FAILED."""
    spec = _spec(tmp_path)
    with Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "probmed-test", tmp_path / "mlruns") as tracker:
        log_table = tracker.client.log_table

        def refused(*args, **kwargs):
            raise TrackingError("artifact store refused the table")

        tracker.client.log_table = refused  # type: ignore[method-assign]
        with pytest.raises(TrackingError, match="refused"):
            tracker.log(spec)
        (failed,) = tracker.client.search_runs([tracker.experiment_id])
        assert failed.info.status == "FAILED"
        tracker.client.log_table = log_table  # type: ignore[method-assign]
        assert tracker.log(spec) == failed.info.run_id  # the same evaluation: found by its key, completed
        assert tracker.client.get_run(failed.info.run_id).info.status == "FINISHED"
        report = tmp_path / "report"
        report.mkdir()
        (report / "metrics.json").write_text("{}")
        first = tracker.log_report(report)
        assert tracker.log_report(report) == first and tracker.log_audit({"a": 1.0}, report, "probmed") != first
        statuses = {r.info.run_name: r.info.status for r in tracker.client.search_runs([tracker.experiment_id])}
        assert statuses == {"probmed/tiny/vanilla": "FINISHED", "report/all": "FINISHED",
                            "audit/probmed": "FINISHED"}


def _mlflow_db(tmp: Path) -> Path:
    db = tmp / "real.db"
    Tracker(f"sqlite:///{db}", "probmed-test", tmp / "mlruns").close()
    return db


@pytest.mark.parametrize("damage", ["empty", "garbage", "truncated", "not-mlflow"])
def test_an_empty_or_corrupt_tracking_db_is_refused_never_replaced(tmp_path, damage, repo_root, capsys):
    db = tmp_path / "mlflow.db"
    if damage == "empty":
        db.write_bytes(b"")
    elif damage == "garbage":
        db.write_bytes(b"SQLite format 3\x00" + os.urandom(8192))
    elif damage == "truncated":
        real = _mlflow_db(tmp_path)
        db.write_bytes(real.read_bytes()[: real.stat().st_size // 3])
    else:
        sqlite3.connect(db).execute("CREATE TABLE notes (x)").connection.commit()
    before = db.read_bytes()
    with pytest.raises(DatabaseError, match=f"tracking database {db}"):
        Tracker(f"sqlite:///{db}", "probmed-test", tmp_path / "mlruns")
    assert db.read_bytes() == before  # untouched: every earlier run may still be recovered from it
    capsys.readouterr()
    rc = cli_main(["track", "--params", str(repo_root / "params.yaml"), f"tracking.uri=sqlite:///{db}",
                   "--scores-root", str(tmp_path / "none"), "--out", str(tmp_path / "runs.json")])
    err = capsys.readouterr().err
    assert rc == 3 and err.count("\n") == 1 and "environment error: tracking database" in err
    assert db.read_bytes() == before and not (tmp_path / "runs.json").exists()


KILL_AFTER_CREATE = textwrap.dedent("""
    import os, signal, sys
    from mlflow import MlflowClient
    sys.path.insert(0, sys.argv[3])
    import test_tracking as t
    from probmed.reporting.tracking import Tracker
    from pathlib import Path
    real_create = MlflowClient.create_run
    def create_then_die(self, *a, **kw):
        run = real_create(self, *a, **kw)
        print(run.info.run_id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # killed right after creating the run
    MlflowClient.create_run = create_then_die
    tracker = Tracker(f"sqlite:///{sys.argv[1]}", "probmed-test", Path(sys.argv[2]) / "mlruns")
    tracker.log(t._spec(Path(sys.argv[2])))
""")


@pytest.mark.slow
def test_a_run_killed_half_written_stays_unfinished_and_is_completed_next_call(tmp_path):
    db = tmp_path / "mlflow.db"
    proc = subprocess.run([sys.executable, "-c", KILL_AFTER_CREATE, str(db), str(tmp_path), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    run_id = proc.stdout.strip()
    with Tracker(f"sqlite:///{db}", "probmed-test", tmp_path / "mlruns") as tracker:
        half = tracker.client.get_run(run_id)
        assert half.info.status == "RUNNING" and not half.data.params  # marked unfinished, not FINISHED
        assert tracker.log(_spec(tmp_path)) == run_id  # the next call finds it by its key ...
        done = tracker.client.get_run(run_id)
        assert done.info.status == "FINISHED" and done.data.params["model.revision"] == "r1"  # ... and completes it
        assert done.data.metrics and {a.path for a in tracker.client.list_artifacts(run_id)} == {"scores", "predictions", "plots"}
        assert len(tracker.client.search_runs([tracker.experiment_id])) == 1


CONCURRENT = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[3])
    import test_tracking as t
    from probmed.reporting.tracking import Tracker
    from pathlib import Path
    with Tracker(f"sqlite:///{sys.argv[1]}", "probmed-test", Path(sys.argv[2]) / "mlruns") as tracker:
        print(tracker.log(t._spec(Path(sys.argv[2]) / sys.argv[4])))
""")


@pytest.mark.slow
def test_concurrent_track_calls_serialise(tmp_path):
    """Two concurrent `track`s once created duplicate runs or crashed migrating the schema of a new DB."""
    db = tmp_path / "mlflow.db"
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(db), str(tmp_path), str(Path(__file__).parent),
                               f"w{i}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e[-2000:] for _, e in outs]
    assert len({o.strip() for o, _ in outs}) == 1  # one run, updated in place by the later calls
    assert any("waiting for MLflow tracking store" in e for _, e in outs)  # they did meet at the lock
    with Tracker(f"sqlite:///{db}", "probmed-test", tmp_path / "mlruns") as tracker:
        runs = tracker.client.search_runs([tracker.experiment_id])
        assert len(runs) == 1 and runs[0].info.status == "FINISHED"


def test_visual_reliance_is_logged_on_the_models_vanilla_run(logged):
    from probmed.reporting.comparisons import reliance_metrics

    tracker, ids, _, _ = logged
    rows = [("blank", "overall", 12.0, 4.0, 20.0), ("shuffled", "overall", 3.0, -2.0, 8.0),
            ("blank", "organ", 1.0, -3.0, 5.0), ("shuffled", "organ", 0.5, -1.0, 2.0)]
    frame = pd.DataFrame([{"question_set": "probmed", "model": "tiny", "category": cat, "control": control,
                           "metric": "strict", "drop": drop, "ci_low": low, "ci_high": high}
                          for control, cat, drop, low, high in rows]
                         + [{"question_set": "probmed", "model": "nowhere", "category": "overall", "control": "blank",
                             "metric": "strict", "drop": 1.0, "ci_low": float("nan"), "ci_high": float("nan")}])
    written = tracker.log_reliance(reliance_metrics(frame), {f"probmed-tiny-{s}": i for s, i in ids.items()})
    assert written == {"probmed-tiny": ids["vanilla"]}  # a model without a logged vanilla run is skipped
    metrics = tracker.client.get_run(ids["vanilla"]).data.metrics
    assert metrics["reliance/blank"] == 12.0 and metrics["reliance/blank_ci95_high"] == 20.0
    assert metrics["reliance/shuffled_ci95_low"] == -2.0
    # overall: the blank drop's interval excludes 0, so the model looks; per category only in the report
    assert metrics["reliance/answers_without_looking"] == 0.0
    assert not any("organ" in k for k in metrics if k.startswith("reliance/"))
    assert not any(k.startswith("reliance/") for k in tracker.client.get_run(ids["cot"]).data.metrics)


def test_every_param_that_can_change_a_number_is_a_run_param(repo_root, tmp_path):
    """score.* (the bootstrap behind every interval), the prompts, and the weights' content of a local model."""
    from probmed.cli.pipeline import run_params
    from probmed.core.config import load_params, to_plain
    from probmed.inference.models.config import directory_fingerprint

    cfg = to_plain(load_params(repo_root / "params.yaml"))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "model.safetensors").write_bytes(b"weights")
    cfg["models"]["tiny"]["model_id"] = str(model_dir)
    params = clean_params(run_params(cfg, "tiny", "probmed", "described"))
    assert params["score.bootstrap_resamples"] == str(cfg["score"]["bootstrap_resamples"])
    assert params["score.seed"] == "0" and params["prompts.vanilla"] == cfg["settings"]["vanilla"]
    assert params["model.weights_sha256"] == directory_fingerprint(model_dir)[:16]
    assert params["describer_model.weights_sha256"] == params["model.weights_sha256"]  # the describer is tiny too
    (model_dir / "model.safetensors").write_bytes(b"other weights")  # trained on another machine
    assert clean_params(run_params(cfg, "tiny", "probmed"))["model.weights_sha256"] != params["model.weights_sha256"]


def test_clean_params_redacts_credentials_in_urls():
    """Defence in depth behind the refusal at load: a URL's userinfo or key never becomes an MLflow param."""
    out = clean_params({"api": {"base_url": "http://user:pa55w0rd@127.0.0.1:8000/v1?key=abc123xyz",
                                "extract": ["https://u:pw123456@gw.example/v1"]}})
    assert "pa55w0rd" not in str(out) and "abc123xyz" not in str(out) and "pw123456" not in str(out)
    assert out["api.base_url"] == "http://***@127.0.0.1:8000/v1?key=***"
