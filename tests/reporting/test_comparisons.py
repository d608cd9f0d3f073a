"""The report's paired differences, visual reliance, warnings and their figures, from real score outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from comparison_runs import QUESTION_SET, write_scores

from probmed.core.figure_style import model_colours
from probmed.reporting import comparison_plots
from probmed.reporting.comparisons import compare_runs, differences_table, reliance_table, warnings
from probmed.reporting.report import discover_runs
from probmed.scoring.compare import Bootstrap


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("scores")
    write_scores(root)
    runs = discover_runs(root)
    return runs, compare_runs(runs, Bootstrap(300, 0), model_pairs=[("looker", "blind"), ("nobody", "blind")])


def test_every_ablation_is_compared_with_vanilla_and_named_models_with_each_other(scored):
    _, comp = scored
    setting = comp.differences[comp.differences["kind"] == "setting"]
    pairs = set(zip(setting["model"], setting["a"], setting["b"]))
    assert pairs == {("looker", s, "vanilla") for s in ("cot", "described", "blank", "shuffled")} | {
        ("blind", s, "vanilla") for s in ("blank", "shuffled")}
    models = comp.differences[comp.differences["kind"] == "model"]
    assert set(zip(models["a"], models["b"])) == {("looker", "blind")}  # a pair without runs is skipped
    assert comp.differences[["ci_low", "ci_high"]].notna().all().all()
    same = comp.differences[(comp.differences["a"] == "described")]
    assert (same["diff"] == 0).all() and (same["ci_low"] == 0).all() and (same["ci_high"] == 0).all()


def test_reliance_flags_the_model_that_does_not_look(scored):
    _, comp = scored
    looker = {cat: flag for (_, model, cat), flag in comp.without_looking.items() if model == "looker"}
    blind = {cat: flag for (_, model, cat), flag in comp.without_looking.items() if model == "blind"}
    assert looker["overall"] is False and looker["modality"] is False
    assert blind and all(blind.values())
    drops = comp.reliance[comp.reliance["model"] == "blind"]
    assert (drops["drop"] == 0).all() and (drops["ci_low"] == 0).all() and (drops["ci_high"] == 0).all()
    table = reliance_table(comp)
    assert len(table) == 2 * 6  # two models, five categories and overall
    row = table[(table["model"] == "looker") & (table["category"] == "overall (pooled units)")].iloc[0]
    assert row["answers without looking"] == "no" and row["Δstrict blank"].startswith("+")
    assert "[" in row["Δstrict shuffled"] and table["images"].dtype.kind == "i"


def test_warnings_name_identical_settings_and_models_that_do_not_look(scored):
    _, comp = scored
    text = "\n".join(warnings(comp))
    assert "looker (described) gave the same answer as looker (vanilla)" in text
    assert "blind (blank) gave the same answer as blind (vanilla)" in text
    assert "blind answers without looking in" in text and "looker answers without looking" not in text


def test_differences_table_has_an_interval_in_every_difference_cell(scored):
    _, comp = scored
    table = differences_table(comp)
    assert len(table) == (6 + 1) * 6  # six setting comparisons and one model pair, six rows each
    assert table["Δ strict [95% CI]"].str.match(r"^[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\]$").all()
    assert "looker - blind" in set(table["comparison"]) and "looker: cot - vanilla" in set(table["comparison"])


def count_bars(fig) -> int:
    return sum(len(ax.patches) for ax in fig.axes)


def test_reliance_figure_has_a_bar_per_model_category_and_control(scored, tmp_path):
    runs, comp = scored
    fig = comparison_plots.reliance_figure(comp.for_set(QUESTION_SET), QUESTION_SET)
    assert len(fig.axes) == 2 and count_bars(fig) == 2 * 6 * 2
    colours = {tuple(np.round(p.get_facecolor()[:3], 3)) for p in fig.axes[0].patches}
    assert len(colours) == 2  # blank and shuffled in two colours, never one colour told apart by hatching
    assert not [p.get_hatch() for p in fig.axes[0].patches if p.get_hatch()]
    path = tmp_path / "reliance.png"
    fig.savefig(path)
    assert path.stat().st_size > 10_000
    assert comparison_plots.reliance_figure(comp.for_set("other"), "other") is None


def test_differences_figure_has_a_bar_per_comparison_and_category(scored):
    _, comp = scored
    fig = comparison_plots.differences_figure(comp.for_set(QUESTION_SET), QUESTION_SET)
    # cot and described minus vanilla, and looker - blind: three series over six categories, three colours
    assert count_bars(fig) == 3 * 6
    assert len(fig.legends[0].get_texts()) == 3
    assert len({tuple(np.round(p.get_facecolor()[:3], 3)) for p in fig.axes[0].patches}) == 3


# --- in the report ---------------------------------------------------------------


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from probmed.core.params_schema import Report
    from probmed.reporting.report import build_report

    tmp = tmp_path_factory.mktemp("report")
    write_scores(tmp / "scores")
    report = Report(model_comparisons=[["looker", "blind"]], transfer_models=["blind", "looker"], min_images_per_cell=5)
    manifest = build_report(tmp / "scores", tmp / "out", report=report, bootstrap=Bootstrap(300, 0),
                            palette=model_colours(["looker", "blind"]))
    return tmp / "out", manifest


def html_tables(page: str) -> list[list[list[str]]]:
    import re

    tables = []
    for body in re.findall(r"<table.*?</table>", page, flags=re.S):
        rows = re.findall(r"<tr.*?</tr>", body, flags=re.S)
        tables.append([[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[hd].*?</t[hd]>", r, re.S)]
                       for r in rows])
    return tables


def test_report_shows_reliance_differences_and_warnings(report):
    out, manifest = report
    page = (out / "index.html").read_text()
    assert "Warnings" in page and "looker (described) gave the same answer as looker (vanilla)" in page
    assert "Visual reliance" in page and "Paired differences" in page
    reliance = (out / "tables" / "visual_reliance.md").read_text()
    assert "| probmed | looker | overall (pooled units) |" in reliance and "answers without looking" in reliance
    names = {p.split("/")[-1] for p in manifest["files"]["plots"]}
    assert {"visual_reliance_probmed.png", "differences_probmed.png", "transfer_probmed.png"} <= names
    for name in ("visual_reliance.csv", "paired_differences.csv"):
        assert len(pd.read_csv(out / name)) > 0


def test_every_table_fits_a_1400_px_page_and_counts_are_integers(report):
    """Estimated at 7 px per character of the widest cell plus 12 px of padding per column (85% font)."""
    out, _ = report
    page = (out / "index.html").read_text()
    for table in html_tables(page):
        widths = [max(len(row[j]) for row in table if j < len(row)) for j in range(len(table[0]))]
        assert sum(7 * w + 12 for w in widths) < 1400, table[0]
    for stage in ("abnormality", "condition", "position"):
        assert pd.read_csv(out / "tables" / f"table4_procedural_{stage}.csv")["n_images"].dtype.kind == "i"
        rows = (out / "tables" / f"table4_procedural_{stage}.md").read_text().splitlines()[2:]
        assert all(row.split("|")[4].strip().isdigit() for row in rows)  # n_images as integers, never "5.00"


def test_report_figures_are_nontrivial(report):
    from png_checks import assert_nontrivial_png

    out, manifest = report
    for path in manifest["files"]["plots"]:
        assert_nontrivial_png(out / path)
