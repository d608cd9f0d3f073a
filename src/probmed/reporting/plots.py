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

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES  # noqa: E402
from probmed.core.figure_style import bars, colour  # noqa: E402
from probmed.core.settings import BASE_SETTING  # noqa: E402
from probmed.infra.io import atomic_path  # noqa: E402
from probmed.reporting import comparison_plots  # noqa: E402
from probmed.reporting.comparisons import ALL, Comparisons  # noqa: E402
from probmed.reporting.runs import FigureInput, Run  # noqa: E402


def _save(fig: plt.Figure, path: Path) -> Path:
    """Save atomically: a crash never leaves a truncated PNG the HTML links to."""
    try:  # a kill's leftover .tmp is removed by the next report (io.remove_stale_temps), ignored by git and DVC
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
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


def build_strict_vs_averaged(data: FigureInput) -> plt.Figure | None:
    """Figure 1: per category, averaged accuracy (light, hatched) beside accuracy with adversarial pairs (solid),
    one bar pair per run in the model's colour, each with its interval and images."""
    runs = data.runs
    categories = _present(runs, PAIRED_CATEGORIES)
    if not categories:
        return None
    fig, axes = plt.subplots(1, len(categories), figsize=(1 + 0.8 * len(runs) * len(categories), 4.6),
                             squeeze=False, sharey=True)
    x = np.arange(len(runs))
    for ax, category in zip(axes[0], categories):
        for offset, metric, key, alpha, hatch in ((-0.2, "averaged", "averaged_accuracy", 0.45, "//"),
                                                  (0.2, "strict", "accuracy_adv_pairs", 1.0, None)):
            for i, run in enumerate(runs):
                low, high, n = _interval(data, run, category, metric)
                label = None
                if i == 0 and ax is axes[0][0]:
                    label = "averaged (without adversarial pairs)" if metric == "averaged" else "with adversarial pairs"
                bars(ax, [x[i] + offset], [run.scores.value(category, key)], [low], [high], [n],
                     colour(data.palette, run.model), 0.4, label=label, hatch=hatch, alpha=alpha)
        ax.set_title(category)
        ax.set_xticks(x, [r.label for r in runs], rotation=45, ha="right", fontsize=8)
        ax.set_ylim(0, 112)
    axes[0][0].set_ylabel("accuracy (%)")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"{data.question_set}: accuracy with and without adversarial pairs "
                 "(95% bootstrap interval, n = images)", y=1.02)
    return fig


