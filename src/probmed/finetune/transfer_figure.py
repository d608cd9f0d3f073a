"""The transfer figure (paper Figure 5), drawn once for the transfer study and for the report.

Per panel (a category), one row per group (an image type, or a source and image
type): each model's accuracy with adversarial pairs as a horizontal bar with its
bootstrap interval, and beside it, on its own axis, the paired difference with
its interval and a line at 0. Rows and labels are horizontal, so every label
stays readable however many groups there are, and nothing is written above the
bars where it could collide with a title. Callers build the
:class:`TransferPanel`s from their own data (the group labels carry the images
behind them); this module only draws. It imports nothing from
probmed.reporting, so fine-tuning can draw it and the report can import it from
below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from probmed.core.figure_style import FIGURE_WIDTH_IN, hbars  # noqa: E402

ROW_IN = 0.55  # inches per group row: two bars and a two-line label


@dataclass(frozen=True)
class TransferSeries:
    """One model's bars across a panel's groups."""

    label: str
    colour: str
    values: Sequence[float]
    low: Sequence[float | None]
    high: Sequence[float | None]


@dataclass(frozen=True)
class Difference:
    """The paired difference of one group (second model minus first, points) and its 95% interval."""

    diff: float
    low: float
    high: float


@dataclass(frozen=True)
class TransferPanel:
    """One category: its title, the group labels, each model's bars and each group's paired difference."""

    title: str
    ticks: Sequence[str]
    series: Sequence[TransferSeries]
    differences: Sequence[Difference | None]


def draw_transfer(panels: Sequence[TransferPanel], xlabel: str, difference_label: str,
                  suptitle: str | None = None) -> plt.Figure:
    """The figure: per panel a row of two axes, the models' bars and the paired differences, groups shared."""
    heights = [0.9 + ROW_IN * len(p.ticks) for p in panels]
    fig, axes = plt.subplots(len(panels), 2, figsize=(FIGURE_WIDTH_IN, sum(heights) + 1.6), squeeze=False,
                             layout="constrained", gridspec_kw={"height_ratios": heights, "width_ratios": [3, 1.5]})
    for (bars_ax, diff_ax), panel in zip(axes, panels):
        _draw_bars(bars_ax, panel)
        _draw_differences(diff_ax, panel)
    axes[-1, 0].set_xlabel(xlabel)
    axes[-1, 1].set_xlabel(difference_label)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=max(1, len(labels)), frameon=False)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


def _draw_bars(ax: plt.Axes, panel: TransferPanel) -> None:
    y = np.arange(len(panel.ticks))
    height = 0.8 / max(1, len(panel.series))
    for k, s in enumerate(panel.series):
        hbars(ax, (y - 0.4 + height * (k + 0.5)).tolist(), s.values, s.low, s.high, s.colour, height * 0.95,
              label=s.label)
    ax.set_yticks(y, panel.ticks)
    ax.set_ylim(len(panel.ticks) - 0.5, -0.5)  # the first group on top
    ax.set_xlim(0, 100)
    ax.set_title(panel.title, loc="left")


def _draw_differences(ax: plt.Axes, panel: TransferPanel) -> None:
    y = np.arange(len(panel.ticks))
    have = [(i, d) for i, d in enumerate(panel.differences) if d is not None and not np.isnan(d.diff)]
    if have:
        rows = np.array([i for i, _ in have], dtype=float)
        diff = np.array([d.diff for _, d in have])
        low = np.array([d.low for _, d in have])
        high = np.array([d.high for _, d in have])
        xerr = np.vstack([np.nan_to_num(diff - low), np.nan_to_num(high - diff)])
        ax.errorbar(diff, rows, xerr=np.maximum(xerr, 0), fmt="o", color="black", elinewidth=1.2, capsize=3)
        span = np.nanmax(np.abs(np.concatenate([low, high, diff])))
        span = float(span) if np.isfinite(span) and span > 0 else 1.0
        ax.set_xlim(-1.1 * span, 1.1 * span)
    ax.axvline(0, color="#4D4D4D", linewidth=0.8)
    ax.set_yticks(y, [""] * len(y))
    ax.set_ylim(len(panel.ticks) - 0.5, -0.5)
    ax.set_title("paired difference", loc="left")
