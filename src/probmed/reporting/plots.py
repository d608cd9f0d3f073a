"""The report's figures as PNG (matplotlib, headless).

One function per figure of the paper, each ``(FigureInput, path) -> path | None``
and named in the figure table (probmed.reporting.figures), which draws them:
the first screen's chart (overall accuracy without and with adversarial pairs
per model, after the paper's Figure 1), Figure 1 per category, per image type
(Appendix A as heatmaps), the response distribution per category (Appendix F),
visual reliance (real image minus blank / shuffled), setting and model
differences (Figure 4 / Appendix D) and transfer across image types (Figure 5).
A figure whose inputs are absent (no ablation runs, no transfer models) is not
drawn, so the HTML never links an empty picture.

Readable at 100% (probmed.core.figure_style): text at the page's body size,
horizontal wherever a label is long (run names, image types and groups sit on
the y axis of horizontal bars; heatmap columns are vertical text), no two texts
overlapping, at most ``figure_style.MAX_AXIS_CATEGORIES`` image types on an axis (the
most images first, the rest counted in the figure and kept in the tables), and
series told apart by colour alone: without / with adversarial pairs in two
fixed colours, exact random dotted and the blind ceiling dashed. What a
reviewer needs to read a bar is on it: every accuracy bar carries its bootstrap
95% interval and the images behind it, every difference its paired interval; a
missing value is marked "n/a", never a bar of length 0; heatmap cells show
their n, carry a colour bar, and cells with fewer than
``report.min_images_per_cell`` images are greyed out. Each ``build_*`` returns
the Figure (tests count its bars and check its texts); each ``figure_*`` saves it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES  # noqa: E402
from probmed.core.figure_style import (  # noqa: E402
    DPI,
    FIGURE_WIDTH_IN,
    FONT_PT,
    HEADLINE_WIDTH_IN,
    MAX_AXIS_CATEGORIES,
    METRIC_COLOURS,
    METRIC_LABELS,
    REFERENCE_STYLES,
    colour,
    hbars,
    legend_below,
    model_colours,
    n_label,
)
from probmed.core.settings import BASE_SETTING  # noqa: E402
from probmed.finetune.transfer_figure import Difference, TransferPanel, TransferSeries, draw_transfer  # noqa: E402
from probmed.infra.io import atomic_path  # noqa: E402
from probmed.reporting import comparison_plots  # noqa: E402
from probmed.reporting.comparisons import ALL, Comparisons  # noqa: E402
from probmed.reporting.runs import FigureInput, Run  # noqa: E402
from probmed.reporting.summary import headline_runs, model_rank  # noqa: E402
from probmed.scoring.compare import OVERALL  # noqa: E402


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


def _accuracy(run: Run, category: str, metric: str) -> float:
    key = "accuracy_adv_pairs" if metric == "strict" else "averaged_accuracy"
    return run.scores.overall_value(key) if category == OVERALL else run.scores.value(category, key)


def _random(runs: Sequence[Run], category: str) -> float:
    """Exact random on the set's questions (every run of a set answers the same questions)."""
    baseline = next((r.scores.random_baseline for r in runs if r.scores.random_baseline is not None), None)
    if baseline is None:
        return math.nan
    return baseline.overall_value("accuracy_adv_pairs") if category == OVERALL else baseline.value(category, "accuracy_adv_pairs")


def _common_count(counts: Sequence[int | None]) -> int | None:
    """The images every run rests on when it is the same for all (the usual case), else None (each label says)."""
    known = {c for c in counts if c is not None}
    return known.pop() if len(known) == 1 and None not in counts else None


