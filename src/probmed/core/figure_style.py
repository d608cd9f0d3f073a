"""How every figure draws: one colour per model, bars with their interval and n, missing never as 0.

A reviewer compares bars across figures, so a model keeps its colour in all of
them (:func:`model_colours`, assigned in the order of params ``models`` then
``report.transfer_models``, the same order for the report and the transfer
stage), from Okabe & Ito's colour-blind-safe palette; the scorer's baselines
(random, always-yes, always-no) are fixed greys. Every accuracy bar carries its
bootstrap interval and the number behind it (images or units: under the bar's
tick, :func:`n_label`, or above it, :func:`bars`); a missing value is an "n/a"
mark where the bar would be, never a bar of height 0, and a true 0 is a visible
outline with its interval and n.

The report's figures are drawn at the page's width (:data:`FIGURE_WIDTH_IN` at
:data:`DPI`) with text no smaller than the page's body text (:data:`MIN_FONT_PT`,
:func:`report_style`), so shown at 100% nothing is shrunk below what the page
itself prints.

In core because both the report (probmed.reporting) and the transfer study
(probmed.finetune) draw with it, and fine-tuning never imports reporting.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from probmed.core.params_schema import Params

# Okabe & Ito's colour-blind-safe qualitative palette without its black (the error bars' colour), then
# darker variants for an eighth model on; a model keeps its colour in every figure.
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
_COLOURS: tuple[str, ...] = OKABE_ITO + ("#004C77", "#9A6A00", "#006A4D", "#88507A", "#3A7A9C", "#8F3F00")
# Baselines are always drawn in the same neutral or fixed colours, so a reader spots them at once.
FIXED_COLOURS: dict[str, str] = {"random": "#7F7F7F", "always-yes": "#BBBBBB", "always-no": "#4D4D4D"}

# The report page's geometry: figures are drawn at the page's content width in inches at DPI, and no text in
# a figure is smaller than the page's body text when the PNG is shown at 100% (a point is DPI/72 pixels).
DPI = 100
PAGE_WIDTH_PX = 1100  # the HTML page's content width (its CSS max-width)
BODY_FONT_PX = 16  # the HTML page's body text size
FIGURE_WIDTH_IN = PAGE_WIDTH_PX / DPI
HEADLINE_WIDTH_IN = 6.6  # the first screen's chart: beside the findings, not the page's full width
MIN_FONT_PT = BODY_FONT_PX * 72 / DPI  # 11.52 pt = 16 px at 100 dpi
FONT_PT = 12.0
# At most this many groups (image types, sources) on one axis: more labels than this cannot be read at 100%.
# A figure draws those with the most images, says how many it left out, and the tables keep them all.
MAX_AXIS_CATEGORIES = 15
# DejaVu Sans ships with matplotlib and has every character the report draws (Greek, dashes, minus, arrows);
# named first so a system font without them is never picked.
FONT_FAMILY = ["DejaVu Sans"]
RC: dict[str, Any] = {
    "font.family": "sans-serif", "font.sans-serif": FONT_FAMILY,
    "font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "axes.labelsize": FONT_PT, "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT, "legend.fontsize": FONT_PT, "legend.title_fontsize": FONT_PT,
    "figure.titlesize": FONT_PT + 2, "figure.dpi": DPI, "savefig.dpi": DPI,
}
MISSING_COLOUR = "#9a9a9a"

# The two accuracies every "with and without adversarial pairs" chart sets side by side (the paper's Figure 1),
# told apart by colour alone: light for the easier measure, dark for the strict one.
METRIC_COLOURS: dict[str, str] = {"averaged": "#56B4E9", "strict": "#0072B2"}
METRIC_LABELS: dict[str, str] = {"averaged": "without adversarial pairs (averaged)", "strict": "with adversarial pairs"}
# The bars a reader measures a model against: exact random and the audit's blind ceiling.
REFERENCE_STYLES: dict[str, dict[str, Any]] = {
    "random": {"color": "#4D4D4D", "linestyle": ":", "linewidth": 1.8, "label": "exact random"},
    "ceiling": {"color": "#D55E00", "linestyle": "--", "linewidth": 1.8, "label": "blind ceiling (audit)"},
}
# Series that are not models (comparisons, image controls): each its own colour, in this order.
SERIES_COLOURS: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#4D4D4D")


def report_style() -> Any:
    """A context in which matplotlib draws with the report's font sizes (:data:`RC`)."""
    import matplotlib

    return matplotlib.rc_context(RC)


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """Model -> colour, in the given order (first seen first); repeats keep their first colour."""
    out: dict[str, str] = {}
    for name in models:
        if name not in out:
            out[name] = FIXED_COLOURS.get(name) or _COLOURS[sum(1 for m in out if m not in FIXED_COLOURS) % len(_COLOURS)]
    return out


