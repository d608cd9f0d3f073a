"""Per category: a model against exact random, the audit's blind ceiling and the blind baseline run."""

from __future__ import annotations

import pytest
from comparison_runs import QUESTION_SET, write_scores

from probmed.benchmark.audit.blind_ceiling import BlindCeiling, CeilingCell, blind_ceiling, paper_unit
from probmed.core.params_schema import Report
from probmed.reporting.comparisons import compare_runs
from probmed.reporting.distinguish import ceiling_by_category, distinguishability_table, reading, verdict
from probmed.reporting.report import discover_runs
from probmed.scoring.compare import Bootstrap
from probmed.scoring.synthetic import synthetic_questions

CEILING = BlindCeiling(folds=5, cells=(
    CeilingCell("modality", "pair", units=40, questions=80, texts=4, random=25.0, floor=100 / 3, ceiling=39.8,
                reached_by="table:text", learners={"table:text": 39.8, "words": 30.0}, in_sample=41.0, bar="floor"),
    CeilingCell("modality", "contrast", units=40, questions=80, texts=4, random=25.0, floor=None, ceiling=25.0,
                reached_by="words", learners={"table:text": 0.0, "words": 25.0}, in_sample=0.0),
)).to_json()


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    root = tmp_path_factory.mktemp("scores")
    write_scores(root)
    runs = discover_runs(root)
    return runs, compare_runs(runs, Bootstrap(200, 0))


def test_verdict_is_above_below_or_not_distinguishable():
    assert verdict(30.0, 40.0, 25.0) == "above"
    assert verdict(10.0, 20.0, 25.0) == "below"
    assert verdict(20.0, 30.0, 25.0) == "not distinguishable"
    assert verdict(None, 30.0, 25.0) == "—" and verdict(20.0, 30.0, None) == "—"


def test_the_ceiling_is_read_on_the_scorers_unit_and_absent_or_older_is_empty():
    entry = ceiling_by_category({"blind_ceiling": CEILING})["modality"]
    assert (entry["ceiling"], entry["unit"], entry["reached_by"]) == (39.8, "pair", "table:text")
    assert ceiling_by_category({}) == {} and ceiling_by_category(None) == {}
    assert ceiling_by_category({"blind_ceiling": {"gate_unit": "pair", "pair": {"by_category": {}}}}) == {}


def test_worse_than_random_is_said_only_below_random_and_above_random_below_a_blind_policy_is_said_as_it_is():
    assert reading(10.0, 20.0, 25.0, 39.8) == "worse than random"
    assert reading(20.0, 30.0, 25.0, 39.8) == "not distinguishable from random"
    assert reading(28.0, 35.0, 25.0, 39.8) == "above random, below a blind policy"
    assert reading(30.0, 45.0, 25.0, 39.8) == "above random, not distinguishable from a blind policy"
    assert reading(41.0, 50.0, 25.0, 39.8) == "above random and the blind ceiling"
    assert reading(41.0, 50.0, 25.0, None) == "above random and the blind ceiling"  # no ceiling: random is the bar
    assert reading(None, 50.0, 25.0, 39.8) == "—"


def test_the_ceiling_of_an_audit_as_probmed_audit_writes_it_is_read_on_the_scorers_unit():
    """`probmed audit` writes every unit's ceiling; the report reads the one its strict accuracy uses (pairs,
    per image for condition and position)."""
    questions = synthetic_questions(n_images=60, n_questions=9 * 60, seed=3)
    written = blind_ceiling(questions, folds=3)
    read = ceiling_by_category({"blind_ceiling": written.to_json()})
    assert read and set(read) <= {c.category for c in written.cells}
    for category, entry in read.items():
        cell = written.cell(category, paper_unit(category))
        assert cell is not None and (entry["ceiling"], entry["unit"], entry["units"]) == (cell.ceiling, cell.unit, cell.units)
    if "condition" in read:
        assert read["condition"]["unit"] == paper_unit("condition") != "pair"  # all-or-nothing per image


def test_each_model_is_compared_with_random_the_ceiling_and_the_blind_run(scored):
    runs, comp = scored
    table = distinguishability_table(runs, comp, {QUESTION_SET: ceiling_by_category({"blind_ceiling": CEILING})},
                                     Report(min_units=1), Bootstrap(200, 0))
    assert set(table["model"]) == {"looker"}  # the blind baseline is the bar, not a row
    row = table[table["category"] == "modality"].iloc[0]
    assert row["blind ceiling (audit)"] == 39.8
    assert row["reading"] == reading(*_interval(row), 25.0, 39.8)
    assert row["Δ vs blind run [95% CI]"].startswith(("+", "-")) and "[" in row["Δ vs blind run [95% CI]"]
    overall = table[table["category"] == "overall (pooled units)"].iloc[0]
    assert overall["vs blind run"] == "above"  # looker answers from the image, blind at chance
    assert table[table["category"] == "organ"]["blind ceiling (audit)"].isna().all()  # no ceiling given: a dash


def test_too_few_units_give_no_verdict(scored):
    runs, comp = scored
    table = distinguishability_table(runs, comp, {}, Report(min_units=10_000), Bootstrap(200, 0))
    for column in ("reading", "vs blind run"):
        assert table[column].str.match(r"^— \(n=\d+\)$").all(), table[column]


def _interval(row) -> tuple[float, float]:
    low, high = row["strict % [95% CI]"].split("[")[1].rstrip("]").split(",")
    return float(low), float(high)
