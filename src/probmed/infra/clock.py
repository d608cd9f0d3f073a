"""Timestamps the outputs record (when answers were asked, when a run was scored): ISO 8601, UTC.

The MLflow run of an evaluation starts when its first question was asked and
ends when it was scored, whenever `probmed track` logs it; the prediction table
and the score directory carry those times for that reason.
"""

from __future__ import annotations

import datetime as dt
import time


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