def palette_from_params(params: Params, extra: Iterable[str] = ()) -> dict[str, str]:
    """The project's palette: params ``models`` in order, then ``report.transfer_models``, then `extra`."""
    return model_colours([*params.models, *params.report.transfer_models, *extra])


def n_label(label: str, count: float | int | None) -> str:
    """A tick label with the n behind it on its own line (the label, then ``n=39`` below it), so n labels never
    overlap the bars or each other."""
    if count is None or (isinstance(count, float) and math.isnan(count)):
        return label
    return f"{label}\nn={int(count)}"


def colour(palette: Mapping[str, str], model: str) -> str:
    """The model's colour; a model the palette does not know gets one derived from its name (stable)."""
    if model in palette:
        return palette[model]
    if model in FIXED_COLOURS:
        return FIXED_COLOURS[model]
    return _COLOURS[sum(model.encode()) % len(_COLOURS)]


def _finite(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def bars(ax, x: Sequence[float], values: Sequence[float], low: Sequence[float | None] | None,
         high: Sequence[float | None] | None, counts: Sequence[int | None] | None, colour: str, width: float,
         label: str | None = None, n_prefix: str = "n=") -> None:
    """Bars with error bars (percentile interval) and the n behind each; NaN values are drawn as "n/a"."""
    xs = np.asarray(x, dtype=float)
    vals = np.array([v if _finite(v) else np.nan for v in values], dtype=float)
    have = ~np.isnan(vals)
    ax.bar(xs[have], vals[have], width, color=colour, edgecolor=colour, linewidth=1.0,
           label=label)
    lo = np.array([lo if _finite(lo) else np.nan for lo in (low if low is not None else [None] * len(xs))], float)
    hi = np.array([h if _finite(h) else np.nan for h in (high if high is not None else [None] * len(xs))], float)
    err = have & ~np.isnan(lo) & ~np.isnan(hi)
    if err.any():
        yerr = np.vstack([np.maximum(vals[err] - lo[err], 0), np.maximum(hi[err] - vals[err], 0)])
        ax.errorbar(xs[err], vals[err], yerr=yerr, fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    span = np.nan_to_num(np.where(np.isnan(hi), vals, hi), nan=0.0)
    for i in np.flatnonzero(~have):
        ax.text(xs[i], 0, "n/a", ha="center", va="bottom", fontsize=FONT_PT, color=MISSING_COLOUR, rotation=90)
    if counts is None:
        return
    for j in map(int, np.flatnonzero(have)):
        count = counts[j]
        if count is None:
            continue
        below = vals[j] < 0
        y = (np.nanmin([vals[j], lo[j]]) if below else span[j])
        ax.text(xs[j], y, f"{n_prefix}{int(count)}", ha="center", va="top" if below else "bottom", fontsize=FONT_PT,
                rotation=90, color="#333333")


def hbars(ax, y: Sequence[float], values: Sequence[float], low: Sequence[float | None], high: Sequence[float | None],
          colour: str, height: float, label: str | None = None) -> None:
    """Horizontal bars with their percentile intervals (long labels stay horizontal on the y axis); a missing
    value is an "n/a" mark at 0, never a bar of length 0."""
    ys = np.asarray(y, dtype=float)
    vals = np.array([v if _finite(v) else np.nan for v in values], dtype=float)
    have = ~np.isnan(vals)
    ax.barh(ys[have], vals[have], height, color=colour, edgecolor=colour, linewidth=1.0, label=label)
    lo = np.array([v if _finite(v) else np.nan for v in low], float)
    hi = np.array([v if _finite(v) else np.nan for v in high], float)
    err = have & ~np.isnan(lo) & ~np.isnan(hi)
    if err.any():
        xerr = np.vstack([np.maximum(vals[err] - lo[err], 0), np.maximum(hi[err] - vals[err], 0)])
        ax.errorbar(vals[err], ys[err], xerr=xerr, fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    for i in np.flatnonzero(~have):
        ax.text(0.5, ys[i], "n/a", ha="left", va="center", fontsize=FONT_PT, color=MISSING_COLOUR)
    for i in np.flatnonzero(have & (vals == 0)):  # a true 0 has no length to see: say it
        ax.text(0.5, ys[i], "0", ha="left", va="center", fontsize=FONT_PT, color="#333333")


def legend_below(fig: Any, ncols: int = 2, order: Sequence[str] = ()) -> None:
    """One legend for the whole figure, below its panels (never on the data), each entry once, the labels in
    `order` first in that order."""
    entries: dict[str, Any] = {}
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    ranked = sorted(entries, key=lambda k: list(order).index(k) if k in order else len(order))
    fig.legend([entries[k] for k in ranked], ranked, loc="outside lower center", ncols=max(1, ncols), frameon=False)
