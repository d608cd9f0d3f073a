"""The report's accuracy figures from real score outputs: bars with intervals and n, one colour per model,
heatmaps with a colour bar, n per cell and greyed-out sparse cells, and the transfer figure's paired differences."""

from __future__ import annotations

import dataclasses
import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
from comparison_runs import QUESTION_SET, write_scores

from probmed.core.categories import PAIRED_CATEGORIES
from probmed.core.figure_style import (
    FIGURE_WIDTH_IN,
    METRIC_COLOURS,
    MIN_FONT_PT,
    MISSING_COLOUR,
    OKABE_ITO,
    bars,
    hbars,
    model_colours,
    report_style,
)
from probmed.core.params_schema import Report
from probmed.reporting import plots
from probmed.reporting.comparisons import compare_runs
from probmed.reporting.report import discover_runs
from probmed.reporting.runs import FigureInput
from probmed.scoring.compare import Bootstrap

MODELS = ["looker", "blind"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("scores")
    write_scores(root)
    runs = discover_runs(root)
    comp = compare_runs(runs, Bootstrap(200, 0), model_pairs=[("looker", "blind")]).for_set(QUESTION_SET)
    vanilla = [r for r in runs if r.setting == "vanilla"]
    report = Report(transfer_models=["blind", "looker"], transfer_category="condition", min_images_per_cell=5)
    return FigureInput(QUESTION_SET, vanilla, None, comp, model_colours(MODELS), report)


def _texts(fig, start: str) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts if t.get_text().startswith(start)]


def _error_bars(ax) -> int:
    return sum(len(c.get_segments()) for c in ax.collections)


def _reference_lines(ax) -> list[str]:
    """The line styles of the vertical reference lines (exact random dotted, blind ceiling dashed)."""
    return [line.get_linestyle() for line in ax.lines if line.get_linestyle() in (":", "--")]


def _colour(patch) -> tuple[float, ...]:
    return tuple(np.round(patch.get_facecolor()[:3], 3))


def test_strict_vs_averaged_has_two_bars_per_run_with_interval_and_n(data):
    fig = plots.build_strict_vs_averaged(data)
    categories = [c for c in PAIRED_CATEGORIES if c in data.runs[0].scores.categories]
    assert len(fig.axes) == len(categories)
    for ax in fig.axes:
        assert len(ax.patches) == 2 * len(data.runs)  # averaged and strict per run
        assert _error_bars(ax) == 2 * len(data.runs)  # an error bar on every bar
        # the images behind the bars in the panel's title (the same for every run)
        assert re.search(r"\(n = \d+ images\)$", ax.get_title())
        assert _reference_lines(ax) == [":"]  # exact random (no audit: no blind ceiling)
    # the runs on the y axis, horizontal, once per row of panels (shared)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["looker (vanilla)", "blind (vanilla)"]
    assert not [ax for ax in fig.axes if ax.get_legend() is not None] and len(fig.legends) == 1  # outside the data
    seen = {_colour(p) for ax in fig.axes for p in ax.patches}  # without / with adversarial pairs: two colours
    assert seen == {tuple(np.round(plt.matplotlib.colors.to_rgb(c), 3)) for c in METRIC_COLOURS.values()}
    assert not [p.get_hatch() for ax in fig.axes for p in ax.patches if p.get_hatch()]
    plt.close(fig)


def test_the_headline_chart_has_every_vanilla_model_random_and_the_blind_ceiling(data):
    ceiling = dataclasses.replace(data, ceiling={"overall": 31.0})
    fig = plots.build_headline(ceiling)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["looker", "blind"]
    assert len(ax.patches) == 4 and _error_bars(ax) == 4
    assert _reference_lines(ax) == [":", "--"]
    assert sorted(line.get_xdata()[0] for line in ax.lines if line.get_linestyle() in (":", "--")) == pytest.approx(
        sorted([31.0, data.runs[0].scores.random_baseline.overall_value("accuracy_adv_pairs")]))
    assert {t.get_text() for t in fig.legends[0].get_texts()} >= {"exact random", "blind ceiling (audit)"}
    # the images the intervals rest on, and the set's whole count where some image is asked no pair
    total = int(data.runs[0].scores.overall_value("n_images"))
    title = re.fullmatch(r"\w+: n = (\d+)(?: of (\d+) images \(those asked a pair\)| images)", ax.get_title(loc="left"))
    assert title is not None, ax.get_title(loc="left")
    assert int(title.group(2) or title.group(1)) == total
    plt.close(fig)


def test_a_zero_bar_and_a_missing_value_look_different():
    fig, ax = plt.subplots()
    bars(ax, [0, 1], [0.0, math.nan], [0.0, None], [4.0, None], [12, None], "#1f77b4", 0.8)
    assert len(ax.patches) == 1 and ax.patches[0].get_height() == 0.0  # the zero is a bar with its interval
    assert _error_bars(ax) == 1
    marks = [t for t in ax.texts if t.get_text() == "n/a"]
    assert len(marks) == 1 and marks[0].get_position()[0] == 1 and marks[0].get_color() == MISSING_COLOUR
    assert [t.get_text() for t in ax.texts if t.get_text().startswith("n=")] == ["n=12"]
    plt.close(fig)


