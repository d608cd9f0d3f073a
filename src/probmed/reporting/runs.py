"""One scored evaluation as the report and its figures see it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class Run:
    """The metrics.json of one (question set, model, setting), with where it was read from."""

    question_set: str
    model: str
    setting: str
    metrics: dict[str, Any]
    path: Path

    @property
    def label(self) -> str:
        return f"{self.model} ({self.setting})"
