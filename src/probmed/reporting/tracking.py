"""MLflow tracking: one run per (model, setting, question-set version).

Why a module of its own: scoring writes ``metrics.json`` files and knows nothing
about MLflow; this module turns those files into runs researchers compare in
the MLflow UI. Ablations (``cot``, ``described``) are child runs of the model's
``vanilla`` run on the same question set, so the UI nests them.

What the UI shows, and why:

- experiments carry ``mlflow.experimentKind = custom_model_development``, so
  MLflow 3 opens them in the classic runs view, not its GenAI view;
- an evaluation run's duration is its own work: it starts when the first of its
  questions was asked (the predictions' work log under build/logs/ records it;
  cached answers keep their time) and lasts as long as the answering plus the
  scoring took (the score directory's work log), not the time the pipeline spent on
  other stages in between, nor when `probmed track` logged it;
- its question set is an MLflow dataset input (name, digest = the question
  table's DVC hash, source, schema), which fills the Dataset column;
- a few dozen grouped metrics (probmed.reporting.run_metrics), the long tail
  as a table artifact, per-category tables, a per-category figure and the
  predictions as artifacts; the report is logged once, in its own run;
- run names are unique within an experiment (``<set>/<model>/<setting>``, then
  `` #2``...); under `dvc exp run` the DVC experiment's name is a tag
  (``probmed.dvc_experiment``) and part of the name.

A run is identified by what produced it: a key over (model, setting, question
set, the question table's DVC hash, every param that can change a number --
the model entry with its weights' fingerprint, the prompts, the seed, the
scorer's ``score.*`` -- and the content of the predictions and of the scores).
So a run is never rewritten: `dvc exp run -S score.bootstrap_resamples=300`
changes the scores, hence the key, and creates the experiment's own runs
(tagged ``probmed.dvc_experiment`` and named ``... @<experiment>``), leaving the
baseline's runs, metrics, tags and artifacts as they were; an evaluation the
experiment did not recompute has the same key, is found FINISHED and is neither
re-logged nor re-tagged. Code and data versions reach the key through the
outputs they produce (a code change that changes no number is the same
evaluation); the commit and the pinned data (``data.dvc``) are tags.

Secrets never reach MLflow: params whose name looks like a credential are
dropped (names of environment variables, ``*_env``, are kept: they are not
secrets), and the credentials of any URL in a value are masked (refused when
params are loaded; masked here again as defence in depth).

The store's rules (a tracking database is never replaced, one writer at a time,
experiments marked as model development, unique run names, the run lifecycle)
are probmed.infra.tracking_store's, shared with fine-tuning. A :class:`Tracker`
holds the store's lock for its life, so concurrent ``track`` calls (or
``track`` beside ``report``) run one after the other. Each run is written
completely, or stays RUNNING (its writer was killed) or FAILED (writing it
raised): the next call finds it by its key and writes everything again
(params, tags, metrics, artifacts) before marking it FINISHED; a FINISHED run
is left alone.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

from probmed.core.config import flatten
from probmed.core.errors import TrackingError
from probmed.core.secrets import is_secret_name, redact_urls
from probmed.core.settings import ABLATIONS, BASE_SETTING
from probmed.infra.clock import epoch_ms, read_work_log
from probmed.infra.tracking_store import (
    TAG_PREFIX,
    RunIdentity,
    dvc_experiment_tags,
    ensure_experiment,
    find_run,
    open_tracking_db,
    tracking_lock,
    writing_run,
)
from probmed.reporting.run_metrics import metric_table, metrics_from_scores
from probmed.scoring.score_report import ScoreReport

_MAX_BATCH = 900  # MLflow accepts at most 1000 metrics per batch call
# MLflow 3.17 opens an experiment on its GenAI overview whatever the experiment's tags say (the sidebar's
# GenAI / Model training switch decides, kept in the browser); the runs table opens with this query
RUNS_TABLE_QUERY = "workflowType=machine_learning"
# a view of the runs table with the headline metrics as columns: the UI loads the experiment tag
# `mlflow.sharedViewState.<key>` for `?viewStateShareKey=<key>` (otherwise every metric column is hidden)
HEADLINE_VIEW = "headline"
SHARED_VIEW_TAG = "mlflow.sharedViewState."
HEADLINE_PREFIXES = ("strict/", "averaged/overall", "random/strict_overall")  # run_metrics' keys, by prefix
HEADLINE_PARAMS = ("model.weights_sha256", "score.bootstrap_resamples")



@dataclass
class RunSpec:
    """Everything one evaluation run logs."""

    model: str
    setting: str
    question_set: str
    metrics_path: Path
    questions_path: Path | None = None
    predictions_path: Path | None = None
    params: dict[str, Any] = field(default_factory=dict)
    artifact_paths: list[Path] = field(default_factory=list)


# --- small pure helpers ----------------------------------------------------------


def file_md5(path: str | Path) -> str:
    """MD5 of a file's bytes: the hash DVC 3 records for a file output in dvc.lock."""
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_commit(repo_dir: str | Path = ".") -> str:
    """The HEAD commit (``+dirty`` when tracked files differ), or ``unknown`` outside git."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo_dir, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo_dir,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")




def clean_params(params: Mapping[str, Any]) -> dict[str, str]:
    """Flattened, secret-free, string-valued params (MLflow caps values at 6000 chars)."""
    out = {}
    for key, value in flatten(dict(params)).items():
        if is_secret_name(key):
            continue
        text = json.dumps(value) if isinstance(value, (list, dict)) else ("" if value is None else str(value))
        out[metric_name(key)] = redact_urls(text)[:6000]
    return out


def metric_name(text: str) -> str:
    """A name MLflow accepts: letters, digits, ``_ - . /`` and spaces; image types slugged."""
    text = text.replace(" - ", "_").replace(" ", "_")
    return re.sub(r"[^A-Za-z0-9_\-./]", "_", text).lower()


def read_work(score_dir: str | Path, predictions_path: str | Path | None = None) -> dict[str, Any]:
    """When a run's work happened: the answering (the predictions' work log) and the scoring (the score
    directory's), from build/logs/ (infra.clock.work_log_path); {} parts where a log is absent (a run made
    before logs existed, or pulled from a DVC remote: logs are no output)."""
    try:
        work = dict(read_work_log(score_dir))
        if predictions_path is not None:
            work.update({k: v for k, v in read_work_log(predictions_path).items() if k == "answering"})
    except ValueError as exc:
        raise TrackingError(str(exc)) from None
    return work


def _span_ms(block: Mapping[str, Any]) -> tuple[int | None, int]:
    """(start, duration) in ms of one part of the work (answering, scoring); (None, 0) where unknown."""
    start, end = block.get("started_at"), block.get("finished_at")
    try:
        begin = epoch_ms(start) if start else None
        return begin, (max(0, epoch_ms(end) - begin) if begin is not None and end else 0)
    except ValueError as exc:
        raise TrackingError(f"work log: not an ISO 8601 time ({exc})") from None


def work_interval(work: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(start, end) in epoch ms: from the first answer asked, lasting the answering plus the scoring.

    Not answering start to scoring end: between the two the pipeline runs other stages (the
    random baseline once showed 10 minutes of waiting as its duration)."""
    answer_start, answering = _span_ms(work.get("answering") or {})
    score_start, scoring = _span_ms(work.get("scoring") or {})
    start = answer_start if answer_start is not None else score_start
    return start, (None if start is None else start + answering + scoring)


