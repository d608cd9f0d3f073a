"""The MLflow tracking store every writer shares: evaluation runs, reports, audits and fine-tuning.

Why below reporting and finetune: both write runs into the same store, and the
rules of the store are one set, kept here once:

- the tracking database holds every earlier run, so it is never replaced: an
  existing sqlite file that is empty, not SQLite, corrupt or not MLflow's stops
  the command (:func:`check_tracking_db`, exit 3) before MLflow could
  initialise a new one over it;
- artifacts go to the configured artifact root of this checkout, also after the
  project was moved or copied (:func:`follow_moved_store`);
- one writer at a time: every writer holds :func:`tracking_lock`
  (``<db>.lock``);
- experiments carry ``mlflow.experimentKind = custom_model_development``, so
  MLflow 3 opens them in the classic runs view (:func:`ensure_experiment`);
- run names are unique within an experiment, with the DVC experiment's name
  under `dvc exp run` (:func:`unique_run_name`);
- a run is written under :func:`writing_run`: found by its identity tags or
  created, RUNNING while written, then FINISHED, or FAILED when writing it
  raised; a run whose writer was killed stays RUNNING. Either way the next
  call finds it by its identity and writes it again.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from probmed.core.errors import DatabaseError
from probmed.infra.filelock import FileLock

if TYPE_CHECKING:
    from mlflow import MlflowClient

TAG_PREFIX = "probmed."
# MLflow 3 opens an experiment in its GenAI view unless it is marked as model development
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")
DVC_EXPERIMENT_TAG = f"{TAG_PREFIX}dvc_experiment"
MLFLOW_TABLES = ("experiments", "runs", "alembic_version")


def dvc_experiment() -> str | None:
    """The DVC experiment this process runs in (`dvc exp run` sets DVC_EXP_NAME), or None."""
    return os.environ.get("DVC_EXP_NAME") or None


def dvc_experiment_tags() -> dict[str, str]:
    """The tag naming the DVC experiment this process runs in; none outside `dvc exp run`."""
    exp = dvc_experiment()
    return {DVC_EXPERIMENT_TAG: exp} if exp else {}


# --- the tracking database: never replaced, one writer at a time ------------------


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


def open_tracking_db(tracking_uri: str, artifact_root: str | Path) -> None:
    """What every writer does first, holding :func:`tracking_lock`: refuse a database MLflow would replace
    (:func:`check_tracking_db`), and follow a store that was moved or copied (:func:`follow_moved_store`)."""
    check_tracking_db(tracking_uri)
    old = follow_moved_store(tracking_uri, artifact_root)
    if old is not None:
        print(f"probmed: the MLflow store was moved from {old}: its artifacts now go to "
              f"{Path(artifact_root).resolve()}", file=sys.stderr, flush=True)


def follow_moved_store(tracking_uri: str, artifact_root: str | Path) -> str | None:
    """Point the artifact locations of a sqlite store that was moved or copied at its new artifact root.

    MLflow fixes an experiment's artifact location as an absolute ``file://`` URI when it is created, so a
    project copied or moved elsewhere would go on writing its artifacts into the old checkout's folder. The
    store moved when its locations are ``<X>/<rel>`` for another folder ``X``, where ``rel`` is the artifact
    root seen from the database's folder (``mlruns`` beside ``mlflow.db``): those locations, and the runs'
    artifact URIs under them, are rewritten to the current root. A database shared by several checkouts keeps
    its locations (theirs do not end in the same relative path). Returns the old root, or None when nothing moved.
    Call it holding :func:`tracking_lock`.
    """
    db = sqlite_path(tracking_uri)
    if db is None or not db.exists():
        return None
    root = Path(artifact_root).resolve()
    try:
        rel = os.path.relpath(root, db.resolve().parent)
    except ValueError:  # another drive (Windows): nothing relative to follow
        return None
    con = sqlite3.connect(db)
    try:
        locations = [r[0] for r in con.execute("SELECT artifact_location FROM experiments")]
        old = _moved_root(locations, root, rel)
        if old is None:
            return None
        with con:  # one transaction: every location moves, or none
            for table, column in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
                # as a file URI (what probmed creates) and as a plain path (MLflow's own Default experiment)
                for before, after in ((Path(old).as_uri(), root.as_uri()), (old, str(root))):
                    con.execute(f"UPDATE {table} SET {column} = ? || substr({column}, ?) "  # noqa: S608
                                f"WHERE {column} = ? OR {column} LIKE ? ESCAPE '\\'",
                                (after, len(before) + 1, before, _like_prefix(before + "/")))
    finally:
        con.close()
    return old


def _moved_root(locations: list[str], root: Path, rel: str) -> str | None:
    """The old artifact root among ``locations``: a local folder ending in ``rel`` that is not ``root``, or None."""
    from urllib.parse import unquote, urlparse

    tail = Path(rel).parts
    if not tail or ".." in tail:  # the root lies outside the database's folder: nothing moved with it
        return None
    for location in locations:
        parsed = urlparse(location or "")
        if parsed.scheme not in ("file", "") or not parsed.path.startswith("/"):
            continue  # a remote store (s3://, mlflow-artifacts:) or a relative path does not move with the project
        path = Path(unquote(parsed.path) if parsed.scheme else location)
        for candidate in (path, path.parent):  # an experiment's location is the root, or root/<experiment id>
            if candidate != root and candidate.parts[-len(tail):] == tail:
                return str(candidate)
    return None


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern matching strings that start with ``prefix`` (its own % and _ escaped)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def tracking_lock(tracking_uri: str, wait_s: float | None = None) -> FileLock:
    """The lock every writer of one tracking store takes (beside a sqlite DB, else in the working directory)."""
    path = sqlite_path(tracking_uri)
    lock = path.with_name(path.name + ".lock") if path is not None else Path(".mlflow-tracking.lock")
    return FileLock(lock, f"MLflow tracking store {tracking_uri}", wait_s, DatabaseError,
                    on_wait=lambda msg: print(f"probmed: {msg}", file=sys.stderr, flush=True))


# --- experiments and runs ---------------------------------------------------------


def ensure_experiment(client: MlflowClient, name: str, artifact_root: str | Path = "mlruns") -> str:
    """The id of experiment `name`, created if missing, marked as model development either way."""
    key, value = EXPERIMENT_KIND
    found = client.get_experiment_by_name(name)
    if found is None:
        location = Path(artifact_root).resolve().as_uri()
        return client.create_experiment(name, artifact_location=location, tags={key: value})
    if found.tags.get(key) != value:
        client.set_experiment_tag(found.experiment_id, key, value)
    return found.experiment_id


def unique_run_name(client: MlflowClient, experiment_id: str, base: str, run_id: str | None = None) -> str:
    """`base` (with `` @<DVC experiment>`` under `dvc exp run`), or `` #2``, `` #3``... when another run has it."""
    exp = dvc_experiment()
    base = f"{base} @{exp}" if exp else base
    query = "" if "'" in base else f"attributes.run_name LIKE '{base}%'"  # a quote: compare with every run
    taken = {r.info.run_name for r in client.search_runs([experiment_id], query, max_results=5000)
             if r.info.run_id != run_id}
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base} #{n}"
    return name


