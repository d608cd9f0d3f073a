"""Every figure the report draws reads at 100%: no overlapping or clipped text, only horizontal or vertical text,
no character drawn as an empty box, at most MAX_AXIS_CATEGORIES image types on an axis, and series told
apart by colour (no hatching). Checked on a full report over an extended-style set: 40 image types, ablations,
image controls, a model comparison and the transfer figure."""

from __future__ import annotations

import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from comparison_runs import QUESTION_SET, write_scores
from figure_checks import problems

from probmed.core.figure_style import MAX_AXIS_CATEGORIES, METRIC_COLOURS, model_colours
from probmed.core.params_schema import Report
from probmed.reporting import plots
from probmed.reporting.figures import FIGURES
from probmed.reporting.report import build_report
from probmed.scoring.compare import Bootstrap

pytestmark = pytest.mark.slow  # a full report over 160 images: ~1 min on 2 cores
IMAGE_TYPES = 40
REPORT = Report(model_comparisons=[["looker", "blind"]], transfer_models=["blind", "looker"],
                transfer_category="modality", min_units=1)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """(every figure as the report saved it, with what a reader would trip over; the report's directory)."""
    tmp = tmp_path_factory.mktemp("readable")
    questions = write_scores(tmp / "scores", n_images=160, resamples=50, image_types=IMAGE_TYPES)
    questions.to_parquet(tmp / "questions.parquet")
    seen: dict[str, tuple[object, list]] = {}
    original = plots._save

    def save(fig, path):  # noqa: ANN001 - as plots._save
        with monkey.context() as m:
            m.setattr(plt, "close", lambda *_: None)  # keep the figure open to measure it after saving
            original(fig, path)
        title = fig._suptitle.get_text() if fig._suptitle is not None else ""
        seen[path.name] = (problems(fig, max_ticks=MAX_AXIS_CATEGORIES),
                           [p.get_hatch() for ax in fig.axes for p in ax.patches if p.get_hatch()],
                           title, [len(ax.get_xticklabels()) if ax.images else len(ax.get_yticklabels())
                                   for ax in fig.axes if ax.get_title() or ax.get_title("left")])
        plt.close(fig)
        return path

    monkey = pytest.MonkeyPatch()
    monkey.setattr(plots, "_save", save)
    try:
        build_report(tmp / "scores", tmp / "out", questions={QUESTION_SET: tmp / "questions.parquet"}, report=REPORT,
                     bootstrap=Bootstrap(50, 0), palette=model_colours(["looker", "blind"]))
    finally:
        monkey.undo()
    return seen, tmp / "out"


def test_every_figure_of_the_table_is_drawn_and_checked(drawn):
    seen, out = drawn
    assert sorted(seen) == sorted(f"{name}_{QUESTION_SET}.png" for name in FIGURES.kinds)
    assert sorted(seen) == sorted(p.name for p in (out / "plots").glob("*.png"))


@pytest.mark.parametrize("name", FIGURES.kinds)
def test_a_figure_reads_at_100_percent(drawn, name):
    found, hatches, _, _ = drawn[0][f"{name}_{QUESTION_SET}.png"]
    assert not found.overlaps, found.overlaps[:5]
    assert not found.outside, found.outside
    assert not found.slanted, found.slanted
    assert not found.missing_glyphs, found.missing_glyphs
    assert not found.crowded_axes, found.crowded_axes
    assert not hatches, f"series told apart by hatching: {set(hatches)}"


def test_the_image_type_axes_hold_at_most_the_cap_and_say_how_many_were_left_out(drawn):
    """40 image types: the heatmap and the transfer figure draw the 15 with the most images and count the rest."""
    seen, out = drawn
    present = len(json.loads((out / "metrics.json").read_text())["probmed-looker-vanilla"])  # written in full
    image_types = pd.read_parquet(out.parent / "questions.parquet")["image_type"].nunique()
    assert present and image_types > MAX_AXIS_CATEGORIES
    for name in ("per_image_type", "transfer"):
        _, _, title, ticks = seen[f"{name}_{QUESTION_SET}.png"]
        assert max(ticks) == MAX_AXIS_CATEGORIES, (name, ticks)
        left_out = int(re.search(r"(\d+) image types not drawn", title).group(1))
        assert left_out == image_types - MAX_AXIS_CATEGORIES, (name, title)


def test_the_checks_catch_what_they_claim():
    """The checker itself: overlapping labels, slanted labels, a clipped title and a glyph DejaVu Sans lacks."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xticks(range(30), [f"a long label {i}" for i in range(30)])
    ax.set_title("x" * 200)
    ax.text(0.5, 0.5, "\N{CJK UNIFIED IDEOGRAPH-4E2D}")
    ax.set_yticks([0, 1], ["a", "b"], rotation=45)
    found = problems(fig, max_ticks=15)
    assert found.overlaps and found.outside and found.slanted and found.missing_glyphs and found.crowded_axes
    plt.close(fig)


def test_the_two_accuracies_are_two_colours(drawn):
    """Without and with adversarial pairs differ by colour, not by shading one colour."""
    averaged, strict = (np.array(plt.matplotlib.colors.to_rgb(METRIC_COLOURS[k])) for k in ("averaged", "strict"))
    assert np.abs(averaged - strict).sum() > 0.5