def runs_table_url(server: str, experiment_id: str) -> str:
    """The link that opens an experiment on its runs table with the headline metrics shown."""
    return (f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs?{RUNS_TABLE_QUERY}"
            f"&viewStateShareKey={HEADLINE_VIEW}")


def headline_view(metric_keys: Iterable[str]) -> dict[str, Any]:
    """The runs table's view state: dataset, duration, the headline metrics, the weights and the DVC experiment."""
    metrics = sorted(k for k in set(metric_keys) if k.startswith(HEADLINE_PREFIXES))
    columns = ["attributes.`Dataset`", "attributes.`Duration`", *(f"metrics.`{k}`" for k in metrics),
               *(f"params.`{k}`" for k in HEADLINE_PARAMS), "tags.`probmed.dvc_experiment`"]
    return {"selectedColumns": columns, "orderByKey": "attributes.start_time", "orderByAsc": False}


def log_question_set(client: MlflowClient, run_id: str, path: str | Path, name: str, digest: str) -> None:
    """The question table as the run's MLflow dataset input: name, digest (its DVC hash), source, schema."""
    import mlflow.data
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    from probmed.infra.tables import read_parquet

    frame = read_parquet(path, "question table")
    with warnings.catch_warnings():  # MLflow registers the local source twice and says so; either is right
        warnings.filterwarnings("ignore", message="The specified dataset source can be interpreted in multiple ways")
        dataset = mlflow.data.from_pandas(frame, source=str(path), name=name, digest=digest)
    tag = InputTag(MLFLOW_DATASET_CONTEXT, "evaluation")
    client.log_inputs(run_id, datasets=[DatasetInput(dataset._to_mlflow_entity(), tags=[tag])])


