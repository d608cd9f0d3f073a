"""The report's HTML page: the story on its first screen, then a table of contents and the details.

First screen (what a 1366 x 768 window shows without scrolling; tests take a
browser screenshot and check): the title, one line that says what the numbers
are, the summary of every model x category of the main question set (accuracy
with adversarial pairs with its 95% interval, averaged accuracy, exact random,
the blind ceiling, the units), the chart after the paper's Figure 1, and one line
each for the adversarial drop, chain of thought / described prompts, visual
reliance and transfer. Then the table of contents, and every section below it;
the long ones (Table 4, responses, Table 1, Appendix A, the audit, the file
list) are collapsed in ``<details>``. The page's width and body text match the
figures' (probmed.core.figure_style), so a figure shown at 100% has text no
smaller than the page's; it names DejaVu Sans first, the font the figures use.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import pandas as pd

from probmed.core.categories import PER_IMAGE_CATEGORIES
from probmed.core.figure_style import BODY_FONT_PX, PAGE_WIDTH_PX
from probmed.core.markdown import is_missing
from probmed.reporting.figures import DrawnFigure
from probmed.reporting.overall import EXPLANATION
from probmed.reporting.summary import SUMMARY_CATEGORIES, Finding
from probmed.scoring.compare import OVERALL

esc = html.escape

STYLE = (
    f"body{{font-family:'DejaVu Sans',sans-serif;font-size:{BODY_FONT_PX}px;margin:.6em auto;padding:0 1em;"
    f"max-width:{PAGE_WIDTH_PX}px;line-height:1.3}}"
    "h1{font-size:1.5em;margin:.2em 0}h2{margin-top:1.4em}"
    ".lead{margin:.2em 0 .5em;font-size:15px}"
    "table{border-collapse:collapse;margin:.6em 0;font-size:85%;display:block;overflow-x:auto}"
    "td,th{border:1px solid #ccc;padding:3px 5px}"
    "table.summary{font-size:14px;line-height:1.2;margin:.3em 0}"
    "table.summary td{text-align:right;white-space:nowrap}table.summary th{text-align:left}"
    "table.summary tr.ref td,table.summary tr.ref th{background:#f4f4f4;color:#333}"
    "small{color:#555}"
    ".first-row{display:flex;gap:18px;align-items:flex-start}"
    ".first-row figure{margin:0;flex:none}"
    ".findings{margin:0;padding-left:1.1em;font-size:14px}.findings li{margin-bottom:.35em}"
    ".warn{background:#fff4e5;border:1px solid #f0b35a;padding:.5em 1em}"
    "figure{margin:1.5em 0}figcaption{margin-top:.3em}img{max-width:100%;height:auto}"
    "details{margin:.8em 0}summary{cursor:pointer;font-weight:bold;font-size:1.15em}"
    "nav ol{columns:2}"
)


@dataclass
class Section:
    """One part of the page below the table of contents."""

    anchor: str
    title: str
    body: str
    collapsed: bool = False
    entries: list[tuple[str, str]] = field(default_factory=list)  # (anchor, title) listed under it in the TOC


def _number(value: float, digits: int = 1) -> str:
    return "—" if is_missing(value) else f"{value:.{digits}f}"


def _units(value: float) -> int | None:
    return None if is_missing(value) else int(value)


def _summary_cell(row: pd.Series, column_units: int | None, min_units: int) -> str:
    units = _units(row["units"])
    n = "" if units is None or units == column_units else f" <small>(n={units})</small>"
    if math.isnan(row["strict"]) or (units is not None and units < min_units):
        return f"<td>—{'' if units is None else f' <small>(n={units})</small>'}</td>"
    interval = "" if math.isnan(row["ci_low"]) else f" <small>[{_number(row['ci_low'])}, {_number(row['ci_high'])}]</small>"
    averaged = "" if math.isnan(row["averaged"]) else f"<br><small>avg {_number(row['averaged'])}</small>"
    return f"<td><b>{_number(row['strict'])}</b>{interval}{n}{averaged}</td>"


def summary_html(summary: pd.DataFrame, min_units: int) -> str:
    """One question set's summary: models as rows, categories (and overall) as columns, exact random and the blind
    ceiling as the last two rows; each cell the accuracy with adversarial pairs [95% interval] and averaged."""
    cats = [c for c in SUMMARY_CATEGORIES if c in set(summary["category"])]
    first = summary[summary["model"] == summary["model"].iloc[0]].set_index("category")
    heads = []
    column_units = {}
    for cat in cats:
        column_units[cat] = _units(first.loc[cat, "units"]) if cat in first.index else None
        name = "overall<br><small>pooled units</small>" if cat == OVERALL else esc(cat)
        count = column_units[cat]
        heads.append(f"<th>{name}<br><small>n={'—' if count is None else count}</small></th>")
    rows = [f"<thead><tr><th>model (vanilla)</th>{''.join(heads)}</tr></thead><tbody>"]
    for model, part in summary.groupby("model", sort=False):
        by_cat = part.set_index("category")
        cells = "".join(_summary_cell(by_cat.loc[c], column_units[c], min_units) if c in by_cat.index else "<td>—</td>"
                        for c in cats)
        rows.append(f"<tr><th>{esc(str(model))}</th>{cells}</tr>")
    for key, name in (("random", "exact random"), ("blind_ceiling", "blind ceiling (audit)")):
        cells = "".join(f"<td>{_number(first.loc[c, key]) if c in first.index else '—'}</td>" for c in cats)
        rows.append(f"<tr class='ref'><th>{name}</th>{cells}</tr>")
    return f"<table class='summary' id='summary-table'>{''.join(rows)}</tbody></table>"


def lead_html(summary: pd.DataFrame, images: int | None, questions: int | None) -> str:
    """The one line above the summary: the set and what every number in it is."""
    question_set = esc(str(summary["question_set"].iloc[0]))
    size = "" if images is None else f" ({images} images, {questions} questions)"
    return (f"<p class='lead'>Question set <b>{question_set}</b>{size}. In % per model and category: <b>accuracy "
            "with adversarial pairs</b> (both answers of a pair right; "
            f"{' and '.join(PER_IMAGE_CATEGORIES)} all-or-nothing per image) [95% bootstrap interval over images], "
            "and <small>avg</small>: averaged accuracy, i.e. without adversarial pairs; n = scoring units. "
            "<a href='#reading'>How to read</a></p>")


def first_screen(title: str, lead: str, summary: str, headline: DrawnFigure | None, found: Sequence[Finding],
                 warnings: int) -> str:
    """The title, the summary, the chart and the findings: everything above the table of contents."""
    items = [f"<li><b>{esc(f.name)}.</b> {esc(f.text)}</li>" for f in found]
    if warnings:
        items.append(f"<li><b>Warnings.</b> <a href='#warnings'>{warnings} warning(s)</a> to read before any "
                     "difference.</li>")
    chart = ""
    if headline is not None:
        src = f"plots/{headline.path.name}"
        chart = (f"<figure id='headline'><img src='{esc(src)}' alt='{esc(headline.caption)}' "
                 f"title='{esc(headline.caption)}'></figure>")
    return (f"<header><h1>{esc(title)}</h1>{lead}</header><section id='summary'>{summary}"
            f"<div class='first-row'>{chart}<ul class='findings' id='findings'>{''.join(items)}</ul></div></section>")


def toc_html(sections: Sequence[Section]) -> str:
    """The table of contents: every section, and under an open one its figures or tables."""
    items = []
    for s in sections:
        sub = "".join(f"<li><a href='#{esc(a)}'>{esc(t)}</a></li>" for a, t in s.entries)
        items.append(f"<li><a href='#{esc(s.anchor)}'>{esc(s.title)}</a>{f'<ul>{sub}</ul>' if sub else ''}</li>")
    return f"<nav id='toc'><h2>Contents</h2><ol>{''.join(items)}</ol></nav>"


def section_html(section: Section) -> str:
    """A section, collapsed into ``<details>`` when it is long."""
    if section.collapsed:
        return (f"<details id='{esc(section.anchor)}'><summary>{esc(section.title)}</summary>{section.body}"
                "</details>")
    return f"<section id='{esc(section.anchor)}'><h2>{esc(section.title)}</h2>{section.body}</section>"


def reading_section() -> Section:
    """What every number means (once, below the story)."""
    body = ("<p>Accuracies in percent. <b>Accuracy with adversarial pairs</b>: a pair counts only when both answers "
            f"are right ({' and '.join(PER_IMAGE_CATEGORIES)} all-or-nothing per image). <b>Averaged accuracy</b> "
            "(\"without adversarial pairs\"): mean correctness over the questions of the pairs. <b>Exact random</b>: "
            "the scorer's expectation under uniform yes/no answers on the same questions. <b>Blind ceiling</b>: the "
            "accuracy a model that never sees the image reaches with the best fixed answer per question text, learnt "
            "on some images and scored on others (the audit of the full set; overall pooled with this set's units). A "
            "dash means not available, never zero; a number resting on too few scoring units is shown as its n alone, "
            "e.g. “— (n=3)”. Every difference carries a paired bootstrap 95% interval over the same images; n is "
            f"the number of images in figures and of scoring units in tables.</p><p>{EXPLANATION}</p>")
    return Section("reading", "How to read the numbers", body)


def figures_section(figures: Sequence[DrawnFigure], anchor: Callable[[DrawnFigure], str]) -> Section:
    """Every figure with its caption and a link to its PNG, each listed in the contents."""
    parts, entries = [], []
    for f in figures:
        src = f"plots/{f.path.name}"
        parts.append(f"<figure id='{esc(anchor(f))}'><img src='{esc(src)}' alt='{esc(f.caption)}'><figcaption>"
                     f"{esc(f.caption)} <a href='{esc(src)}'>PNG</a></figcaption></figure>")
        entries.append((anchor(f), f.caption.split(":", 1)[0]))
    return Section("figures", "Figures", "".join(parts), entries=entries)


def tables_body(names: Sequence[str], tables: Mapping[str, tuple[str, pd.DataFrame]],
                to_html: Callable[[pd.DataFrame], str]) -> str:
    """The named tables, each with its caption and links to its CSV and Markdown."""
    parts = []
    for name in names:
        caption, frame = tables[name]
        parts.append(f"<h3 id='t-{esc(name)}'>{esc(caption)}</h3>{to_html(frame)}"
                     f"<p><a href='tables/{esc(name)}.csv'>CSV</a> · <a href='tables/{esc(name)}.md'>Markdown</a></p>")
    return "".join(parts)


def render(title: str, first: str, sections: Sequence[Section]) -> str:
    """The whole page: first screen, contents, sections."""
    parts = ["<!doctype html>", f"<html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>",
             f"<style>{STYLE}</style></head><body>", first, toc_html(sections),
             *[section_html(s) for s in sections], "</body></html>"]
    return "\n".join(parts) + "\n"


# Where each table goes (by name prefix), in page order; a table no prefix matches goes to "Other tables".
TABLE_SECTIONS: tuple[tuple[str, str, tuple[str, ...], bool], ...] = (
    ("headline-tables", "Tables 2 and 3: the adversarial drop, every category, every overall", ("table2_", "table3_"),
     False),
    ("blind", "Against exact random and the blind ceiling", ("distinguishable", "blind_ceiling_"), False),
    ("comparisons", "Visual reliance and paired differences", ("visual_reliance", "paired_differences"), False),
    ("table4", "Table 4: procedural diagnosis and error analysis", ("table4_",), True),
    ("responses", "Responses: refusals, unparsed, failed and missing answers", ("responses",), True),
    ("table1", "Table 1: the question sets", ("table1_",), True),
    ("appendix-a", "Appendix A: accuracy per image type", ("appendix_",), True),
    ("audit", "Benchmark validity (the audit)", ("audit_",), True),
)


def short_caption(caption: str, most: int = 70) -> str:
    """A caption as a contents entry: up to its first parenthesis or semicolon, cut at a word, at most `most`."""
    head = caption.split(" (", 1)[0].split(";", 1)[0]
    return head if len(head) <= most else head[:most].rsplit(" ", 1)[0] + " …"


def table_sections(tables: Mapping[str, tuple[str, pd.DataFrame]], to_html: Callable[[pd.DataFrame], str]
                   ) -> list[Section]:
    """The tables grouped into sections (TABLE_SECTIONS), each table listed in the contents under its section."""
    placed: set[str] = set()
    out = []
    groups = [*TABLE_SECTIONS, ("other-tables", "Other tables", ("",), True)]
    for anchor, title, prefixes, collapsed in groups:
        names = [n for n in tables if n not in placed and n.startswith(prefixes)]
        if not names:
            continue
        placed.update(names)
        entries = [(f"t-{n}", short_caption(tables[n][0])) for n in names]
        out.append(Section(anchor, title, tables_body(names, tables, to_html), collapsed,
                           entries=[] if collapsed else entries))
    return out
