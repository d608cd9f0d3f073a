"""One GitHub-Markdown table writer for every table the project writes.

Callers keep their own cell formatting (the paper's tables show a missing value
as "/", the report as an em dash); the layout and the escaping live here once,
so no cell (a model name, an image type, a question-set name from the command
line) can split a row or pass raw HTML into a Markdown file.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any, Callable, Sequence

import pandas as pd

_NEWLINE = re.compile(r"\r\n|\r|\n")


_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)


def escape_cell(text: str, markup: bool = True) -> str:
    """``text`` safe inside one table cell: ``|`` escaped; with ``markup`` (a Markdown or HTML file) HTML's
    ``& < >`` as entities and newlines as ``<br>``, except inside code spans, which show their text as written
    (an entity there would print as ``&lt;``); without (a terminal) the text as it is, on one line."""
    if not markup:
        return _NEWLINE.sub(" ", text).replace("|", "\\|")
    parts, last = [], 0
    for code in _CODE_SPAN.finditer(text):
        parts.append(_NEWLINE.sub("<br>", html.escape(text[last:code.start()], quote=False)))
        parts.append(_NEWLINE.sub(" ", code.group(0)))
        last = code.end()
    parts.append(_NEWLINE.sub("<br>", html.escape(text[last:], quote=False)))
    return "".join(parts).replace("|", "\\|")


def markdown_table(frame: pd.DataFrame, headers: Sequence[str] | None = None,
                   cell: Callable[[Any], str] = str, markup: bool = True) -> str:
    """``frame`` as a Markdown table; ``headers`` default to the column names; every cell and header escaped
    (``markup=False``: for a terminal, no HTML entities; escape_cell)."""
    heads = [escape_cell(str(h), markup) for h in (headers if headers is not None else frame.columns)]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    lines += ["| " + " | ".join(escape_cell(cell(v), markup) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def is_missing(value: Any) -> bool:
    """None, pandas' NA or a float NaN: a value a table shows as missing, never as a number."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def number_cell(missing: str = "—", digits: int | None = 2) -> Callable[[Any], str]:
    """The cell format of the project's tables: a missing value as ``missing``, a float with ``digits``
    decimals (as Python prints it when ``digits`` is None), anything else as its text."""

    def cell(value: Any) -> str:
        if is_missing(value):
            return missing
        if digits is not None and isinstance(value, float):
            return f"{value:.{digits}f}"
        return str(value)

    return cell


def difference_cell(diff: Any, low: Any, high: Any, digits: int = 1) -> str:
    """A difference with its interval, ``"+4.2 [-1.0, +9.5]"``; an em dash when there is none."""
    if is_missing(diff):
        return "—"
    text = f"{float(diff):+.{digits}f}"
    if not (is_missing(low) or is_missing(high)):
        text += f" [{float(low):+.{digits}f}, {float(high):+.{digits}f}]"
    return text
