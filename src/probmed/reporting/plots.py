"""The report's figures as PNG (matplotlib, headless).

One function per figure of the paper, each ``(FigureInput, path) -> path | None``
and named in the figure table (probmed.reporting.figures), which draws them:
Figure 1 (accuracy with adversarial pairs vs averaged
accuracy per category), per image type (Appendix A as heatmaps), the yes-ratio
/ response distribution per category (Appendix F), visual reliance (real image
minus blank / shuffled), setting and model differences (Figure 4 / Appendix D)
and transfer across image types (Figure 5). A figure whose inputs are absent (no
ablation runs, no transfer models) is not drawn, so the HTML never links an
empty picture.

What a reviewer needs to read a bar is on it (probmed.core.figure_style): each
model keeps one colour across figures; every accuracy bar carries its bootstrap
95% interval and the images behind it, every difference its paired interval; a
missing value is marked "n/a", never a bar of height 0; heatmap cells show their
n, carry a colour bar, and cells with fewer than `report.min_images_per_cell` images are greyed
out. Each ``build_*`` returns the Figure (tests count its bars and cells); each
``figure_*`` saves it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES  # noqa: E402
from probmed.core.figure_style import DPI, FIGURE_WIDTH_IN, FONT_PT, bars, colour, n_label  # noqa: E402
from probmed.core.settings import BASE_SETTING  # noqa: E402
from probmed.infra.io import atomic_path  # noqa: E402
from probmed.reporting import comparison_plots  # noqa: E402
from probmed.reporting.comparisons import ALL, Comparisons  # noqa: E402
from probmed.reporting.runs import FigureInput, Run  # noqa: E402


def _save(fig: plt.Figure, path: Path) -> Path:
    """Save atomically at the page's width: a crash never leaves a truncated PNG the HTML links to, and a
    figure is never wider than the page (so the browser never shrinks its text below the body text)."""
    width, height = fig.get_size_inches()
    if width > FIGURE_WIDTH_IN:
        fig.set_size_inches(FIGURE_WIDTH_IN, height)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    try:  # a kill's leftover .tmp is removed by the next report (io.remove_stale_temps), ignored by git and DVC
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=DPI)
    finally:
        plt.close(fig)
    return path


def _present(runs: Sequence[Run], categories: Sequence[str]) -> list[str]:
    return [c for c in categories if any(c in r.scores.categories for r in runs)]


def _comparisons(data: FigureInput) -> Comparisons:
    return data.comparisons if data.comparisons is not None else Comparisons()


def _interval(data: FigureInput, run: Run, category: str, metric: str, image_type: str | None = None
              ) -> tuple[float, float, int | None]:
    """(low, high, images) of a run's accuracy: from its per-image bootstrap, else the scorer's strict interval."""
    low, high, n = _comparisons(data).interval(run, category, metric, image_type or ALL)
    if n is None and metric == "strict":
        n_images = run.scores.value(category, "n_images", image_type)
        low, high = run.scores.value(category, "ci95_low", image_type), run.scores.value(category, "ci95_high", image_type)
        n = None if math.isnan(n_images) else int(n_images)
    return low, high, n


def _hide_unused(axes: np.ndarray, used: int) -> None:
    for ax in axes.ravel()[used:]:
        ax.axis("off")


def build_strict_vs_averaged(data: FigureInput) -> plt.Figure | None:
    """Figure 1: per category, averaged accuracy (light, hatched) beside accuracy with adversarial pairs (solid),
    one bar pair per run in the model's colour, each with its interval; the images behind a run's bars under its
    name. Two panels a row for a few runs, one for many (the names stay apart); the legend above the panels."""
    runs = data.runs
    categories = _present(runs, PAIRED_CATEGORIES)
    if not categories:
        return None
    ncols = 2 if len(runs) <= 5 and len(categories) > 1 else 1
    nrows = math.ceil(len(categories) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIGURE_WIDTH_IN, 1.2 + 4.4 * nrows), squeeze=False,
                             sharey=True, layout="constrained")
    x = np.arange(len(runs))
    for ax, category in zip(axes.ravel(), categories):
        counts: list[int | None] = []
        for offset, metric, key, alpha, hatch in ((-0.2, "averaged", "averaged_accuracy", 0.45, "//"),
                                                  (0.2, "strict", "accuracy_adv_pairs", 1.0, None)):
            for i, run in enumerate(runs):
                low, high, n = _interval(data, run, category, metric)
                if metric == "strict":
                    counts.append(n)
                bars(ax, [x[i] + offset], [run.scores.value(category, key)], [low], [high], None,
                     colour(data.palette, run.model), 0.4, hatch=hatch, alpha=alpha)
        ax.set_title(category)
        ax.set_xticks(x, [n_label(r.label, n) for r, n in zip(runs, counts)], rotation=45, ha="right")
        ax.set_ylim(0, 105)
        ax.set_ylabel("accuracy (%)")
    _hide_unused(axes, len(categories))
    handles = [Patch(facecolor="#999999", alpha=0.45, hatch="//", edgecolor="#999999",
                     label="averaged (without adversarial pairs)"),
               Patch(facecolor="#999999", label="with adversarial pairs")]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, frameon=False)
    fig.suptitle(f"{data.question_set}: accuracy with and without adversarial pairs\n"
                 "(95% bootstrap interval; n = images under each run)")
    return fig


def _heatmap_text(value: float, count: float, few: bool) -> str:
    n = "" if math.isnan(count) else f"n={int(count)}"
    if math.isnan(value):
        return "—"
    return n if few else f"{value:.0f}\n{n}"


def _drawn_image_types(runs: Sequence[Run], categories: Sequence[str], min_images: int) -> tuple[list[str], int]:
    """(image types with a cell of at least `min_images` images in some category, how many others are left out).

    Why: an extended set has ~35 image types, most of them with a handful of
    images; a column that is grey in every panel only crowds the ones that say something.
    """
    image_types = sorted({it for r in runs for it in r.scores.image_types})
    drawn = [it for it in image_types
             if any(r.scores.value(c, "n_images", it) >= min_images for r in runs for c in categories)]
    if not drawn:  # a tiny set: every column grey, each still saying its n
        return image_types, 0
    return drawn, len(image_types) - len(drawn)


def build_per_image_type(data: FigureInput) -> plt.Figure | None:
    """Appendix A as heatmaps: accuracy with adversarial pairs per image type, one full-width panel per category,
    a colour bar, the images behind every cell, and cells of fewer than `report.min_images_per_cell` images greyed out
    (their n shown, their number not)."""
    runs = data.runs
    categories = _present(runs, CATEGORIES)
    image_types, left_out = _drawn_image_types(runs, categories, data.report.min_images_per_cell)
    if not image_types or not categories:
        return None
    heights = [0.9 + 0.6 * len(runs)] * len(categories)
    fig, axes = plt.subplots(len(categories), 1, figsize=(FIGURE_WIDTH_IN, sum(heights) + 2.8), squeeze=False,
                             sharex=True, layout="constrained", gridspec_kw={"height_ratios": heights})
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e6e6e6")  # not asked / too few images: grey
    image = None
    for ax, category in zip(axes[:, 0], categories):
        grid = np.array([[r.scores.value(category, "accuracy_adv_pairs", it) for it in image_types] for r in runs])
        count = np.array([[r.scores.value(category, "n_images", it) for it in image_types] for r in runs])
        few = np.nan_to_num(count, nan=0) < data.report.min_images_per_cell
        image = ax.imshow(np.ma.masked_where(few | np.isnan(grid), grid), vmin=0, vmax=100, cmap=cmap, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                dark = not (few[i, j] or math.isnan(grid[i, j])) and grid[i, j] < 60
                ax.text(j, i, _heatmap_text(grid[i, j], count[i, j], bool(few[i, j])), ha="center", va="center",
                        fontsize=FONT_PT, color="white" if dark else ("#444444" if few[i, j] else "black"))
        ax.set_title(category)
        ax.set_yticks(range(len(runs)), [r.label for r in runs])
    axes[-1, 0].set_xticks(range(len(image_types)), image_types, rotation=45, ha="right")
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="accuracy with adversarial pairs (%)")
    fig.suptitle(f"{data.question_set}: accuracy with adversarial pairs per image type\n"
                 f"(n = images; grey: fewer than {data.report.min_images_per_cell} images, number not shown; — not asked"
                 + (f";\n{left_out} image types under {data.report.min_images_per_cell} images in every category "
                    "not drawn: see the Appendix A tables)" if left_out else ")"))
    return fig


RESPONSE_COLOURS: dict[str, str] = {"yes": "#009E73", "no": "#D55E00", "refusal": "#CC79A7", "unparsed": "#999999",
                                    "failed": "#000000"}  # Okabe-Ito


def _response_shares(run: Run, category: str) -> tuple[dict[str, float], float]:
    """({answer kind: share of the category's questions}, questions) of one run."""
    n = run.scores.value(category, "n_questions")
    failed = (run.scores.value(category, "failed") + run.scores.value(category, "missing")) / n * 100.0 \
        if n else math.nan
    rates = [run.scores.value(category, k) for k in ("yes_ratio", "refusal_rate", "unparsed_rate")] + [failed]
    parts = [0.0 if math.isnan(v) else v / 100.0 for v in rates]  # scorer: percent
    shares = dict(zip(("yes", "refusal", "unparsed", "failed"), parts))
    shares["no"] = max(0.0, 1.0 - sum(parts))
    return shares, n


def build_response_distribution(data: FigureInput) -> plt.Figure | None:
    """Appendix F: yes / no / refusal / unparsed / failed shares per category, beside the ground-truth yes
    share ("failed": the backend gave up after every retry, or no prediction at all); n = questions."""
    runs, questions = data.runs, data.questions
    categories = _present(runs, CATEGORIES)
    if not categories:
        return None
    ncols = 3 if len(runs) <= 4 else 2
    nrows = math.ceil(len(categories) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIGURE_WIDTH_IN, 1.2 + 4.6 * nrows), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, category in zip(axes.ravel(), categories):
        labels: list[str] = []
        shares: dict[str, list[float]] = {k: [] for k in RESPONSE_COLOURS}
        subset = questions[questions["category"] == category] if questions is not None and len(questions) else None
        if subset is not None and len(subset):
            yes = float((subset["answer"] == "yes").mean())
            labels.append(n_label("ground truth", len(subset)))
            for key, value in zip(RESPONSE_COLOURS, (yes, 1 - yes, 0.0, 0.0, 0.0)):
                shares[key].append(value)
        for run in runs:
            run_shares, n = _response_shares(run, category)
            labels.append(n_label(run.label, n))
            for key in RESPONSE_COLOURS:
                shares[key].append(run_shares[key])
        bottom = np.zeros(len(labels))
        for key, color in RESPONSE_COLOURS.items():
            ax.bar(range(len(labels)), shares[key], bottom=bottom, color=color, label=key)
            bottom += np.array(shares[key])
        ax.set_title(category)
        ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right")
        ax.set_ylim(0, 1.02)
        ax.set_ylabel("share of answers")
    _hide_unused(axes, len(categories))
    fig.legend(handles=[Patch(color=c, label=k) for k, c in RESPONSE_COLOURS.items()], loc="outside lower center",
               ncols=len(RESPONSE_COLOURS), frameon=False)
    fig.suptitle(f"{data.question_set}: response distribution per category (n = questions under each run)")
    return fig


def build_transfer(data: FigureInput) -> plt.Figure | None:
    """Figure 5: a category's accuracy per image type for the base and fine-tuned models named in params, each
    with its interval and images; above each pair the paired difference (second - first) and its interval."""
    from probmed.core.markdown import difference_cell
    from probmed.finetune.transfer_figure import REPORT_LAYOUT, TransferPanel, TransferSeries, draw_transfer

    models, category = list(data.report.transfer_models), data.report.transfer_category
    chosen = [r for m in models for r in data.runs if r.model == m and r.setting == BASE_SETTING]
    image_types = sorted({it for r in chosen for it in r.scores.image_types})
    if not chosen or not image_types:
        return None
    series: list[TransferSeries] = []
    counts: list[int | None] = [None] * len(image_types)
    for run in chosen:  # the n of an image type under its name (both models answer the same questions)
        cis = [_interval(data, run, category, "strict", it) for it in image_types]
        counts = [c[2] if c[2] is not None else old for c, old in zip(cis, counts)]
        series.append(TransferSeries(run.model, colour(data.palette, run.model),
                                     [run.scores.value(category, "accuracy_adv_pairs", it) for it in image_types],
                                     [c[0] for c in cis], [c[1] for c in cis], [None] * len(image_types)))
    differences: list[str | None] = [None] * len(image_types)
    if len(chosen) >= 2:
        diffs = _comparisons(data).differences
        pair = diffs[(diffs["a"] == chosen[1].model) & (diffs["b"] == chosen[0].model) & (diffs["kind"] == "model")
                     & (diffs["category"] == category) & (diffs["metric"] == "strict")].set_index("image_type")
        differences = [difference_cell(pair.loc[it]["diff"], pair.loc[it]["ci_low"], pair.loc[it]["ci_high"], 0)
                       if it in pair.index else None for it in image_types]
    subtitle = f"above: {chosen[1].model} - {chosen[0].model} [paired 95% interval]" if len(chosen) >= 2 else ""
    title = f"{data.question_set}: transfer across image types (n = images)\n{subtitle}"
    ticks = [n_label(it, n) for it, n in zip(image_types, counts)]
    fig = draw_transfer([TransferPanel(title, ticks, series, differences)],
                        f"{category}\naccuracy with adversarial pairs (%)", REPORT_LAYOUT)
    fig.set_size_inches(fig.get_size_inches()[0], 7.0)
    _legend_outside(fig)
    return fig


def _legend_outside(fig: plt.Figure) -> None:
    """Move the axes' legend above the panels, where it cannot cover a bar."""
    ax = fig.axes[-1]
    handles, labels = ax.get_legend_handles_labels()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    fig.set_layout_engine("constrained")
    fig.legend(handles, labels, loc="outside lower center", ncols=max(1, len(labels)), frameon=False)


def build_visual_reliance(data: FigureInput) -> plt.Figure | None:
    """Visual reliance: per model, accuracy with the real image minus with each control (None without controls)."""
    return comparison_plots.reliance_figure(_comparisons(data), data.question_set, data.palette)


def build_differences(data: FigureInput) -> plt.Figure | None:
    """Figure 4 / Appendix D: setting and model differences with paired intervals (None when there are none)."""
    return comparison_plots.differences_figure(_comparisons(data), data.question_set, data.palette)


def _saved(fig: plt.Figure | None, path: Path) -> Path | None:
    return None if fig is None else _save(fig, path)


def figure_strict_vs_averaged(data: FigureInput, path: Path) -> Path | None:
    """Figure 1 as a PNG at `path` (figure table entry ``fig1_strict_vs_averaged``); None when not drawn."""
    return _saved(build_strict_vs_averaged(data), path)


def figure_per_image_type(data: FigureInput, path: Path) -> Path | None:
    """The Appendix A heatmaps as a PNG at `path`; None without image types or categories to draw."""
    return _saved(build_per_image_type(data), path)


def figure_response_distribution(data: FigureInput, path: Path) -> Path | None:
    """The Appendix F response shares as a PNG at `path`; None when no category was scored."""
    return _saved(build_response_distribution(data), path)


def figure_visual_reliance(data: FigureInput, path: Path) -> Path | None:
    """The visual-reliance drops as a PNG at `path`; None without image-control runs."""
    return _saved(build_visual_reliance(data), path)


def figure_differences(data: FigureInput, path: Path) -> Path | None:
    """The setting and model differences (Figure 4 / Appendix D) as a PNG at `path`; None without any."""
    return _saved(build_differences(data), path)


def figure_transfer(data: FigureInput, path: Path) -> Path | None:
    """Figure 5 as a PNG at `path`; None when the transfer models have no vanilla runs per image type."""
    return _saved(build_transfer(data), path)
