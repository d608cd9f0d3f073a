"""The MLflow store follows a moved or copied project (a real sqlite store, real artifacts)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

from probmed.infra.tracking_store import ensure_experiment, open_tracking_db, tracking_lock

pytestmark = pytest.mark.slow  # each writer is a process of its own, as each probmed command is

WRITER = """
import sys
from pathlib import Path
from mlflow import MlflowClient
from probmed.infra.tracking_store import ensure_experiment, open_tracking_db, tracking_lock
uri, root = "sqlite:///mlflow.db", "mlruns"  # the default params: relative to the project
with tracking_lock(uri):
    open_tracking_db(uri, root)
    client = MlflowClient(tracking_uri=uri)
    run = client.create_run(ensure_experiment(client, "probmed-test", root))
    Path("note.txt").write_text(sys.argv[1])
    client.log_artifact(run.info.run_id, "note.txt")
    client.set_terminated(run.info.run_id)
print(run.info.artifact_uri)
"""


def log_one_artifact(project: Path, monkeypatch, text: str) -> str:
    """What a writer does in ``project`` with the default params: returns the run's artifact URI."""
    monkeypatch.chdir(project)
    done = subprocess.run([sys.executable, "-c", WRITER, text], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    sys.stderr.write(done.stderr)
    return done.stdout.strip().splitlines()[-1]


def artifacts(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("note.txt")}


def test_a_copied_project_writes_its_artifacts_into_its_own_folder(tmp_path, monkeypatch, capsys):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    first = log_one_artifact(old, monkeypatch, "first")
    assert first.startswith((old / "mlruns").resolve().as_uri())
    shutil.copytree(old, new)
    before = artifacts(old / "mlruns")

    second = log_one_artifact(new, monkeypatch, "second")

    assert second.startswith((new / "mlruns").resolve().as_uri())  # before the fix: the old checkout's folder
    assert artifacts(old / "mlruns") == before  # nothing written into the old checkout
    assert len(artifacts(new / "mlruns")) == 2
    assert "the MLflow store was moved from" in capsys.readouterr().err
    client = MlflowClient(tracking_uri="sqlite:///mlflow.db")  # the copied run's artifacts are read from the copy
    (exp,) = [e for e in client.search_experiments() if e.name == "probmed-test"]
    assert exp.artifact_location == (new / "mlruns").resolve().as_uri()
    for run in client.search_runs([exp.experiment_id]):
        assert run.info.artifact_uri.startswith(exp.artifact_location + "/")
        assert [f.path for f in client.list_artifacts(run.info.run_id)] == ["note.txt"]
    default = client.get_experiment("0")  # MLflow's own Default experiment moves too
    assert default.artifact_location == str((new / "mlruns" / "0").resolve())  # a plain path there


def test_a_store_that_did_not_move_is_left_as_it_is(tmp_path, monkeypatch, capsys):
    log_one_artifact(tmp_path, monkeypatch, "first")
    second = log_one_artifact(tmp_path, monkeypatch, "second")
    assert second.startswith((tmp_path / "mlruns").resolve().as_uri())
    assert "moved" not in capsys.readouterr().err


def test_a_database_shared_by_two_checkouts_keeps_its_locations(tmp_path, monkeypatch):
    """A database outside the checkouts: its artifacts stay where they were first written, for both."""
    shared = tmp_path / "store" / "mlflow.db"
    shared.parent.mkdir()
    uri = f"sqlite:///{shared}"
    locations = []
    for name in ("a", "b"):
        checkout = tmp_path / name
        checkout.mkdir()
        monkeypatch.chdir(checkout)  # one process: one absolute database URI, so MLflow's cached store is right
        with tracking_lock(uri):
            open_tracking_db(uri, "mlruns")
            client = MlflowClient(tracking_uri=uri)
            exp = ensure_experiment(client, "probmed-test", "mlruns")
            locations.append(client.get_experiment(exp).artifact_location)
    assert locations == [(tmp_path / "a" / "mlruns").resolve().as_uri()] * 2
