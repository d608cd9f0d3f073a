"""The transfer figure (paper Figure 5), drawn once for the transfer study and for the report.

Both show, per panel, each model's accuracy with adversarial pairs with its
bootstrap interval and the images behind each bar (probmed.core.figure_style),
and above each pair of bars the paired difference. They differ in what a panel
holds and how dense it is: the report draws one category across image types
(:data:`REPORT_LAYOUT`), the transfer study every category across its
(source, image type) groups (:data:`STUDY_LAYOUT`). Callers build the
:class:`TransferPanel`s from their own data; this module only draws. It imports
nothing from probmed.reporting, so fine-tuning can draw it and the report can
import it from below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from probmed.core.figure_style import bars  # noqa: E402


@dataclass(frozen=True)
class TransferSeries:
    """One model's bars across a panel's ticks."""

    label: str
    colour: str
    values: Sequence[float]
    low: Sequence[float | None]
    high: Sequence[float | None]
    n: Sequence[int | None]  # images behind each bar


@dataclass(frozen=True)
class TransferPanel:
    """One axis: its title, the tick labels, each model's bars and the paired difference above each tick."""

    title: str
    ticks: Sequence[str]
    series: Sequence[TransferSeries]
    differences: Sequence[str | None]  # text above each tick; None: nothing there


@dataclass(frozen=True)
class TransferLayout:
    """How dense a transfer figure is: its width and the style of ticks, differences and titles."""

    width_base: float  # inches: base + per_panel * panels + per_tick * ticks of the widest panel
    width_per_panel: float
    width_per_tick: float
    tick_style: Mapping[str, Any]
    difference_y: float
    difference_style: Mapping[str, Any]
    title_style: Mapping[str, Any]
    legend_fontsize: float
    tight: bool  # fig.tight_layout() (a figure saved without bbox_inches="tight")
    sharey: bool = False


REPORT_LAYOUT = TransferLayout(  # the report's page: text no smaller than its body (probmed.core.figure_style)
    width_base=2, width_per_panel=0, width_per_tick=1.3, tick_style={"rotation": 30, "ha": "right"},
    difference_y=103, difference_style={"fontsize": 12, "rotation": 90, "va": "bottom"},
    title_style={"fontsize": 13, "pad": 70}, legend_fontsize=12, tight=False,
)
STUDY_LAYOUT = TransferLayout(
    width_base=1, width_per_panel=3.4, width_per_tick=0, tick_style={"rotation": 60, "ha": "right", "fontsize": 7},
    difference_y=104, difference_style={"fontsize": 5.5, "rotation": 90}, title_style={"pad": 38}, legend_fontsize=7,
    tight=True, sharey=True,
)


def draw_transfer(panels: Sequence[TransferPanel], ylabel: str, layout: TransferLayout,
                  suptitle: str | None = None) -> plt.Figure:
    """The figure: one axis per panel, models side by side at each tick, the difference above each tick."""
    widest = max(len(p.ticks) for p in panels)
    width = layout.width_base + layout.width_per_panel * len(panels) + layout.width_per_tick * widest
    if len(panels) == 1 and not layout.sharey:
        fig, ax = plt.subplots(figsize=(width, 4.6))
        axes = [ax]
    else:
        fig, grid = plt.subplots(1, len(panels), figsize=(width, 4.6), squeeze=False, sharey=layout.sharey)
        axes = list(grid[0])
    for ax, panel in zip(axes, panels):
        _draw_panel(ax, panel, layout)
    axes[0].set_ylabel(ylabel)
    axes[-1].legend(fontsize=layout.legend_fontsize, loc="upper right")
    if suptitle is not None:
        fig.suptitle(suptitle, fontsize=9)
    if layout.tight:
        fig.tight_layout()
    return fig


def _draw_panel(ax: Any, panel: TransferPanel, layout: TransferLayout) -> None:
    x = np.arange(len(panel.ticks))
    width = 0.8 / len(panel.series)
    for k, s in enumerate(panel.series):
        bars(ax, (x - 0.4 + width * (k + 0.5)).tolist(), s.values, s.low, s.high, s.n, s.colour, width, label=s.label)
    for xi, text in zip(x, panel.differences):
        if text is not None:
            ax.annotate(text, (xi, layout.difference_y), ha="center", annotation_clip=False, **layout.difference_style)
    ax.set_xticks(x, panel.ticks, **layout.tick_style)
    ax.set_ylim(0, 100)
    ax.set_title(panel.title, **layout.title_style)
