"""Markdown tables: no cell can split a row or pass raw HTML into a .md file (issue 24, point 3)."""

from __future__ import annotations

import math

import pandas as pd

from probmed.core.markdown import escape_cell, markdown_table, number_cell
from probmed.reporting.report import table_dataset
from probmed.reporting.report import to_markdown as report_markdown
from probmed.reporting.table1 import to_markdown as table1_markdown
from probmed.scoring.tables import to_markdown as scores_markdown

HOSTILE = "a|b\nc\r\nd<script>&amp;"


def _columns(line: str) -> int:
    """Cells of one table row as a Markdown reader splits it (an escaped pipe stays in its cell)."""
    return len(line.replace("\\|", "").strip().strip("|").split("|"))


def _well_formed(md: str, columns: int) -> None:
    lines = [line for line in md.splitlines() if line.startswith("|")]
    assert len(lines) >= 3 and all(_columns(line) == columns for line in lines), md
    assert "<script>" not in md and "\nc" not in md and "\r" not in md


def test_escape_cell_escapes_pipes_newlines_and_html():
    assert escape_cell(HOSTILE) == "a\\|b<br>c<br>d&lt;script&gt;&amp;amp;"
    assert escape_cell("X-ray - Chest [95% CI] +4.2 —") == "X-ray - Chest [95% CI] +4.2 —"  # ordinary text unchanged


def test_every_cell_and_header_is_escaped():
    md = markdown_table(pd.DataFrame({HOSTILE: [HOSTILE], "n": [1]}))
    _well_formed(md, 2)
    assert md.splitlines()[2] == "| a\\|b<br>c<br>d&lt;script&gt;&amp;amp; | 1 |"


def test_number_cell_shows_missing_and_rounds_floats():
    cell = number_cell("/")
    assert [cell(v) for v in (None, math.nan, pd.NA, 1.234, 3, "x")] == ["/", "/", "/", "1.23", "3", "x"]
    assert number_cell(digits=None)(0.125) == "0.125"


def test_report_scores_and_table1_markdown_keep_their_rows_whole():
    questions = pd.DataFrame({"image_id": ["i1", "i1"], "image_type": ["X-ray | Chest\n", "X-ray | Chest\n"],
                              "category": ["modality", "organ"]})
    table = table_dataset({"set|name": questions})
    _well_formed(report_markdown(table), len(table.columns))
    _well_formed(table1_markdown(table), len(table.columns))
    frame = pd.DataFrame({"model": ["run|<b>x</b>\n"], "averaged_accuracy": [50.0]})
    _well_formed(scores_markdown(frame, "title"), 2)


def test_code_spans_keep_their_text_and_terminal_cells_carry_no_entities():
    assert escape_cell("`<image_id>:abnormality` marks <single> questions") == \
        "`<image_id>:abnormality` marks &lt;single&gt; questions"
    assert escape_cell("``a|b`` x|y") == "``a\\|b`` x\\|y"  # a pipe still cannot end the cell
    assert escape_cell(">=24 GB & <2 GPUs\nnext", markup=False) == ">=24 GB & <2 GPUs next"
    assert markdown_table(pd.DataFrame({"needs": [">=1 GPU"]}), markup=False).endswith("| >=1 GPU |\n")