def _metric_panel(ax: plt.Axes, data: FigureInput, runs: Sequence[Run], category: str,
                  name: Callable[[Run], str] = lambda r: r.label) -> int | None:
    """Per run, averaged accuracy (light) above accuracy with adversarial pairs (dark), horizontal, with
    intervals, exact random and the blind ceiling as lines; returns the panel's common n (None: in labels)."""
    y = np.arange(len(runs))
    counts: list[int | None] = []
    for offset, metric in ((-0.2, "averaged"), (0.2, "strict")):
        cis = [_interval(data, run, category, metric) for run in runs]
        if metric == "strict":
            counts = [c[2] for c in cis]
        hbars(ax, (y + offset).tolist(), [_accuracy(r, category, metric) for r in runs], [c[0] for c in cis],
              [c[1] for c in cis], METRIC_COLOURS[metric], 0.38, label=METRIC_LABELS[metric])
    for key, value in (("random", _random(runs, category)), ("ceiling", data.ceiling.get(category, math.nan))):
        if not math.isnan(value):
            ax.axvline(value, **REFERENCE_STYLES[key])
    common = _common_count(counts)
    labels = [name(r) if common is not None else n_label(name(r), n) for r, n in zip(runs, counts)]
    ax.set_yticks(y, labels)
    ax.set_ylim(len(runs) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    return common


LEGEND_ORDER = (METRIC_LABELS["averaged"], METRIC_LABELS["strict"], REFERENCE_STYLES["random"]["label"],
                REFERENCE_STYLES["ceiling"]["label"])


def _legend_below(fig: plt.Figure, ncols: int = 2) -> None:
    legend_below(fig, ncols, LEGEND_ORDER)


def build_headline(data: FigureInput) -> plt.Figure | None:
    """The first screen's chart, after the paper's Figure 1: per model (vanilla), overall accuracy without and
    with adversarial pairs (pooled units), with intervals, beside exact random and the blind ceiling."""
    runs = headline_runs(data.runs, data.question_set, data.report)
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(HEADLINE_WIDTH_IN, max(2.2, 1.45 + 0.36 * len(runs))), layout="constrained")
    common = _metric_panel(ax, data, runs, OVERALL, name=lambda r: r.model)
    ax.set_xlabel("overall accuracy, pooled units (%; 95% interval)")
    # the overall pools the pairs' units (scoring.compare), so its intervals rest on the images asked a pair; the
    # table above counts the whole set (an image asked only single questions, abnormality or a normal image's
    # hallucinated finding, is in it, not in the pool)
    total = runs[0].scores.overall_value("n_images")
    if common is None:
        counted = "n per model"
    elif math.isnan(total) or int(total) == common:
        counted = f"n = {common} images"
    else:
        counted = f"n = {common} of {int(total)} images (those asked a pair)"
    ax.set_title(f"{data.question_set}: {counted}", loc="left")
    _legend_below(fig)
    return fig


def build_strict_vs_averaged(data: FigureInput) -> plt.Figure | None:
    """Figure 1 per category: for every run, averaged accuracy beside accuracy with adversarial pairs (two
    colours), each with its interval, exact random and the blind ceiling as lines; two panels a row, the run
    names once per row, horizontal."""
    runs = sorted(data.runs, key=lambda r: model_rank(r.model, data.report))
    categories = _present(runs, PAIRED_CATEGORIES)
    if not categories:
        return None
    ncols = 2 if len(categories) > 1 else 1
    nrows = math.ceil(len(categories) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIGURE_WIDTH_IN, 1.6 + (0.9 + 0.62 * len(runs)) * nrows),
                             squeeze=False, sharey=True, layout="constrained")
    for ax, category in zip(axes.ravel(), categories):
        common = _metric_panel(ax, data, runs, category)
        ax.set_title(f"{category} (n = {common} images)" if common is not None else category)
        ax.set_xlabel("accuracy (%)")
    _hide_unused(axes, len(categories))
    _legend_below(fig)
    fig.suptitle(f"{data.question_set}: accuracy without and with adversarial pairs per category "
                 "(95% bootstrap intervals)")
    return fig


def _heatmap_text(value: float, count: float, few: bool) -> str:
    n = "" if math.isnan(count) else f"n={int(count)}"
    if math.isnan(value):
        return "—"
    return n if few else f"{value:.0f}\n{n}"


def _drawn_image_types(runs: Sequence[Run], categories: Sequence[str], min_images: int, most: int
                       ) -> tuple[list[str], list[str]]:
    """(image types to draw, those left out): types with a cell of at least `min_images` images in some category,
    at most `most` of them, those with the most images first.

    Why: an extended set has ~35 image types, most of them with a handful of
    images; a column that is grey in every panel only crowds the ones that say something,
    and more than ~15 labels on an axis cannot be read.
    """
    images = {it: max(_nan0(r.scores.value(c, "n_images", it)) for r in runs for c in categories)
              for it in sorted({it for r in runs for it in r.scores.image_types})}
    ranked = sorted(images, key=lambda it: (-images[it], it))
    enough = [it for it in ranked if images[it] >= min_images] or ranked  # a tiny set: every column grey, n shown
    drawn = enough[:most]
    return drawn, [it for it in ranked if it not in drawn]


