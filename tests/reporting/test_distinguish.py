"""Per category: a model against exact random, the audit's blind ceiling and the blind baseline run."""

from __future__ import annotations

import pytest
from comparison_runs import QUESTION_SET, write_scores

from probmed.benchmark.audit.blind_ceiling import blind_ceilings
from probmed.core.params_schema import Report
from probmed.reporting.comparisons import compare_runs
from probmed.reporting.distinguish import ceiling_by_category, distinguishability_table, verdict
from probmed.reporting.report import discover_runs
from probmed.scoring.compare import Bootstrap
from probmed.scoring.synthetic import synthetic_questions

CEILING = {"by_category": {"modality": {"units": 40, "random": 25.0, "cross_fitted": 39.8, "type_keyed": 41.0}}}


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


def test_the_ceiling_is_read_from_the_audit_or_per_unit_and_absent_is_empty():
    assert ceiling_by_category({"blind_ceiling": CEILING})["modality"]["cross_fitted"] == 39.8
    assert ceiling_by_category({}) == {} and ceiling_by_category(None) == {}


def test_the_ceiling_of_an_audit_as_probmed_audit_writes_it_is_the_within_image_pair_unit():
    """`probmed audit` writes one ceiling per scoring unit; the report's accuracy is on within-image pairs."""
    questions = synthetic_questions(n_images=60, n_questions=9 * 60, seed=3)
    written = {"gate_unit": "contrast", **blind_ceilings(questions, folds=3)}
    pair = written["pair"]["by_category"]
    read = ceiling_by_category({"blind_ceiling": written})
    assert set(read) == set(pair) and read["modality"]["cross_fitted"] == pair["modality"]["cross_fitted"]
    assert read["condition"]["units"] == pair["condition"]["units"]


def test_each_model_is_compared_with_random_the_ceiling_and_the_blind_run(scored):
    runs, comp = scored
    table = distinguishability_table(runs, comp, {QUESTION_SET: ceiling_by_category({"blind_ceiling": CEILING})},
                                     Report(min_units=1), Bootstrap(200, 0))
    assert set(table["model"]) == {"looker"}  # the blind baseline is the bar, not a row
    row = table[table["category"] == "modality"].iloc[0]
    assert row["blind ceiling (audit)"] == 39.8 and row["vs blind ceiling"] in {"above", "below", "not distinguishable"}
    assert row["Δ vs blind run [95% CI]"].startswith(("+", "-")) and "[" in row["Δ vs blind run [95% CI]"]
    overall = table[table["category"] == "overall (pooled units)"].iloc[0]
    assert overall["vs blind run"] == "above"  # looker answers from the image, blind at chance
    assert table[table["category"] == "organ"]["blind ceiling (audit)"].isna().all()  # no ceiling given: a dash


def test_too_few_units_give_no_verdict(scored):
    runs, comp = scored
    table = distinguishability_table(runs, comp, {}, Report(min_units=10_000), Bootstrap(200, 0))
    for column in ("vs random", "vs blind ceiling", "vs blind run"):
        assert table[column].str.match(r"^— \(n=\d+\)$").all(), table[column]
