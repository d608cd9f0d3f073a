"""The report's figures as PNG (matplotlib, headless).

One function per figure of the paper, each ``(FigureInput, path) -> path | None``
and named in the figure table (probmed.reporting.figures), which draws them:
Figure 1 (accuracy with adversarial pairs vs averaged accuracy per category),
per image type (Appendix A as heatmaps), the yes-ratio / response distribution
per category (Appendix F), ablation deltas for cot and described (Figure 4 /
Appendix D) and transfer across image types (Figure 5). A figure whose inputs
are absent (no ablation runs, no transfer models) is not drawn, so the HTML
never links an empty picture.
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES  # noqa: E402
from probmed.core.records import TEMP_SUFFIX  # noqa: E402
from probmed.core.settings import ABLATIONS, BASE_SETTING  # noqa: E402
from probmed.reporting.runs import FigureInput, Run  # noqa: E402


def _save(fig: plt.Figure, path: Path) -> Path:
    """Save atomically: a crash never leaves a truncated PNG the HTML links to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)  # a kill's leftover:
    os.close(fd)  # removed by the next report (records.remove_stale_temps), ignored by git and DVC
    try:
        fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _present(runs: Sequence[Run], categories: Sequence[str]) -> list[str]:
    return [c for c in categories if any(c in r.scores.categories for r in runs)]


def figure_strict_vs_averaged(data: FigureInput, path: Path) -> Path | None:
    """Figure 1: per category, averaged accuracy beside accuracy with adversarial pairs, per run."""
    runs, question_set = data.runs, data.question_set
    categories = _present(runs, PAIRED_CATEGORIES)
    if not categories:
        return None
    fig, axes = plt.subplots(1, len(categories), figsize=(4 * len(categories), 4), squeeze=False, sharey=True)
    x = np.arange(len(runs))
    for ax, category in zip(axes[0], categories):
        averaged = [r.scores.value(category, "averaged_accuracy") for r in runs]
        strict = [r.scores.value(category, "accuracy_adv_pairs") for r in runs]
        ax.bar(x - 0.2, averaged, 0.4, label="averaged (without adversarial pairs)", color="#9ecae1")
        ax.bar(x + 0.2, strict, 0.4, label="with adversarial pairs", color="#08519c")
        ax.set_title(category)
        ax.set_xticks(x, [r.label for r in runs], rotation=45, ha="right", fontsize=8)
        ax.set_ylim(0, 100)
    axes[0][0].set_ylabel("accuracy (%)")
    axes[0][0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"{question_set}: accuracy with and without adversarial pairs", y=1.04)
    return _save(fig, path)