def _nan0(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def _left_out_note(left_out: Sequence[str], min_images: int, most: int) -> str:
    if not left_out:
        return ""
    return (f"\n{len(left_out)} image types not drawn (under {min_images} images in every category,\n"
            f"or beyond the {most} with the most images): see the tables")


def build_per_image_type(data: FigureInput) -> plt.Figure | None:
    """Appendix A as heatmaps: accuracy with adversarial pairs per image type (at most MAX_AXIS_CATEGORIES,
    the most images first), one full-width panel per category, vanilla runs as rows, a colour bar, the images
    behind every cell, and cells of fewer than `report.min_images_per_cell` images greyed out (n shown)."""
    runs = headline_runs(data.runs, data.question_set, data.report) or list(data.runs)
    categories = _present(runs, CATEGORIES)
    rep = data.report
    image_types, left_out = _drawn_image_types(runs, categories, rep.min_images_per_cell, MAX_AXIS_CATEGORIES)
    if not image_types or not categories:
        return None
    heights = [0.9 + 0.5 * len(runs)] * len(categories)
    fig, axes = plt.subplots(len(categories), 1, figsize=(FIGURE_WIDTH_IN, sum(heights) + 3.6), squeeze=False,
                             sharex=True, layout="constrained", gridspec_kw={"height_ratios": heights})
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e6e6e6")  # not asked / too few images: grey
    image = None
    for ax, category in zip(axes[:, 0], categories):
        grid = np.array([[r.scores.value(category, "accuracy_adv_pairs", it) for it in image_types] for r in runs])
        count = np.array([[r.scores.value(category, "n_images", it) for it in image_types] for r in runs])
        few = np.nan_to_num(count, nan=0) < rep.min_images_per_cell
        image = ax.imshow(np.ma.masked_where(few | np.isnan(grid), grid), vmin=0, vmax=100, cmap=cmap, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                dark = not (few[i, j] or math.isnan(grid[i, j])) and grid[i, j] < 60
                ax.text(j, i, _heatmap_text(grid[i, j], count[i, j], bool(few[i, j])), ha="center", va="center",
                        fontsize=FONT_PT, color="white" if dark else ("#444444" if few[i, j] else "black"))
        ax.set_title(category, loc="left")
        ax.set_yticks(range(len(runs)), [r.model for r in runs])
    axes[-1, 0].set_xticks(range(len(image_types)), image_types, rotation=90)
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.6, label="accuracy with adversarial pairs (%)")
    fig.suptitle(f"{data.question_set}: accuracy with adversarial pairs per image type (vanilla runs)\n"
                 f"n = images; grey: fewer than {rep.min_images_per_cell} images, number not shown; — not asked"
                 + _left_out_note(left_out, rep.min_images_per_cell, MAX_AXIS_CATEGORIES))
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
    """Appendix F: yes / no / refusal / unparsed / failed shares per category as horizontal stacked bars, one row
    per run beside the ground-truth yes share ("failed": the backend gave up after every retry, or no prediction
    at all); the questions behind a panel in its title."""
    runs, questions = sorted(data.runs, key=lambda r: model_rank(r.model, data.report)), data.questions
    categories = _present(runs, CATEGORIES)
    if not categories:
        return None
    truth = questions is not None and len(questions) > 0
    ncols = 3 if len(categories) > 4 else min(2, len(categories))
    nrows = math.ceil(len(categories) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIGURE_WIDTH_IN, 1.4 + (1.3 + 0.36 * (len(runs) + truth)) * nrows),
                             squeeze=False, sharey=True, layout="constrained")
    for ax, category in zip(axes.ravel(), categories):
        labels: list[str] = []
        shares: dict[str, list[float]] = {k: [] for k in RESPONSE_COLOURS}
        if truth:
            assert questions is not None
            subset = questions[questions["category"] == category]
            yes = float((subset["answer"] == "yes").mean()) if len(subset) else math.nan
            labels.append("ground truth")
            for key, value in zip(RESPONSE_COLOURS, (yes, 1 - yes, 0.0, 0.0, 0.0)):
                shares[key].append(100 * value)
        counts = []
        for run in runs:
            run_shares, n = _response_shares(run, category)
            counts.append(n)
            labels.append(run.label)
            for key in RESPONSE_COLOURS:
                shares[key].append(100 * run_shares[key])
        left = np.zeros(len(labels))
        for key, color in RESPONSE_COLOURS.items():
            values = np.nan_to_num(np.array(shares[key]))
            ax.barh(range(len(labels)), values, left=left, color=color, label=key, height=0.7)
            left += values
        n = max((c for c in counts if not math.isnan(c)), default=math.nan)
        ax.set_title(category if math.isnan(n) else f"{category}\n(n = {int(n)} questions)", loc="left")
        ax.set_yticks(range(len(labels)), labels)
        ax.set_ylim(len(labels) - 0.5, -0.5)
        ax.set_xlim(0, 100)
        ax.set_xlabel("share of answers (%)")
    _hide_unused(axes, len(categories))
    fig.get_layout_engine().set(w_pad=0.12)  # the "100" of one panel never meets the "0" of the next
    _legend_below(fig, ncols=len(RESPONSE_COLOURS))
    fig.suptitle(f"{data.question_set}: how every run answered, per category")
    return fig


