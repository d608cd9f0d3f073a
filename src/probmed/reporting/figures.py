"""The report's figures as one table: file name -> the function that draws it, imported when drawn.

Every figure is drawn once per question set, in this order, as
``plots/<name>_<question set>.png``; a function returns None when its inputs
are absent (no ablation runs, no transfer models) and nothing is linked. A
figure function takes a :class:`~probmed.reporting.runs.FigureInput` (the set's
runs, its question table, the report options) and the path to write. Adding a
figure: the function (probmed.reporting.plots or a module of its own) and one
line in ``FIGURES``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import pandas as pd

from probmed.core.params_schema import Report
from probmed.infra.registry import Registry
from probmed.reporting.runs import FigureInput, Run

if TYPE_CHECKING:
    from probmed.reporting.comparisons import Comparisons

FIGURES = Registry("report figure", {
    "fig1_strict_vs_averaged": "probmed.reporting.plots:figure_strict_vs_averaged",  # Figure 1
    "per_image_type": "probmed.reporting.plots:figure_per_image_type",  # Appendix A heatmaps
    "response_distribution": "probmed.reporting.plots:figure_response_distribution",  # Appendix F
    "visual_reliance": "probmed.reporting.plots:figure_visual_reliance",  # real image minus blank / shuffled
    "differences": "probmed.reporting.plots:figure_differences",  # Figure 4 / Appendix D, model A - B
    "transfer": "probmed.reporting.plots:figure_transfer",  # Figure 5
})


def file_stem(question_set: str) -> str:
    """A question-set name as it appears in figure file names."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in question_set)


def draw_all(
    runs: Sequence[Run],
    questions: Mapping[str, pd.DataFrame],
    out_dir: Path,
    report: Report,
    comparisons: Comparisons | None = None,
    palette: Mapping[str, str] | None = None,
) -> list[Path]:
    """Every figure the runs support, per question set; returns the files written (the HTML links exactly these).

    ``report``: params ``report`` (the transfer figure's models and category, the heatmap's threshold);
    ``comparisons``: the report's paired differences and intervals (probmed.reporting.comparisons);
    ``palette``: model -> colour."""
    by_set: dict[str, list[Run]] = {}
    for run in runs:
        by_set.setdefault(run.question_set, []).append(run)
    written: list[Path] = []
    for question_set, group in by_set.items():
        comp = comparisons.for_set(question_set) if comparisons is not None else None
        data = FigureInput(question_set, group, questions.get(question_set), comparisons=comp,
                           palette=dict(palette or {}), report=report)
        for name in FIGURES.kinds:
            path = FIGURES.load(name)(data, out_dir / f"{name}_{file_stem(question_set)}.png")
            if path is not None:
                written.append(path)
    return written
