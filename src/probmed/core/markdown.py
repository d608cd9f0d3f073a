"""One GitHub-Markdown table layout for every table the project writes.

Callers keep their own cell formatting (the paper's tables show a missing value
as "/", the report as an em dash); the layout lives here once.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import pandas as pd


def markdown_table(frame: pd.DataFrame, headers: Sequence[str] | None = None,
                   cell: Callable[[Any], str] = str) -> str:
    """``frame`` as a Markdown table; ``headers`` default to the column names."""
    heads = [str(h) for h in (headers if headers is not None else frame.columns)]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def difference_cell(diff: Any, low: Any, high: Any, digits: int = 1) -> str:
    """A difference with its interval, ``"+4.2 [-1.0, +9.5]"``; an em dash when there is none."""

    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    if missing(diff):
        return "—"
    text = f"{float(diff):+.{digits}f}"
    if not (missing(low) or missing(high)):
        text += f" [{float(low):+.{digits}f}, {float(high):+.{digits}f}]"
    return text