def run_key(spec: RunSpec, questions_hash: str, params: Mapping[str, str], outputs: Sequence[str] = ()) -> str:
    """The identity of an evaluation: what was asked, of which questions, with which params, and what came out."""
    blob = json.dumps(
        [spec.model, spec.setting, spec.question_set, questions_hash, sorted(params.items()), list(outputs)],
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def output_hashes(spec: RunSpec) -> list[str]:
    """The content of what the evaluation produced: its predictions and its scores (metrics.json)."""
    paths = [spec.predictions_path, spec.metrics_path]
    return [file_md5(p) if p is not None and Path(p).is_file() else "" for p in paths]


def data_version(repo_dir: str | Path = ".") -> str:
    """The pinned raw data: the md5 ``data.dvc`` records (``unknown`` without one)."""
    path = Path(repo_dir) / "data.dvc"
    if not path.is_file():
        return "unknown"
    import yaml

    outs = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("outs") or [{}]
    return str(outs[0].get("md5") or "unknown")


# --- MLflow ---------------------------------------------------------------------


class Tracker:
    """Logs evaluation runs into one MLflow experiment; holds the tracking store's lock until `close()`."""

    def __init__(self, tracking_uri: str, experiment: str, artifact_root: str | Path = "mlruns",
                 lock_wait_s: float | None = None) -> None:
        self._lock = tracking_lock(tracking_uri, lock_wait_s).acquire()
        try:
            open_tracking_db(tracking_uri, artifact_root)
            self.client = MlflowClient(tracking_uri=tracking_uri)
            self.experiment_id = ensure_experiment(self.client, experiment, artifact_root)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._lock.release()

    def __enter__(self) -> "Tracker":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def find_run(self, **tags: str):
        """The newest active run carrying all the given ``probmed.*`` tags, or None."""
        return find_run(self.client, self.experiment_id, {f"{TAG_PREFIX}{k}": v for k, v in tags.items()})

    def run_key_of(self, run_id: str) -> str:
        """A run's key (:func:`run_key`, tag ``probmed.run_key``): what made it, the same in every clone."""
        return str(self.client.get_run(run_id).data.tags.get(f"{TAG_PREFIX}run_key", ""))

    def log(self, spec: RunSpec, repo_dir: str | Path = ".", parent_id: str | None = None) -> str:
        """The run of ``spec``: found by its key (FINISHED: left as it is) or written; returns its run id.

        ``parent_id``: the ``vanilla`` run of an ablation (log_model_runs passes the one it just logged)."""
        scores = ScoreReport.load(spec.metrics_path)
        questions_hash = file_md5(spec.questions_path) if spec.questions_path else "unknown"
        params = clean_params(
            {**spec.params, "run": {"model": spec.model, "setting": spec.setting, "question_set": spec.question_set}}
        )
        key = run_key(spec, questions_hash, params, output_hashes(spec))
        done = self.find_run(run_key=key)
        if done is not None and done.info.status == "FINISHED":  # this evaluation is logged: nothing to re-log or re-tag
            return str(done.info.run_id)
        start_ms, end_ms = work_interval(read_work(Path(spec.metrics_path).parent, spec.predictions_path))
        tags = self._run_tags(spec, questions_hash, key, repo_dir, parent_id)
        identity = RunIdentity({f"{TAG_PREFIX}run_key": key}, f"{spec.question_set}/{spec.model}/{spec.setting}",
                               tags, start_ms=start_ms)
        with writing_run(self.client, self.experiment_id, identity, end_ms) as run:
            logged, has_dataset = {}, False
            if run.existing is not None:
                logged, has_dataset = dict(run.existing.data.params), bool(run.existing.inputs.dataset_inputs)
            self.client.log_batch(run.run_id, params=[Param(k, v) for k, v in params.items() if k not in logged])
            if not has_dataset and spec.questions_path is not None and Path(spec.questions_path).is_file():
                log_question_set(self.client, run.run_id, spec.questions_path, spec.question_set, questions_hash)
            self.client.log_batch(run.run_id, tags=[RunTag(k, v) for k, v in tags.items()])
            step_ms = end_ms or int(time.time() * 1000)
            values = metrics_from_scores(scores)
            self.client.log_batch(run.run_id, metrics=[Metric(k, v, step_ms, 0) for k, v in sorted(values.items())])
            self._log_artifacts(run.run_id, spec, scores)
        self._show_headline(values)
        return run.run_id

    def _run_tags(self, spec: RunSpec, questions_hash: str, key: str, repo_dir: str | Path,
                  parent_id: str | None = None) -> dict[str, str]:
        """The run's tags: what it evaluated, its key, the commit and data, the DVC experiment, its parent run."""
        commit = git_commit(repo_dir)
        tags = {
            f"{TAG_PREFIX}model": spec.model,
            f"{TAG_PREFIX}setting": spec.setting,
            f"{TAG_PREFIX}question_set": spec.question_set,
            f"{TAG_PREFIX}questions_dvc_md5": questions_hash,
            f"{TAG_PREFIX}run_key": key,
            f"{TAG_PREFIX}git_commit": commit,
            "mlflow.source.git.commit": commit.removesuffix("+dirty"),
            f"{TAG_PREFIX}data_dvc_md5": data_version(repo_dir),
        }
        tags.update(dvc_experiment_tags())
        if spec.setting in ABLATIONS:
            parent = parent_id or self._newest_vanilla(spec, questions_hash)
            if parent is not None:
                tags[MLFLOW_PARENT_RUN_ID] = parent
            else:
                tags[f"{TAG_PREFIX}parent_missing"] = "vanilla run not logged yet"
        return tags

    def _show_headline(self, metric_keys: Iterable[str]) -> None:
        """Keep the experiment's headline view (runs_table_url) listing every headline metric logged so far."""
        tag = f"{SHARED_VIEW_TAG}{HEADLINE_VIEW}"
        current = self.client.get_experiment(self.experiment_id).tags.get(tag)
        known = {c[len("metrics.`"):-1] for c in (json.loads(current)["selectedColumns"] if current else [])
                 if c.startswith("metrics.`")}
        view = headline_view(known | set(metric_keys))
        if current is None or json.loads(current) != view:
            self.client.set_experiment_tag(self.experiment_id, tag, json.dumps(view))

    def _newest_vanilla(self, spec: RunSpec, questions_hash: str) -> str | None:
        found = self.find_run(model=spec.model, setting=BASE_SETTING, question_set=spec.question_set,
                              questions_dvc_md5=questions_hash)
        return None if found is None else str(found.info.run_id)

    def _log_artifacts(self, run_id: str, spec: RunSpec, scores: ScoreReport) -> None:
        """Scores (metrics.json, the per-category tables, every other number as one table), a figure, predictions."""
        self.client.log_artifact(run_id, str(spec.metrics_path), "scores")
        for path in spec.artifact_paths:
            path = Path(path)
            if path.is_dir():
                self.client.log_artifacts(run_id, str(path), f"scores/{path.name}")
            elif path.is_file():
                self.client.log_artifact(run_id, str(path), "scores")
        self.client.log_table(run_id, metric_table(scores), "scores/all_metrics.json")
        with tempfile.TemporaryDirectory() as tmp:
            figure = per_category_figure(spec, scores, Path(tmp) / "per_category.png")
            if figure is not None:
                self.client.log_artifact(run_id, str(figure), "plots")
        if spec.predictions_path is not None:
            if not Path(spec.predictions_path).is_file():
                raise TrackingError(f"predictions file {spec.predictions_path} not found")
            self.client.log_artifact(run_id, str(spec.predictions_path), "predictions")

    def log_report(self, report_dir: str | Path, started_ms: int | None = None, question_set: str = "all") -> str:
        """The report as a run of its own: one per distinct report (its metrics summary), never rewritten."""
        report_dir = Path(report_dir)
        summary = report_dir / "metrics.json"
        key = file_md5(summary) if summary.is_file() else "unknown"
        found_by = {f"{TAG_PREFIX}kind": "report", f"{TAG_PREFIX}question_set": question_set,
                    f"{TAG_PREFIX}report_key": key}
        done = find_run(self.client, self.experiment_id, found_by)
        if done is not None and done.info.status == "FINISHED":  # this report is logged (same numbers)
            return str(done.info.run_id)
        tags = {**found_by, f"{TAG_PREFIX}git_commit": git_commit()}
        tags.update(dvc_experiment_tags())
        identity = RunIdentity(found_by, f"report/{question_set}", tags, start_ms=started_ms)
        with writing_run(self.client, self.experiment_id, identity) as run:
            self.client.log_batch(run.run_id, tags=[RunTag(k, v) for k, v in tags.items()])
            self.client.log_artifacts(run.run_id, str(report_dir), "report")
        return run.run_id

    def log_audit(self, metrics: Mapping[str, float], audit_dir: str | Path, question_set: str) -> str:
        """A question set's audit (headline metrics, audit.md / audit.json) as an ``audit`` run: one per distinct
        audit (its metrics), never rewritten, so an experiment's audit is a run of its own."""
        values = {metric_name(k): float(v) for k, v in sorted(metrics.items())}
        key = hashlib.sha256(json.dumps([question_set, values], sort_keys=True).encode()).hexdigest()[:16]
        found_by = {f"{TAG_PREFIX}kind": "audit", f"{TAG_PREFIX}question_set": question_set,
                    f"{TAG_PREFIX}audit_key": key}
        done = find_run(self.client, self.experiment_id, found_by)
        if done is not None and done.info.status == "FINISHED":
            return str(done.info.run_id)
        tags = {**found_by, f"{TAG_PREFIX}git_commit": git_commit(), **dvc_experiment_tags()}
        identity = RunIdentity(found_by, f"audit/{question_set}", tags)
        with writing_run(self.client, self.experiment_id, identity) as run:
            now = int(time.time() * 1000)
            self.client.log_batch(run.run_id, metrics=[Metric(k, v, now, 0) for k, v in values.items()])
            self.client.log_artifacts(run.run_id, str(audit_dir), "audit")
        return run.run_id

    def log_reliance(self, metrics: Mapping[tuple[str, str], Mapping[str, float]],
                     run_ids: Mapping[str, str] | None = None) -> dict[str, str]:
        """Each model's visual reliance (probmed.reporting.comparisons.reliance_metrics) on its ``vanilla`` run,
        the parent of its image-control runs: the one `probmed track` wrote (``run_ids``, its runs.json), else
        the newest; returns ``{"<set>-<model>": run_id}`` of the runs written to.

        A run that already holds other reliance values is left alone (an experiment that changed only the
        report must not rewrite a baseline run; its report run has the numbers); the same values are not re-logged."""
        logged: dict[str, str] = {}
        now = int(time.time() * 1000)
        for (question_set, model), values in metrics.items():
            run_id = (run_ids or {}).get(f"{question_set}-{model}-{BASE_SETTING}")
            if run_id is None:
                run = self.find_run(model=model, setting=BASE_SETTING, question_set=question_set)
                run_id = run.info.run_id if run is not None else None
            if run_id is None or not values:
                continue
            wanted = {metric_name(k): float(v) for k, v in sorted(values.items())}
            have = {k: v for k, v in self.client.get_run(run_id).data.metrics.items() if k.startswith("reliance/")}
            if have:
                if have != wanted:
                    continue
                logged[f"{question_set}-{model}"] = run_id
                continue
            batch = [Metric(k, v, now, 0) for k, v in wanted.items()]
            for start in range(0, len(batch), _MAX_BATCH):
                self.client.log_batch(run_id, metrics=batch[start:start + _MAX_BATCH])
            logged[f"{question_set}-{model}"] = run_id
        return logged

def per_category_figure(spec: RunSpec, scores: ScoreReport, path: Path) -> Path | None:
    """The run's accuracy per category with and without adversarial pairs (the report's Figure 1, one run)."""
    from probmed.reporting.plots import figure_strict_vs_averaged
    from probmed.reporting.runs import FigureInput, Run

    return figure_strict_vs_averaged(FigureInput(spec.question_set, [Run(spec.question_set, spec.model, spec.setting,
                                                                         scores)]), path)


def log_model_runs(tracker: Tracker, specs: Iterable[RunSpec], repo_dir: str | Path = ".") -> dict[str, str]:
    """Log a model's runs, vanilla first: its ablations are its children; returns {setting: run_id}."""
    ordered = sorted(specs, key=lambda s: (s.setting != BASE_SETTING, s.setting))
    ids: dict[str, str] = {}
    for spec in ordered:
        ids[spec.setting] = tracker.log(spec, repo_dir, ids.get(BASE_SETTING))
    return ids