def find_run(client: MlflowClient, experiment_id: str, tags: Mapping[str, str]) -> Any:
    """The newest active run carrying all of ``tags`` (full tag names), or None."""
    clause = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
    runs = client.search_runs([experiment_id], clause, order_by=["attributes.start_time DESC"], max_results=1)
    return runs[0] if runs else None


@dataclass(frozen=True)
class RunIdentity:
    """How a run is found again (its identity tags, full names) and, when there is none yet, how it is created."""

    tags: Mapping[str, str]
    name: str
    create_tags: Mapping[str, str]
    unique_name: bool = True  # `name` made unique in the experiment (unique_run_name), else taken as it is
    start_ms: int | None = None


@dataclass(frozen=True)
class OpenRun:
    """A run being written: its id and, when an earlier call wrote it (completely or not), that run."""

    run_id: str
    existing: Any = None


@contextmanager
def writing_run(client: MlflowClient, experiment_id: str, identity: RunIdentity,
                end_ms: int | None = None) -> Iterator[OpenRun]:
    """The one lifecycle of every run probmed writes: find it by its identity or create it, RUNNING while
    the block writes it, FINISHED (at ``end_ms``, else now) after, FAILED when the block raises."""
    from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME

    existing = find_run(client, experiment_id, identity.tags)
    if existing is None:
        name = unique_run_name(client, experiment_id, identity.name) if identity.unique_name else identity.name
        run_id = client.create_run(experiment_id, start_time=identity.start_ms, run_name=name,
                                   tags={**identity.create_tags, MLFLOW_RUN_NAME: name}).info.run_id
    else:  # marked RUNNING until complete: a run a killed or failed call left unfinished is completed
        run_id = existing.info.run_id
        client.update_run(run_id, status="RUNNING")
    try:
        yield OpenRun(run_id, existing)
    except BaseException:
        _mark_failed(client, run_id)
        raise
    client.set_terminated(run_id, "FINISHED", end_time=end_ms)


def _mark_failed(client: MlflowClient, run_id: str) -> None:
    """FAILED, where the store still answers: the error that stopped the writing is the one reported."""
    try:
        client.set_terminated(run_id, "FAILED")
    except Exception:  # noqa: BLE001 - the original error is re-raised by the caller
        pass
