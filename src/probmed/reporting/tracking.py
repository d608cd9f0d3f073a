"""MLflow tracking: one run per (model, setting, question-set version).

Why a module of its own: scoring writes ``metrics.json`` files and knows nothing
about MLflow; this module turns those files into runs researchers compare in
the MLflow UI. Ablations (``cot``, ``described``) are child runs of the model's
``vanilla`` run on the same question set, so the UI nests them.

A run is identified by a key over (model, setting, question set, the question
set's DVC hash and a fingerprint of the logged params). Logging the same key
again updates that run in place (same metrics, artifacts overwritten) instead of
piling up duplicates when ``dvc repro -f`` re-runs a stage; changing the model's
revision, prompt version or seed makes a new run, because it is a new experiment.

Secrets never reach MLflow: params whose name looks like a credential are
dropped (names of environment variables, ``*_env``, are kept: they are not
secrets).

The tracking database holds every earlier run (fine-tuning included), so it is
never replaced: an existing sqlite file that is empty, not SQLite, corrupt, or
not an MLflow database stops the command (:func:`check_tracking_db`, exit 3)
before MLflow could initialise a new one over it. A :class:`Tracker` holds an
exclusive lock (``<db>.lock``) for its life, so concurrent ``track`` calls
(or ``track`` beside ``report``) run one after the other. Each run is written
completely or stays RUNNING (unfinished): the next call finds it by its key
and writes everything again (params, tags, metrics, artifacts) before marking
it FINISHED.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

from probmed.core.errors import DatabaseError, TrackingError
from probmed.core.filelock import FileLock
from probmed.core.secrets import is_secret_name
from probmed.core.settings import ABLATIONS, BASE_SETTING
from probmed.core.config import flatten
from probmed.scoring.score_report import ScoreReport, number

# Per-image-type metrics logged (all categories); the full breakdown is in the artifacts.
IMAGE_TYPE_METRIC_KEYS: tuple[str, ...] = ("accuracy_adv_pairs", "averaged_accuracy", "n_images")
TAG_PREFIX = "probmed."
_MAX_BATCH = 900  # MLflow accepts at most 1000 metrics per batch call



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
        out[metric_name(key)] = text[:6000]
    return out


def metric_name(text: str) -> str:
    """A name MLflow accepts: letters, digits, ``_ - . /`` and spaces; image types slugged."""
    text = text.replace(" - ", "_").replace(" ", "_")
    return re.sub(r"[^A-Za-z0-9_\-./]", "_", text).lower()


def metrics_from_scores(scores: ScoreReport | Mapping[str, Any]) -> dict[str, float]:
    """The metrics logged for one run, from its score result (or a ``probmed score`` metrics dict).

    Every numeric leaf of ``overall``, ``by_category``, ``procedural`` and the
    random baseline's ``overall`` / ``by_category``; for ``by_image_type`` only
    the headline keys (the complete tables are artifacts). Nulls and NaNs are left out, never logged as 0.
    """
    if not isinstance(scores, ScoreReport):
        scores = ScoreReport.from_dict(scores)
    out: dict[str, float] = {}
    for section in ("overall", "by_category", "procedural", "random_baseline.overall", "random_baseline.by_category"):
        for key, value in scores.leaves(section).items():
            found = number(value)
            if found is not None:
                out[metric_name(f"{section}.{key}")] = found
    for image_type in scores.image_types:
        for category in scores.categories_of(image_type):
            for key in IMAGE_TYPE_METRIC_KEYS:
                found = number(scores.category(category, image_type).get(key))
                if found is not None:
                    out[metric_name(f"by_image_type.{image_type}.{category}.{key}")] = found
    return out


def run_key(spec: RunSpec, questions_hash: str, params: Mapping[str, str]) -> str:
    blob = json.dumps(
        [spec.model, spec.setting, spec.question_set, questions_hash, sorted(params.items())], sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# --- the tracking database: never replaced, one writer at a time ------------------

MLFLOW_TABLES = ("experiments", "runs", "alembic_version")


def sqlite_path(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` tracking URI (None for any other store)."""
    if not str(tracking_uri).startswith("sqlite:///"):
        return None
    return Path(str(tracking_uri)[len("sqlite:///"):].split("?", 1)[0])


