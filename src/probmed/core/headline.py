"""Headline metrics: the few numbers `dvc metrics` and `dvc exp show` compare, in small git-tracked files.

DVC compares experiments by the metrics files each commit holds. They live under
``metrics/`` at the repository root, not in the git-ignored ``build/``: each is a
``cache: false`` output of the stage that owns its numbers, so git keeps it
(commit it with dvc.lock) and `dvc exp run` commits it into the experiment.
A file holds numbers only (null where a number is undefined, never a string: DVC
cannot compare a string column), nested as ``{group: {name: number}}``, rounded
to :data:`DIGITS` decimals so the tables stay readable. Everything else a stage
writes stays an artifact under build/ (and in MLflow).

The files (dvc.yaml lists each under its stage's ``metrics:``):

- ``metrics/evaluation.json`` (report): strict accuracy overall and per category
  for every evaluated (question set, model/setting), in the plan's order;
- ``metrics/audit.json`` (audit): the question set's validity headline;
- ``metrics/transfer.json`` (finetune-transfer): base vs adapted model.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from probmed.infra.io import write_json_atomic

DIGITS = 2


def headline_values(data: Mapping[str, Any], where: str = "headline") -> dict[str, Any]:
    """`data` with every leaf a rounded number or None; a ValueError names a leaf that is neither."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{where}.{key}"
        if isinstance(value, Mapping):
            out[str(key)] = headline_values(value, name)
        elif value is None or (isinstance(value, float) and not math.isfinite(value)):
            out[str(key)] = None
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[str(key)] = round(float(value), DIGITS)
        else:
            raise ValueError(f"{name} = {value!r}: a headline metric must be a number or null")
    return out


def write_headline(data: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """Write a headline metrics file (atomically); returns what was written."""
    values = headline_values(data)
    write_json_atomic(values, path)
    return values
