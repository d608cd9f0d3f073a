"""The report's figures as one table: file name -> the function that draws it, imported when drawn.

Every figure is drawn once per question set, in this order, as
``plots/<name>_<question set>.png``, with a caption (:data:`CAPTIONS`) that says
what it shows and how many images it rests on; a function returns None when its inputs
are absent (no ablation runs, no transfer models) and nothing is linked. A
figure function takes a :class:`~probmed.reporting.runs.FigureInput` (the set's
runs, its question table, the report options) and the path to write. Adding a
figure: the function (probmed.reporting.plots or a module of its own) and one
line in ``FIGURES``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import pandas as pd

from probmed.core.figure_style import MAX_AXIS_CATEGORIES, report_style
from probmed.core.params_schema import Report
from probmed.infra.registry import Registry
from probmed.reporting.runs import FigureInput, Run

if TYPE_CHECKING:
    from probmed.reporting.comparisons import Comparisons

FIGURES = Registry("report figure", {
    "headline": "probmed.reporting.plots:figure_headline",  # the first screen: Figure 1's story, overall per model
    "fig1_strict_vs_averaged": "probmed.reporting.plots:figure_strict_vs_averaged",  # Figure 1
    "per_image_type": "probmed.reporting.plots:figure_per_image_type",  # Appendix A heatmaps
    "response_distribution": "probmed.reporting.plots:figure_response_distribution",  # Appendix F
    "visual_reliance": "probmed.reporting.plots:figure_visual_reliance",  # real image minus blank / shuffled
    "differences": "probmed.reporting.plots:figure_differences",  # Figure 4 / Appendix D, model A - B
    "transfer": "probmed.reporting.plots:figure_transfer",  # Figure 5
})


CAPTIONS: dict[str, str] = {  # {set}: the question set; {images}: the images its runs were scored on
    "headline": "After the paper's Figure 1 ({set}): per model, overall accuracy without adversarial pairs (averaged "
                "accuracy, light) and with them (dark), pooled units, 95% bootstrap intervals, beside exact random "
                "(dotted) and the audit's blind ceiling (dashed); {images}.",
    "fig1_strict_vs_averaged": "Figure 1 per category ({set}): averaged accuracy (light) beside accuracy with "
                               "adversarial pairs (dark) for every run, with 95% bootstrap intervals, exact random "
                               "(dotted) and the blind ceiling (dashed); {images}.",
    "per_image_type": "Appendix A ({set}): accuracy with adversarial pairs per image type and category for every "
                      f"vanilla run (at most {MAX_AXIS_CATEGORIES} image types, the most images first; all of "
                      "them in the Appendix A tables); each cell gives the images behind it, grey cells rest on too "
                      "few images; {images}.",
    "response_distribution": "Appendix F ({set}): how every run answered (yes / no / refusal / unparsed / failed) "
                             "per category, beside the ground truth's yes share; {images}.",
    "visual_reliance": "Visual reliance ({set}): accuracy with adversarial pairs with the real image minus with a "
                       "blank or shuffled image, per model and category, paired 95% intervals; {images}.",
    "differences": "Figure 4 / Appendix D ({set}): prompting settings minus vanilla and model A minus model B, "
                   "accuracy with adversarial pairs, paired 95% intervals; {images}.",
    "transfer": "Figure 5 ({set}): accuracy with adversarial pairs per image type of the two transfer models "
                "(image types with at least report.min_images_per_cell images), and beside them their paired "
                "difference with its 95% interval; {images}.",
}


@dataclass(frozen=True)
class DrawnFigure:
    """A figure file the report links, with the caption the page shows under it."""

    path: Path
    caption: str


def file_stem(question_set: str) -> str:
    """A question-set name as it appears in figure file names."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in question_set)


def images_text(runs: Sequence[Run]) -> str:
    """"rests on N images" of a question set's runs (the most any run was scored on), or that n is unknown."""
    counts = [r.scores.overall_value("n_images") for r in runs]
    known = [int(c) for c in counts if c == c]  # NaN != NaN
    if not known:
        return "number of images not recorded"
    low, high = min(known), max(known)
    return f"rests on {high} images" if low == high else f"rests on {low} to {high} images (per run)"


def caption(name: str, question_set: str, runs: Sequence[Run]) -> str:
    """The caption of figure `name` for a question set's runs (a generic one for a figure without its own)."""
    template = CAPTIONS.get(name, "{set}: " + name.replace("_", " ") + "; {images}.")
    return template.format(set=question_set, images=images_text(runs))


def draw_all(
    runs: Sequence[Run],
    questions: Mapping[str, pd.DataFrame],
    out_dir: Path,
    report: Report,
    comparisons: Comparisons | None = None,
    palette: Mapping[str, str] | None = None,
    ceilings: Mapping[str, Mapping[str, float]] | None = None,
) -> list[DrawnFigure]:
    """Every figure the runs support, per question set in the runs' order; returns the files written (the HTML
    links exactly these) with their captions.

    ``report``: params ``report`` (the transfer figure's models and category, the heatmap's threshold);
    ``comparisons``: the report's paired differences and intervals (probmed.reporting.comparisons);
    ``palette``: model -> colour; ``ceilings``: question set -> {category or overall: the blind ceiling}."""
    by_set: dict[str, list[Run]] = {}
    for run in runs:
        by_set.setdefault(run.question_set, []).append(run)
    written: list[DrawnFigure] = []
    with report_style():
        for question_set, group in by_set.items():
            comp = comparisons.for_set(question_set) if comparisons is not None else None
            data = FigureInput(question_set, group, questions.get(question_set), comparisons=comp,
                               palette=dict(palette or {}), report=report,
                               ceiling=dict((ceilings or {}).get(question_set) or {}))
            for name in FIGURES.kinds:
                path = FIGURES.load(name)(data, out_dir / f"{name}_{file_stem(question_set)}.png")
                if path is not None:
                    written.append(DrawnFigure(path, caption(name, question_set, group)))
    return written
