"""How every figure draws: one colour per model, bars with their interval and n, missing never as 0.

A reviewer compares bars across figures, so a model keeps its colour in all of
them (:func:`model_colours`, assigned in the order of params ``models`` then
``report.transfer_models``, the same order for the report and the transfer
stage). Every accuracy bar carries its bootstrap interval and the number behind
it (images or units, :func:`bars`); a missing value is an "n/a" mark where the
bar would be, never a bar of height 0, and a true 0 is a visible outline with
its interval and n.

In core because both the report (probmed.reporting) and the transfer study
(probmed.finetune) draw with it, and fine-tuning never imports reporting.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    from probmed.core.params_schema import Params

# Qualitative colours (matplotlib's tab10, then tab20's light shades): distinct for up to 20 models.
_COLOURS: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)
MISSING_COLOUR = "#9a9a9a"


def model_colours(models: Iterable[str]) -> dict[str, str]:
    """Model -> colour, in the given order (first seen first); repeats keep their first colour."""
    out: dict[str, str] = {}
    for name in models:
        if name not in out:
            out[name] = _COLOURS[len(out) % len(_COLOURS)]
    return out


def palette_from_params(params: Params, extra: Iterable[str] = ()) -> dict[str, str]:
    """The project's palette: params ``models`` in order, then ``report.transfer_models``, then `extra`."""
    return model_colours([*params.models, *params.report.transfer_models, *extra])


def colour(palette: Mapping[str, str], model: str) -> str:
    """The model's colour; a model the palette does not know gets one derived from its name (stable)."""
    if model in palette:
        return palette[model]
    return _COLOURS[sum(model.encode()) % len(_COLOURS)]


def _finite(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def bars(ax, x: Sequence[float], values: Sequence[float], low: Sequence[float | None] | None,
         high: Sequence[float | None] | None, counts: Sequence[int | None] | None, colour: str, width: float,
         label: str | None = None, hatch: str | None = None, alpha: float = 1.0, n_prefix: str = "n=") -> None:
    """Bars with error bars (percentile interval) and the n behind each; NaN values are drawn as "n/a"."""
    xs = np.asarray(x, dtype=float)
    vals = np.array([v if _finite(v) else np.nan for v in values], dtype=float)
    have = ~np.isnan(vals)
    ax.bar(xs[have], vals[have], width, color=colour, alpha=alpha, hatch=hatch, edgecolor=colour, linewidth=1.0,
           label=label)
    lo = np.array([lo if _finite(lo) else np.nan for lo in (low if low is not None else [None] * len(xs))], float)
    hi = np.array([h if _finite(h) else np.nan for h in (high if high is not None else [None] * len(xs))], float)
    err = have & ~np.isnan(lo) & ~np.isnan(hi)
    if err.any():
        yerr = np.vstack([np.maximum(vals[err] - lo[err], 0), np.maximum(hi[err] - vals[err], 0)])
        ax.errorbar(xs[err], vals[err], yerr=yerr, fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
    span = np.nan_to_num(np.where(np.isnan(hi), vals, hi), nan=0.0)
    for i in np.flatnonzero(~have):
        ax.text(xs[i], 0, "n/a", ha="center", va="bottom", fontsize=6, color=MISSING_COLOUR, rotation=90)
    if counts is None:
        return
    for j in map(int, np.flatnonzero(have)):
        count = counts[j]
        if count is None:
            continue
        below = vals[j] < 0
        y = (np.nanmin([vals[j], lo[j]]) if below else span[j])
        ax.text(xs[j], y, f"{n_prefix}{int(count)}", ha="center", va="top" if below else "bottom", fontsize=5.5,
                rotation=90, color="#333333")