def figure_per_image_type(data: FigureInput, path: Path) -> Path | None:
    """Appendix A as heatmaps: accuracy with adversarial pairs per image type, one panel per category."""
    runs, question_set = data.runs, data.question_set
    image_types = sorted({it for r in runs for it in r.scores.image_types})
    categories = _present(runs, CATEGORIES)
    if not image_types or not categories:
        return None
    ncols = min(3, len(categories))
    nrows = math.ceil(len(categories) / ncols)
    panel_w, panel_h = 1.5 + 0.6 * len(image_types), 1.6 + 0.35 * len(runs)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2 + panel_w * ncols, panel_h * nrows), squeeze=False)
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")  # not asked: grey, never "0"
    for k, category in enumerate(categories):
        ax = axes[k // ncols][k % ncols]
        grid = np.array([[r.scores.value(category, "accuracy_adv_pairs", it) for it in image_types] for r in runs])
        ax.imshow(np.ma.masked_invalid(grid), vmin=0, vmax=100, cmap=cmap, aspect="auto")
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                text = "—" if math.isnan(grid[i, j]) else f"{grid[i, j]:.0f}"
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="black" if math.isnan(grid[i, j]) or grid[i, j] > 60 else "white")
        ax.set_title(category)
        ax.set_xticks(range(len(image_types)), image_types, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(runs)), [r.label for r in runs] if k % ncols == 0 else [], fontsize=7)
    for k in range(len(categories), nrows * ncols):
        axes[k // ncols][k % ncols].axis("off")
    fig.tight_layout()
    fig.suptitle(f"{question_set}: accuracy with adversarial pairs per image type", y=1.04)
    return _save(fig, path)


def figure_response_distribution(data: FigureInput, path: Path) -> Path | None:
    """Appendix F: yes / no / refusal / unparsed / failed shares per category, beside the ground-truth yes
    share ("failed": the backend gave up after every retry, or no prediction at all)."""
    runs, question_set, questions = data.runs, data.question_set, data.questions
    categories = _present(runs, CATEGORIES)
    if not categories:
        return None
    fig, axes = plt.subplots(1, len(categories), figsize=(3.5 * len(categories), 4), squeeze=False, sharey=True)
    colors = {"yes": "#31a354", "no": "#de2d26", "refusal": "#756bb1", "unparsed": "#969696",
              "failed": "#252525"}
    for ax, category in zip(axes[0], categories):
        labels, shares = [], {k: [] for k in colors}
        if questions is not None and len(questions):
            subset = questions[questions["category"] == category]
            if len(subset):
                yes = float((subset["answer"] == "yes").mean())
                labels.append("ground truth")
                for key, value in zip(colors, (yes, 1 - yes, 0.0, 0.0, 0.0)):
                    shares[key].append(value)
        for run in runs:
            n = run.scores.value(category, "n_questions")
            failed = (run.scores.value(category, "failed") + run.scores.value(category, "missing")) / n * 100.0 \
                if n else math.nan
            rates = [run.scores.value(category, k) for k in ("yes_ratio", "refusal_rate", "unparsed_rate")] + [failed]
            parts = [0.0 if math.isnan(v) else v / 100.0 for v in rates]  # scorer: percent
            labels.append(run.label)
            for key, value in zip(("yes", "refusal", "unparsed", "failed"), parts):
                shares[key].append(value)
            shares["no"].append(max(0.0, 1.0 - sum(parts)))
        bottom = np.zeros(len(labels))
        for key, color in colors.items():
            ax.bar(range(len(labels)), shares[key], bottom=bottom, color=color, label=key)
            bottom += np.array(shares[key])
        ax.set_title(category)
        ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylim(0, 1.05)
    axes[0][0].set_ylabel("share of answers")
    axes[0][-1].legend(fontsize=8, loc="upper right")
    fig.suptitle(f"{question_set}: response distribution per category", y=1.04)
    return _save(fig, path)


def figure_ablation_deltas(data: FigureInput, path: Path) -> Path | None:
    """Figure 4 / Appendix D: change in accuracy with adversarial pairs vs the model's vanilla run."""
    runs, question_set = data.runs, data.question_set
    vanilla = {r.model: r for r in runs if r.setting == BASE_SETTING}
    pairs = [(r, vanilla[r.model]) for r in runs if r.setting in ABLATIONS and r.model in vanilla]
    categories = _present(runs, CATEGORIES)
    if not pairs or not categories:
        return None
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(categories), 4))
    width = 0.8 / len(pairs)
    x = np.arange(len(categories))
    for k, (run, base) in enumerate(pairs):
        deltas = [
            run.scores.value(c, "accuracy_adv_pairs") - base.scores.value(c, "accuracy_adv_pairs") for c in categories
        ]
        ax.bar(x - 0.4 + width * (k + 0.5), np.nan_to_num(deltas), width, label=f"{run.model}: {run.setting} - vanilla")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, categories)
    ax.set_ylabel("Δ accuracy with adversarial pairs (points)")
    ax.legend(fontsize=8)
    ax.set_title(f"{question_set}: chain-of-thought and description ablations")
    return _save(fig, path)


def figure_transfer(data: FigureInput, path: Path) -> Path | None:
    """Figure 5: a category's accuracy per image type for the base and fine-tuned models named in params
    (``report.transfer_models``, ``report.transfer_category``)."""
    runs, question_set = data.runs, data.question_set
    models, category = data.transfer_models, data.transfer_category
    chosen = [r for r in runs if r.model in models and r.setting == BASE_SETTING]
    image_types = sorted({it for r in chosen for it in r.scores.image_types})
    if len(chosen) < 1 or not image_types:
        return None
    fig, ax = plt.subplots(figsize=(2 + 1.2 * len(image_types), 4))
    width = 0.8 / len(chosen)
    x = np.arange(len(image_types))
    for k, run in enumerate(chosen):
        values = [run.scores.value(category, "accuracy_adv_pairs", it) for it in image_types]
        ax.bar(x - 0.4 + width * (k + 0.5), np.nan_to_num(values), width, label=run.model)
    ax.set_xticks(x, image_types, rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel(f"{category}: accuracy with adversarial pairs (%)")
    ax.legend(fontsize=8)
    ax.set_title(f"{question_set}: transfer across image types")
    return _save(fig, path)