def build_per_image_type(data: FigureInput) -> plt.Figure | None:
    """Appendix A as heatmaps: accuracy with adversarial pairs per image type, one panel per category, with
    a colour bar, the images behind every cell, and cells of fewer than `report.min_images_per_cell` images greyed out."""
    runs = data.runs
    image_types = sorted({it for r in runs for it in r.scores.image_types})
    categories = _present(runs, CATEGORIES)
    if not image_types or not categories:
        return None
    ncols = min(3, len(categories))
    nrows = math.ceil(len(categories) / ncols)
    panel_w, panel_h = 1.8 + 0.75 * len(image_types), 1.8 + 0.4 * len(runs)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.5 + panel_w * ncols, panel_h * nrows), squeeze=False)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#e6e6e6")  # not asked / too few images: grey
    image = None
    for k, category in enumerate(categories):
        ax = axes[k // ncols][k % ncols]
        grid = np.array([[r.scores.value(category, "accuracy_adv_pairs", it) for it in image_types] for r in runs])
        count = np.array([[r.scores.value(category, "n_images", it) for it in image_types] for r in runs])
        few = np.nan_to_num(count, nan=0) < data.report.min_images_per_cell
        image = ax.imshow(np.ma.masked_where(few | np.isnan(grid), grid), vmin=0, vmax=100, cmap=cmap, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                n = "" if math.isnan(count[i, j]) else f"n={int(count[i, j])}"
                text = "—" if math.isnan(grid[i, j]) else f"{grid[i, j]:.0f}\n{n}" if not few[i, j] else n
                dark = not (few[i, j] or math.isnan(grid[i, j])) and grid[i, j] < 60
                ax.text(j, i, text, ha="center", va="center", fontsize=6,
                        color="white" if dark else ("#555555" if few[i, j] else "black"))
        ax.set_title(category)
        ax.set_xticks(range(len(image_types)), image_types, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(runs)), [r.label for r in runs] if k % ncols == 0 else [], fontsize=7)
    for k in range(len(categories), nrows * ncols):
        axes[k // ncols][k % ncols].axis("off")
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="accuracy with adversarial pairs (%)")
    fig.suptitle(f"{data.question_set}: accuracy with adversarial pairs per image type "
                 f"(n = images; grey: fewer than {data.report.min_images_per_cell} images or not asked)", y=1.02)
    return fig


def build_response_distribution(data: FigureInput) -> plt.Figure | None:
    """Appendix F: yes / no / refusal / unparsed / failed shares per category, beside the ground-truth yes
    share ("failed": the backend gave up after every retry, or no prediction at all); n = questions."""
    runs, questions = data.runs, data.questions
    categories = _present(runs, CATEGORIES)
    if not categories:
        return None
    fig, axes = plt.subplots(1, len(categories), figsize=(3.5 * len(categories), 4), squeeze=False, sharey=True)
    colors = {"yes": "#31a354", "no": "#de2d26", "refusal": "#756bb1", "unparsed": "#969696",
              "failed": "#252525"}
    for ax, category in zip(axes[0], categories):
        labels: list[str] = []
        shares: dict[str, list[float]] = {k: [] for k in colors}
        if questions is not None and len(questions):
            subset = questions[questions["category"] == category]
            if len(subset):
                yes = float((subset["answer"] == "yes").mean())
                labels.append(f"ground truth\nn={len(subset)}")
                for key, value in zip(colors, (yes, 1 - yes, 0.0, 0.0, 0.0)):
                    shares[key].append(value)
        for run in runs:
            n = run.scores.value(category, "n_questions")
            failed = (run.scores.value(category, "failed") + run.scores.value(category, "missing")) / n * 100.0 \
                if n else math.nan
            rates = [run.scores.value(category, k) for k in ("yes_ratio", "refusal_rate", "unparsed_rate")] + [failed]
            parts = [0.0 if math.isnan(v) else v / 100.0 for v in rates]  # scorer: percent
            labels.append(run.label + ("" if math.isnan(n) else f"\nn={int(n)}"))
            for key, value in zip(("yes", "refusal", "unparsed", "failed"), parts):
                shares[key].append(value)
            shares["no"].append(max(0.0, 1.0 - sum(parts)))
        bottom = np.zeros(len(labels))
        for key, color in colors.items():
            ax.bar(range(len(labels)), shares[key], bottom=bottom, color=color, label=key)
            bottom += np.array(shares[key])
        ax.set_title(category)
        ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
    axes[0][0].set_ylabel("share of answers (n = questions)")
    axes[0][-1].legend(fontsize=8, loc="upper right")
    fig.suptitle(f"{data.question_set}: response distribution per category", y=1.04)
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
    series = []
    for run in chosen:
        cis = [_interval(data, run, category, "strict", it) for it in image_types]
        series.append(TransferSeries(run.model, colour(data.palette, run.model),
                                     [run.scores.value(category, "accuracy_adv_pairs", it) for it in image_types],
                                     [c[0] for c in cis], [c[1] for c in cis], [c[2] for c in cis]))
    differences: list[str | None] = [None] * len(image_types)
    if len(chosen) >= 2:
        diffs = _comparisons(data).differences
        pair = diffs[(diffs["a"] == chosen[1].model) & (diffs["b"] == chosen[0].model) & (diffs["kind"] == "model")
                     & (diffs["category"] == category) & (diffs["metric"] == "strict")].set_index("image_type")
        differences = [difference_cell(pair.loc[it]["diff"], pair.loc[it]["ci_low"], pair.loc[it]["ci_high"], 0)
                       if it in pair.index else None for it in image_types]
    subtitle = f"above: {chosen[1].model} - {chosen[0].model} [paired 95% interval]" if len(chosen) >= 2 else ""
    title = f"{data.question_set}: transfer across image types (n = images)\n{subtitle}"
    return draw_transfer([TransferPanel(title, image_types, series, differences)],
                         f"{category}: accuracy with adversarial pairs (%)", REPORT_LAYOUT)


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
