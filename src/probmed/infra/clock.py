"""Timestamps the outputs record (when answers were asked, when a run was scored): ISO 8601, UTC.

The MLflow run of an evaluation starts when its first question was asked and
ends when it was scored, whenever `probmed track` logs it. Those times are kept
in work logs under ``build/logs/`` (:func:`work_log_path`), never inside a
DVC-tracked output: an output must be byte-identical across two runs of the
same inputs.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

from probmed.infra.io import write_text_atomic

WORK_SUFFIX = ".work.json"


def work_log_path(output: str | Path) -> Path:
    """Where the timings of an output go: ``build/logs/<its path below build/>.work.json``.

    Not beside the output: build/scores and build/predictions are whole-directory dependencies of
    `track` and `report`, so a file there would change their hashes on every run (and be missing after
    `dvc pull`). An output outside a ``build`` folder gets a ``logs/`` folder beside it."""
    path = Path(output)
    name = path.name.removesuffix(".parquet") + WORK_SUFFIX
    if "build" in path.parts[:-1]:
        i = path.parts.index("build")
        return Path(*path.parts[: i + 1], "logs", *path.parts[i + 1 : -1], name)
    return path.parent / "logs" / name


def write_work_log(output: str | Path, work: dict[str, Any]) -> Path:
    """Write an output's work log (:func:`work_log_path`): when its work happened, as ISO 8601 intervals."""
    path = work_log_path(output)
    write_text_atomic(json.dumps(work, indent=1, sort_keys=True) + "\n", path)
    return path


def read_work_log(output: str | Path) -> dict[str, Any]:
    """An output's work log ({} when absent: made before logs existed, or pulled from a DVC remote).

    ValueError names the file when it is not a JSON object."""
    path = work_log_path(output)
    if not path.is_file():
        return {}
    try:
        work = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(work, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return work


def iso_time(seconds: float | None = None) -> str:
    """A UNIX time (default: now) as ISO 8601 in UTC with milliseconds (``2026-11-30T09:12:03.250Z``)."""
    moment = dt.datetime.fromtimestamp(time.time() if seconds is None else seconds, dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def epoch_ms(text: str) -> int:
    """An ISO 8601 time (as :func:`iso_time` writes it) as milliseconds since the epoch, what MLflow takes."""
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(round(moment.timestamp() * 1000))
