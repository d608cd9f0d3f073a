"""What a person checks on a figure at 100%, as code: no two texts overlap, every text inside the canvas, only
horizontal or vertical text, every character drawn from a font that has it, and at most so many ticks an axis.

Texts are the ones matplotlib really draws (recorded while the canvas draws, so a tick label outside the view
is not counted), measured by their window extents in pixels at the saved dpi. A rotated text's extent is its
axis-aligned box, which overlaps its neighbours' even when the glyphs do not: so the report draws text only at
0 or 90 degrees, where the box is exact, and this says so. A missing glyph is what matplotlib reports when it
draws an empty box (its "Glyph ... missing from font(s)" warning).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from itertools import combinations
from typing import Iterator
from unittest import mock

import matplotlib.pyplot as plt
from matplotlib.text import Text

TOLERANCE_PX = 1.0  # a text may reach this far past the canvas (anti-aliasing)
MIN_GAP_PX = 3.0  # two texts closer than this read as one ("100" of one panel and "0" of the next)


@dataclass
class FigureProblems:
    """Everything a reader would trip over in one figure (empty when it reads cleanly)."""

    overlaps: list[tuple[str, str]] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    slanted: list[tuple[str, float]] = field(default_factory=list)
    missing_glyphs: list[str] = field(default_factory=list)
    crowded_axes: list[tuple[str, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return any((self.overlaps, self.outside, self.slanted, self.missing_glyphs, self.crowded_axes))


def drawn_texts(fig: plt.Figure) -> tuple[list[Text], list[str]]:
    """(every non-empty text drawn when the figure renders, matplotlib's missing-glyph warnings while it did)."""
    drawn: list[Text] = []
    original = Text.draw

    def record(self: Text, renderer) -> None:  # noqa: ANN001 - matplotlib's signature
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return original(self, renderer)

    with warnings.catch_warnings(record=True) as caught, mock.patch.object(Text, "draw", record):
        warnings.simplefilter("always")
        fig.canvas.draw()
    glyphs = [str(w.message) for w in caught if "missing from font" in str(w.message)]
    return list(dict.fromkeys(drawn)), glyphs


def _boxes(fig: plt.Figure, texts: list[Text]) -> Iterator[tuple[Text, object]]:
    renderer = fig.canvas.get_renderer()
    for text in texts:
        yield text, text.get_window_extent(renderer)


def _intersect(a, b) -> bool:  # noqa: ANN001 - matplotlib Bboxes
    """The boxes overlap, or come closer than MIN_GAP_PX."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width > -MIN_GAP_PX and height > -MIN_GAP_PX


def problems(fig: plt.Figure, max_ticks: int = 16) -> FigureProblems:
    """What is wrong with `fig` as saved (call after the figure's size and layout are final)."""
    texts, glyphs = drawn_texts(fig)
    found = FigureProblems(missing_glyphs=glyphs)
    boxes = list(_boxes(fig, texts))
    width, height = fig.bbox.width, fig.bbox.height
    for text, box in boxes:
        if box.x0 < -TOLERANCE_PX or box.y0 < -TOLERANCE_PX or box.x1 > width + TOLERANCE_PX or box.y1 > height + TOLERANCE_PX:
            found.outside.append(text.get_text())
        if text.get_rotation() % 90:
            found.slanted.append((text.get_text(), text.get_rotation()))
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        if _intersect(box_a, box_b):
            found.overlaps.append((a.get_text(), b.get_text()))
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [t for t in axis.get_ticklabels() if t in texts]
            if len(labels) > max_ticks:
                found.crowded_axes.append((ax.get_title() or ax.get_ylabel(), len(labels)))
    return found
