"""Figures of differences: visual reliance and setting / model differences, each bar with its paired interval.

Builders return a matplotlib Figure (tests count its bars) or None when the
runs have nothing to compare; probmed.reporting.plots saves them. Each series (a
control, a comparison) has its own colour (figure_style.SERIES_COLOURS), never a
hatch in one colour; the legend sits below the axes. Every bar carries the paired
95% bootstrap interval and the number of images behind it.
"""

from __future__ import annotations

from typing import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from probmed.core.figure_style import FIGURE_WIDTH_IN, SERIES_COLOURS, bars, legend_below, n_label  # noqa: E402
from probmed.core.settings import IMAGE_CONTROLS, PROMPT_ABLATIONS  # noqa: E402
from probmed.reporting.comparisons import Comparisons  # noqa: E402
from probmed.scoring.compare import OVERALL  # noqa: E402


def _categories(frame: pd.DataFrame) -> list[str]:
    present = list(dict.fromkeys(frame["category"]))
    return [c for c in present if c != OVERALL] + ([OVERALL] if OVERALL in present else [])


def _category_labels(frame: pd.DataFrame, cats: list[str], flags: Mapping[str, bool | None] | None = None
                     ) -> list[str]:
    """Each category with the images behind its bars (all bars of a category rest on the same images)."""
    labels = []
    for cat in cats:
        n = frame.loc[frame["category"] == cat, "n_images"].max()
        name = f"{cat} (pooled)" if cat == OVERALL else cat
        if flags and flags.get(cat):
            name += "\n(without looking)"
        labels.append(n_label(name, None if pd.isna(n) else int(n)))
    return labels


def reliance_figure(comp: Comparisons, question_set: str) -> plt.Figure | None:
    """Per model (one panel a row): accuracy with the real image minus with each control, per category."""
    strict = comp.reliance[comp.reliance["metric"] == "strict"]
    models = list(dict.fromkeys(strict["model"]))
    if not models:
        return None
    fig, axes = plt.subplots(len(models), 1, figsize=(FIGURE_WIDTH_IN, 1.5 + 4.6 * len(models)), squeeze=False,
                             layout="constrained")
    for ax, model in zip(axes[:, 0], models):
        part = strict[strict["model"] == model]
        cats = _categories(part)
        x = np.arange(len(cats))
        controls = [c for c in IMAGE_CONTROLS if (part["control"] == c).any()]
        width = 0.8 / len(controls)
        for k, control in enumerate(controls):
            rows = part[part["control"] == control].set_index("category").reindex(cats)
            bars(ax, (x - 0.4 + width * (k + 0.5)).tolist(), rows["drop"].to_numpy(float), rows["ci_low"].to_numpy(),
                 rows["ci_high"].to_numpy(), None, SERIES_COLOURS[IMAGE_CONTROLS.index(control)], width,
                 label=f"real − {control}")  # a control keeps its colour in every model's panel
        ax.axhline(0, color="black", linewidth=0.8)
        flags = {c: comp.without_looking.get((question_set, model, c)) for c in cats}
        ax.set_xticks(x, _category_labels(part, cats, flags))
        ax.set_title(model)
        ax.set_ylabel("drop (points)")
    legend_below(fig, len(IMAGE_CONTROLS))
    fig.suptitle(f"{question_set}: visual reliance, accuracy with adversarial pairs with the real image minus with "
                 "a control\n(95% paired bootstrap interval; n = images)")
    return fig


def differences_figure(comp: Comparisons, question_set: str) -> plt.Figure | None:
    """Setting differences (cot / described - vanilla) and model differences, per category, paired intervals."""
    frame = comp.differences[(comp.differences["metric"] == "strict") & (comp.differences["image_type"] == "all")]
    frame = frame[(frame["kind"] == "model") | frame["a"].isin(PROMPT_ABLATIONS)]
    if frame.empty:
        return None
    series = list(dict.fromkeys(zip(frame["kind"], frame["model"], frame["a"], frame["b"])))
    cats = _categories(frame)
    x = np.arange(len(cats))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 6.0 + 0.3 * len(series)), layout="constrained")
    for k, (kind, model, a, b) in enumerate(series):
        rows = frame[(frame["model"] == model) & (frame["a"] == a) & (frame["b"] == b)].set_index("category")
        rows = rows.reindex(cats)
        label = f"{model}: {a} − {b}" if kind == "setting" else f"{a} − {b}"
        bars(ax, (x - 0.4 + width * (k + 0.5)).tolist(), rows["diff"].to_numpy(float), rows["ci_low"].to_numpy(),
             rows["ci_high"].to_numpy(), None, SERIES_COLOURS[k % len(SERIES_COLOURS)], width, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, _category_labels(frame, cats))
    ax.set_ylabel("Δ accuracy with adversarial pairs\n(points)")
    legend_below(fig, 2)
    ax.set_title(f"{question_set}: differences between settings and models\n(95% paired bootstrap interval; n = images)")
    return fig