def check_tracking_db(tracking_uri: str) -> None:
    """DatabaseError (exit 3) when an existing sqlite tracking DB is empty, corrupt or not MLflow's.

    MLflow would silently create a new, empty database over such a file, losing every earlier run;
    a missing file is fine (MLflow creates it)."""
    path = sqlite_path(tracking_uri)
    if path is None or not path.exists():
        return
    keep = ("restore it (from a backup, `dvc pull` or `git`), or move it away to start a new one; "
            "probmed never replaces a tracking database")
    if path.stat().st_size == 0:
        raise DatabaseError(f"tracking database {path} exists but is empty (0 bytes): {keep}")
    with open(path, "rb") as fh:
        if fh.read(16) != b"SQLite format 3\x00":
            raise DatabaseError(f"tracking database {path} is not an SQLite database (corrupt?): {keep}")
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            check = con.execute("PRAGMA quick_check").fetchone()[0]
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"tracking database {path} cannot be read ({exc}): {keep}") from None
    if check != "ok":
        raise DatabaseError(f"tracking database {path} is corrupt (integrity check: {check}): {keep}")
    missing = [t for t in MLFLOW_TABLES if t not in tables]
    if missing:
        raise DatabaseError(f"tracking database {path} is not an MLflow database (no table {missing[0]!r}): {keep}")


def tracking_lock(tracking_uri: str, wait_s: float | None = None) -> FileLock:
    """The lock every writer of one tracking store takes (beside a sqlite DB, else in the working directory)."""
    path = sqlite_path(tracking_uri)
    lock = path.with_name(path.name + ".lock") if path is not None else Path(".mlflow-tracking.lock")
    return FileLock(lock, f"MLflow tracking store {tracking_uri}", wait_s, DatabaseError,
                    on_wait=lambda msg: print(f"probmed: {msg}", file=sys.stderr, flush=True))


# --- MLflow ---------------------------------------------------------------------