def test_a_horizontal_zero_bar_says_0_and_a_missing_value_says_n_a():
    """A bar of length 0 cannot be seen: hbars writes "0" there; a missing value is "n/a", never a bar."""
    fig, ax = plt.subplots()
    hbars(ax, [0, 1, 2], [0.0, math.nan, 30.0], [0.0, None, 20.0], [4.0, None, 40.0], "#1f77b4", 0.8)
    assert len(ax.patches) == 2 and _error_bars(ax) == 2
    assert [(t.get_text(), t.get_position()[1]) for t in ax.texts] == [("n/a", 1), ("0", 0)]
    plt.close(fig)


def test_heatmap_has_a_colour_bar_n_per_cell_and_greys_sparse_cells(data):
    fig = plots.build_per_image_type(data)
    every_type = sorted({it for r in data.runs for it in r.scores.image_types})
    cats = data.runs[0].scores.categories
    image_types = [it for it in every_type  # a column grey in every panel is left out (the tables keep it)
                   if any(r.scores.value(c, "n_images", it) >= data.report.min_images_per_cell
                          for r in data.runs for c in cats)]
    assert image_types and (len(image_types) < len(every_type)) == ("not drawn" in fig._suptitle.get_text())
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == len(data.runs[0].scores.categories)
    colourbars = [ax for ax in fig.axes if ax.get_ylabel().startswith("accuracy with adversarial pairs")]
    assert len(colourbars) == 1
    for ax in panels:
        assert ax.images[0].get_array().shape == (len(data.runs), len(image_types))
        assert len(ax.texts) == len(data.runs) * len(image_types)  # every cell says its n (or "—")
    counts = np.array([[data.runs[0].scores.value("modality", "n_images", it)] for it in every_type])
    assert (counts > 0).all()
    plt.close(fig)
    sparse = dataclasses.replace(data, report=dataclasses.replace(data.report, min_images_per_cell=int(counts.max()) + 1))
    fig = plots.build_per_image_type(sparse)
    masks = [np.ma.getmaskarray(ax.images[0].get_array()) for ax in fig.axes if ax.images]
    assert all(mask.all() for mask in masks)  # every cell has fewer images than the threshold: all grey
    assert all(not t.get_text()[:1].isdigit() for ax in fig.axes for t in ax.texts)  # n only, no accuracy
    plt.close(fig)


def test_transfer_figure_has_a_bar_per_model_and_image_type_and_the_paired_difference(data):
    fig = plots.build_transfer(data)
    bars, diff = fig.axes
    drawn = [t.get_text().split("\n")[0] for t in bars.get_yticklabels()]
    counts = [int(t.get_text().split("n=")[1]) for t in bars.get_yticklabels()]
    assert drawn and all(n >= data.report.min_images_per_cell for n in counts)  # only image types with enough images
    assert counts == sorted(counts, reverse=True)  # the most images first
    assert len(bars.patches) + len([t for t in bars.texts if t.get_text() == "n/a"]) == 2 * len(drawn)
    assert len(diff.lines[0].get_xydata()) == len(drawn)  # looker - blind with its paired interval per image type
    assert "looker" in diff.get_xlabel() and "blind" in diff.get_xlabel()
    left_out = len({it for r in data.runs for it in r.scores.image_types}) - len(drawn)
    assert (f"{left_out} image types not drawn" in fig._suptitle.get_text()) == (left_out > 0)
    plt.close(fig)
    unnamed = plots.build_transfer(dataclasses.replace(data, palette={}))  # models the palette does not know
    assert len({_colour(p) for p in unnamed.axes[0].patches}) == 2  # still two colours, never one
    plt.close(unnamed)


BUILDERS = ("build_headline", "build_strict_vs_averaged", "build_per_image_type", "build_response_distribution", "build_transfer",
            "build_visual_reliance", "build_differences")


@pytest.mark.parametrize("builder", BUILDERS)
def test_figure_text_is_no_smaller_than_the_page_body_at_the_page_width(data, builder, tmp_path):
    """Shown at 100% on the page (figure width <= page width at the saved dpi), every text is at least the
    body text's size: checked on the matplotlib objects, after saving (the width the page shows)."""
    with report_style():
        fig = getattr(plots, builder)(data)
        assert fig is not None
        plots._save(fig, tmp_path / "f.png")
        width = fig.get_size_inches()[0]
        texts = [t for t in fig.findobj(plt.matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
        small = {(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < MIN_FONT_PT}
    assert width <= FIGURE_WIDTH_IN + 1e-9 and texts
    assert not small, small


def test_models_get_okabe_ito_colours_and_baselines_fixed_ones():
    colours = model_colours(["tiny", "random", "blind", "gpt", "always-yes"])
    assert [colours[m] for m in ("tiny", "blind", "gpt")] == list(OKABE_ITO[:3])
    assert len(set(colours.values())) == 5 and colours["random"] == model_colours(["random"])["random"]