def _transfer_image_types(data: FigureInput, chosen: Sequence[Run], category: str) -> tuple[list[str], list[str]]:
    """(image types drawn, left out): those where the transfer models rest on at least report.min_images_per_cell
    images in the category, at most MAX_AXIS_CATEGORIES, the most images first."""
    rep = data.report
    images: dict[str, int] = {}
    for run in chosen:
        for it in run.scores.image_types:
            n = _interval(data, run, category, "strict", it)[2]
            images[it] = max(images.get(it, 0), n or 0)
    ranked = sorted(images, key=lambda it: (-images[it], it))
    drawn = [it for it in ranked if images[it] >= rep.min_images_per_cell][:MAX_AXIS_CATEGORIES]
    return drawn, [it for it in ranked if it not in drawn]


def _transfer_differences(data: FigureInput, chosen: Sequence[Run], category: str, image_types: Sequence[str]
                          ) -> list[Difference | None]:
    """The second transfer model minus the first per image type, with its paired interval (None: not compared)."""
    if len(chosen) < 2:
        return [None] * len(image_types)
    diffs = _comparisons(data).differences
    pair = diffs[(diffs["a"] == chosen[1].model) & (diffs["b"] == chosen[0].model) & (diffs["kind"] == "model")
                 & (diffs["category"] == category) & (diffs["metric"] == "strict")].set_index("image_type")
    return [Difference(float(pair.loc[it]["diff"]), float(pair.loc[it]["ci_low"]), float(pair.loc[it]["ci_high"]))
            if it in pair.index else None for it in image_types]


def build_transfer(data: FigureInput) -> plt.Figure | None:
    """Figure 5: a category's accuracy per image type for the base and fine-tuned models named in params, each
    with its interval, the images under each image type, and beside it the paired difference (second - first)
    with its interval; only image types with at least report.min_images_per_cell images (the rest counted)."""
    models, category, rep = list(data.report.transfer_models), data.report.transfer_category, data.report
    chosen = [r for m in models for r in data.runs if r.model == m and r.setting == BASE_SETTING]
    image_types, left_out = _transfer_image_types(data, chosen, category) if chosen else ([], [])
    if not image_types:
        return None
    series, counts = [], {}
    palette = {**model_colours([r.model for r in chosen]), **data.palette}  # the two models never share a colour
    for run in chosen:  # the n of an image type under its name (both models answer the same questions)
        cis = [_interval(data, run, category, "strict", it) for it in image_types]
        counts.update({it: c[2] for it, c in zip(image_types, cis) if c[2] is not None})
        series.append(TransferSeries(run.model, colour(palette, run.model),
                                     [run.scores.value(category, "accuracy_adv_pairs", it) for it in image_types],
                                     [c[0] for c in cis], [c[1] for c in cis]))
    note = _left_out_note(left_out, rep.min_images_per_cell, MAX_AXIS_CATEGORIES)
    title = (f"{data.question_set}: transfer across image types, {category} (95% intervals; n = images)"
             + note.replace("in every category", f"in {category}"))
    who = f"{chosen[1].model}\n− {chosen[0].model} (points)" if len(chosen) >= 2 else "difference (points)"
    panel = TransferPanel(category, [n_label(it, counts.get(it)) for it in image_types], series,
                          _transfer_differences(data, chosen, category, image_types))
    return draw_transfer([panel], "accuracy with adversarial pairs (%)", who, suptitle=title)


def build_visual_reliance(data: FigureInput) -> plt.Figure | None:
    """Visual reliance: per model, accuracy with the real image minus with each control (None without controls)."""
    return comparison_plots.reliance_figure(_comparisons(data), data.question_set)


def build_differences(data: FigureInput) -> plt.Figure | None:
    """Figure 4 / Appendix D: setting and model differences with paired intervals (None when there are none)."""
    return comparison_plots.differences_figure(_comparisons(data), data.question_set)


def _saved(fig: plt.Figure | None, path: Path) -> Path | None:
    return None if fig is None else _save(fig, path)


def figure_headline(data: FigureInput, path: Path) -> Path | None:
    """The first screen's chart as a PNG at `path` (figure table entry ``headline``); None without vanilla runs."""
    return _saved(build_headline(data), path)


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