class Tracker:
    """Logs evaluation runs into one MLflow experiment; holds the tracking store's lock until `close()`."""

    def __init__(self, tracking_uri: str, experiment: str, artifact_root: str | Path = "mlruns",
                 lock_wait_s: float | None = None) -> None:
        self._lock = tracking_lock(tracking_uri, lock_wait_s).acquire()
        try:
            check_tracking_db(tracking_uri)
            self.client = MlflowClient(tracking_uri=tracking_uri)
            found = self.client.get_experiment_by_name(experiment)
            if found is None:
                location = Path(artifact_root).resolve().as_uri()
                self.experiment_id = self.client.create_experiment(experiment, artifact_location=location)
            else:
                self.experiment_id = found.experiment_id
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
        clauses = [f"tags.`{TAG_PREFIX}{k}` = '{v}'" for k, v in tags.items()]
        runs = self.client.search_runs(
            [self.experiment_id], " and ".join(clauses), order_by=["attributes.start_time DESC"], max_results=1
        )
        return runs[0] if runs else None

    def log(self, spec: RunSpec, repo_dir: str | Path = ".") -> str:
        """Create or update the run for ``spec``; returns its run id."""
        metrics = metrics_from_scores(ScoreReport.load(spec.metrics_path))
        questions_hash = file_md5(spec.questions_path) if spec.questions_path else "unknown"
        params = clean_params(
            {**spec.params, "run": {"model": spec.model, "setting": spec.setting, "question_set": spec.question_set}}
        )
        key = run_key(spec, questions_hash, params)
        tags = {
            f"{TAG_PREFIX}model": spec.model,
            f"{TAG_PREFIX}setting": spec.setting,
            f"{TAG_PREFIX}question_set": spec.question_set,
            f"{TAG_PREFIX}questions_dvc_md5": questions_hash,
            f"{TAG_PREFIX}run_key": key,
            f"{TAG_PREFIX}git_commit": git_commit(repo_dir),
            "mlflow.source.git.commit": git_commit(repo_dir).removesuffix("+dirty"),
        }
        parent_id = None
        if spec.setting in ABLATIONS:
            parent = self.find_run(
                model=spec.model, setting=BASE_SETTING, question_set=spec.question_set, questions_dvc_md5=questions_hash
            )
            if parent is not None:
                parent_id = parent.info.run_id
                tags[MLFLOW_PARENT_RUN_ID] = parent_id
            else:
                tags[f"{TAG_PREFIX}parent_missing"] = "vanilla run not logged yet"
        run_id = self._open_run(key, f"{spec.model}/{spec.setting}/{spec.question_set}", tags, parent_id)
        # everything, every time: a run left unfinished by a killed call is completed here
        self.client.log_batch(run_id, params=[Param(k, v) for k, v in params.items()])
        self.client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        items = [Metric(k, v, 0, 0) for k, v in sorted(metrics.items())]
        for start in range(0, len(items), _MAX_BATCH):
            self.client.log_batch(run_id, metrics=items[start : start + _MAX_BATCH])
        self._log_artifacts(run_id, spec)
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def _open_run(self, key: str, name: str, tags: Mapping[str, str], parent_id: str | None) -> str:
        """The run with this key (marked RUNNING again until it is complete), or a new RUNNING one."""
        existing = self.find_run(run_key=key)
        if existing is None:
            run = self.client.create_run(self.experiment_id, run_name=name, tags={**tags, MLFLOW_RUN_NAME: name})
            return run.info.run_id
        run_id = existing.info.run_id
        self.client.update_run(run_id, status="RUNNING")
        if parent_id and existing.data.tags.get(MLFLOW_PARENT_RUN_ID) != parent_id:
            self.client.set_tag(run_id, MLFLOW_PARENT_RUN_ID, parent_id)
        return run_id

    def _log_artifacts(self, run_id: str, spec: RunSpec) -> None:
        self.client.log_artifact(run_id, str(spec.metrics_path), "scores")
        for path in spec.artifact_paths:
            path = Path(path)
            if path.is_dir():
                self.client.log_artifacts(run_id, str(path), f"scores/{path.name}")
            elif path.is_file():
                self.client.log_artifact(run_id, str(path), "scores")
        if spec.predictions_path is not None:
            if not Path(spec.predictions_path).is_file():
                raise TrackingError(f"predictions file {spec.predictions_path} not found")
            self.client.log_artifact(run_id, str(spec.predictions_path), "predictions")

    def log_report(self, report_dir: str | Path, question_set: str = "all") -> str:
        """Attach a report directory to a ``report`` run (one per question set, updated in place)."""
        report_dir = Path(report_dir)
        existing = self.find_run(kind="report", question_set=question_set)
        if existing is None:
            run_id = self.client.create_run(
                self.experiment_id,
                run_name=f"report/{question_set}",
                tags={f"{TAG_PREFIX}kind": "report", f"{TAG_PREFIX}question_set": question_set},
            ).info.run_id
        else:
            run_id = existing.info.run_id
            self.client.update_run(run_id, status="RUNNING")
        self.client.set_tag(run_id, f"{TAG_PREFIX}git_commit", git_commit())
        self.client.log_artifacts(run_id, str(report_dir), "report")
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_audit(self, metrics: Mapping[str, float], audit_dir: str | Path, question_set: str) -> str:
        """A question set's audit (headline metrics, audit.md / audit.json) as an ``audit`` run, updated in place."""
        existing = self.find_run(kind="audit", question_set=question_set)
        if existing is None:
            run_id = self.client.create_run(
                self.experiment_id,
                run_name=f"audit/{question_set}",
                tags={f"{TAG_PREFIX}kind": "audit", f"{TAG_PREFIX}question_set": question_set},
            ).info.run_id
        else:
            run_id = existing.info.run_id
            self.client.update_run(run_id, status="RUNNING")
        self.client.set_tag(run_id, f"{TAG_PREFIX}git_commit", git_commit())
        now = int(time.time() * 1000)  # the latest audit of the set is the one a metric shows
        self.client.log_batch(run_id, metrics=[Metric(metric_name(k), float(v), now, 0) for k, v in sorted(metrics.items())])
        self.client.log_artifacts(run_id, str(audit_dir), "audit")
        self.client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_reliance(self, metrics: Mapping[tuple[str, str], Mapping[str, float]],
                     run_ids: Mapping[str, str] | None = None) -> dict[str, str]:
        """Each model's visual reliance (probmed.reporting.comparisons.reliance_metrics) on its ``vanilla`` run,
        the parent of its image-control runs: the one `probmed track` wrote (``run_ids``, its runs.json), else
        the newest; returns ``{"<set>-<model>": run_id}`` of the runs written to."""
        logged: dict[str, str] = {}
        now = int(time.time() * 1000)
        for (question_set, model), values in metrics.items():
            run_id = (run_ids or {}).get(f"{question_set}-{model}-{BASE_SETTING}")
            if run_id is None:
                run = self.find_run(model=model, setting=BASE_SETTING, question_set=question_set)
                run_id = run.info.run_id if run is not None else None
            if run_id is None or not values:
                continue
            batch = [Metric(metric_name(k), float(v), now, 0) for k, v in sorted(values.items())]
            for start in range(0, len(batch), _MAX_BATCH):
                self.client.log_batch(run_id, metrics=batch[start:start + _MAX_BATCH])
            logged[f"{question_set}-{model}"] = run_id
        return logged

def log_model_runs(tracker: Tracker, specs: Iterable[RunSpec], repo_dir: str | Path = ".") -> dict[str, str]:
    """Log a model's runs, vanilla first so ablations find their parent; returns {setting: run_id}."""
    ordered = sorted(specs, key=lambda s: (s.setting != BASE_SETTING, s.setting))
    return {spec.setting: tracker.log(spec, repo_dir) for spec in ordered}
