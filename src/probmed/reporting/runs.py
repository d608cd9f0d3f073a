"""One scored evaluation as the report and its figures see it, and what a figure is given."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from probmed.core.params_schema import Report
from probmed.scoring.score_report import ScoreReport

if TYPE_CHECKING:
    import pandas as pd


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


@dataclass(frozen=True)
class FigureInput:
    """Everything a report figure may draw from: one question set's runs and the report's options."""

    question_set: str
    runs: Sequence[Run]
    questions: "pd.DataFrame | None" = None  # the set's question table, when the report was given it
    # the set's paired differences and accuracy intervals: a probmed.reporting.comparisons.Comparisons
    # (not imported here: that module reads Runs)
    comparisons: Any = None
    palette: Mapping[str, str] = field(default_factory=dict)  # model -> colour, the same in every figure
    # params `report`: the transfer figure's models and category, the heatmap's min_images_per_cell
    report: Report = field(default_factory=Report)
    # category (and "overall") -> the audit's blind ceiling for this set (probmed.reporting.summary.ceiling_values)
    ceiling: Mapping[str, float] = field(default_factory=dict)
