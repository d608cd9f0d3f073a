"""One scored evaluation as the report and its figures see it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probmed.scoring.score_report import ScoreReport


@dataclass
class Run:
    """The scores of one (question set, model, setting), as laid out under a score root."""

    question_set: str
    model: str
    setting: str
    scores: ScoreReport

    @property
    def path(self) -> Path | None:
        return self.scores.path

    @property
    def label(self) -> str:
        return f"{self.model} ({self.setting})"
