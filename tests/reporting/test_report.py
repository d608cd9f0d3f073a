"""Report tables, figures and the HTML page from metrics.json files in the scorer's shape."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from metrics_factory import make_metrics
from png_checks import assert_nontrivial_png

from probmed.core.errors import ReportError, ScoresError
from probmed.core.params_schema import Report
from probmed.reporting.report import build_report, discover_runs, table_adversarial_drop, to_markdown

RUNS = [
    ("probmed", "tiny", "vanilla"),
    ("probmed", "tiny", "cot"),
    ("probmed", "tiny", "described"),
    ("probmed", "always-yes", "vanilla"),
    ("probmed", "tiny-lora", "vanilla"),
    ("vqarad-adv", "tiny", "vanilla"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    for seed, (qset, model, setting) in enumerate(RUNS):
        path = tmp / "scores" / qset / model / setting / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(make_metrics(seed)))
    questions = pd.DataFrame(
        {
            "image_id": ["a", "a", "b", "b", "b"],
            "image_type": ["X-ray - Chest"] * 2 + ["CT Scan - Brain"] * 3,
            "category": ["modality", "modality", "organ", "organ", "abnormality"],
            "answer": ["yes", "no", "yes", "no", "yes"],
        }
    )
    questions.to_parquet(tmp / "q.parquet")
    manifest = build_report(tmp / "scores", tmp / "out", questions={"probmed": tmp / "q.parquet"},
                            report=Report(transfer_models=["tiny", "tiny-lora"], model_comparisons=[]))
    return tmp / "out", manifest


def test_tables_have_one_row_per_model_and_setting(report):
    out, manifest = report
    assert len(manifest["runs"]) == len(RUNS)
    table3 = pd.read_csv(out / "tables" / "table3_categories.csv")
    assert len(table3) == len(RUNS) + 2  # + one exact random-baseline row per question set
    assert (table3.model == "random (exact)").sum() == 2
    assert table3[table3.model == "random (exact)"]["modality"].tolist() == [25.0, 25.0]
    assert list(table3.columns[:8]) == ["question_set", "model", "setting", *
                                        ["modality", "organ", "abnormality", "condition", "position"]]
    first = table3[(table3.model == "always-yes")].iloc[0]
    assert first["organ"] == pytest.approx(make_metrics(3)["by_category"]["organ"]["accuracy_adv_pairs"])
    table1 = pd.read_csv(out / "tables" / "table1_dataset.csv")
    assert table1.set_index("image_type").loc["all", "questions"] == 5
    assert table1.set_index("image_type").loc["CT Scan - Brain", "images"] == 1
    table2 = pd.read_csv(out / "tables" / "table2_adversarial_drop.csv")
    assert len(table2) == 5  # (model, setting) rows; question sets are columns
    assert {"probmed averaged, pooled", "probmed overall (pooled units)", "vqarad-adv drop %"} <= set(table2.columns)
    appendix = sorted(p.name for p in (out / "tables").glob("appendix_*.csv"))
    assert appendix == ["appendix_ct_scan_brain.csv", "appendix_mri_abdomen.csv", "appendix_x_ray_chest.csv"]
    table4 = pd.read_csv(out / "table4_procedural.csv")  # the full table; the report shows it split by stage
    assert {"table4_procedural_abnormality.md", "table4_procedural_condition.md"} <= {
        p.name for p in (out / "tables").iterdir()}
    assert "condition.e_accept_hallucination" in table4.columns
    assert math.isnan(table4["position.accuracy"].iloc[0])  # null stays missing


def test_table2_uses_pooled_overall_when_the_scorer_gives_it(report):
    out, _ = report
    table2 = pd.read_csv(out / "tables" / "table2_adversarial_drop.csv").set_index(["model", "setting"])
    overall = make_metrics(0)["overall"]  # RUNS[0] = probmed/tiny/vanilla, seed 0
    assert table2.loc[("tiny", "vanilla"), "probmed overall (pooled units)"] == pytest.approx(
        overall["accuracy_adv_pairs"])
    assert table2.loc[("tiny", "vanilla"), "probmed averaged, pooled"] == pytest.approx(overall["averaged_accuracy"])


def test_table2_falls_back_to_pooling_the_paired_categories(tmp_path):
    """Averaged pooled over questions, strict over units: the same definition as the scorer's pooled overall."""
    metrics = {"by_category": {
        "modality": {"averaged_accuracy": 80, "accuracy_adv_pairs": 60, "n_questions": 10, "n_units": 5},
        "organ": {"averaged_accuracy": 40, "accuracy_adv_pairs": 20, "n_questions": 30, "n_units": 15},
        "abnormality": {"averaged_accuracy": 0, "accuracy_adv_pairs": 0, "n_questions": 1000},
    }}
    path = tmp_path / "s" / "q" / "m" / "vanilla" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(metrics))
    row = table_adversarial_drop(discover_runs(tmp_path / "s")).iloc[0]
    assert row["q averaged, pooled"] == pytest.approx(50.0)
    assert row["q overall (pooled units)"] == pytest.approx(30.0)
    assert row["q drop %"] == pytest.approx(40.0)


def test_every_png_is_nontrivial_and_expected_figures_exist(report):
    out, manifest = report
    names = {Path(p).name for p in manifest["files"]["plots"]}
    assert {
        "headline_probmed.png",
        "fig1_strict_vs_averaged_probmed.png",
        "per_image_type_probmed.png",
        "response_distribution_probmed.png",
        "transfer_probmed.png",
        "fig1_strict_vs_averaged_vqarad-adv.png",
    } <= names
    # differences need the runs' per-image sums (probmed score writes them; these metrics files have none)
    assert not any(n.startswith(("differences_", "visual_reliance_")) for n in names)
    for png in (out / "plots").glob("*.png"):
        assert_nontrivial_png(png)
    assert sorted((out / "plots").glob("*.png")) == sorted(out / p for p in manifest["files"]["plots"])


def test_html_references_only_existing_files(report):
    out, manifest = report
    page = (out / "index.html").read_text()
    refs = re.findall(r"(?:src|href)='([^']+)'", page)
    assert len(refs) >= len(manifest["files"]["plots"]) + 2
    ids = set(re.findall(r" id='([^']+)'", page))
    for ref in refs:  # a file written beside the page, or an element of the page (the contents' links)
        assert ref[1:] in ids if ref.startswith("#") else (out / ref).is_file(), ref
    assert any(ref.startswith("#") for ref in refs)
    assert all(f"src='{p}'" in page for p in manifest["files"]["plots"])
    per_category = pd.read_csv(out / "per_category.csv")
    assert set(per_category.columns) == {"label", "run", "category", "accuracy_adv_pairs", "averaged_accuracy"}
    assert len(per_category) == len(RUNS) * 5 and per_category["label"].is_unique
    summary = json.loads((out / "metrics.json").read_text())
    assert set(summary) == {f"{q}-{m}-{s}" for q, m, s in RUNS}
    expected = make_metrics(0)["by_category"]["organ"]["accuracy_adv_pairs"]
    assert summary["probmed-tiny-vanilla"]["organ"]["accuracy_adv_pairs"] == pytest.approx(expected)


def test_markdown_shows_missing_as_dash():
    md = to_markdown(pd.DataFrame({"model": ["a|b"], "acc": [float("nan")]}))
    assert md.splitlines()[2] == "| a\\|b | — |"


def test_several_score_roots_join_and_duplicates_are_refused(tmp_path):
    for root, model in (("a", "base"), ("b", "adapted")):
        path = tmp_path / root / "heldout" / model / "vanilla" / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(make_metrics(1)))
    runs = discover_runs([tmp_path / "a", tmp_path / "b"])
    assert [r.model for r in runs] == ["adapted", "base"]
    with pytest.raises(ReportError, match="two score roots"):
        discover_runs([tmp_path / "a", tmp_path / "a"])


def test_no_runs_or_bad_metrics_is_a_clear_error(tmp_path):
    with pytest.raises(ReportError, match="not found"):
        discover_runs(tmp_path / "missing")
    with pytest.raises(ReportError, match="no <question_set>"):
        discover_runs(tmp_path)
    bad = tmp_path / "q" / "m" / "vanilla" / "metrics.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{")
    with pytest.raises(ScoresError, match=str(bad)):
        discover_runs(tmp_path)


def test_audit_section(tmp_path):
    """A `probmed audit` directory becomes the set's benchmark-validity table, the full audit linked."""
    from probmed.benchmark.audit import gate, run_audit
    from probmed.benchmark.questions import generate_questions
    from probmed.cli.audit import write_audit
    from probmed.core.params_schema import Audit
    from probmed.core.records import Finding, ImageRecord

    recs = [ImageRecord(f"i{k}", "S", "x-ray" if k % 2 else "ct", "chest", bool(k % 3), [Finding("mass")] if k % 3 else [],
                        image_path=f"{k}.png") for k in range(12)]
    q, _ = generate_questions(recs, strategy="random")
    audit = run_audit(q, recs, None, Audit())
    write_audit(audit, gate(audit, 5.0).to_json(), tmp_path / "audit")
    path = tmp_path / "scores" / "probmed" / "tiny" / "vanilla" / "metrics.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(make_metrics(0)))
    build_report(tmp_path / "scores", tmp_path / "out", audits={"probmed-full": tmp_path / "audit"})
    table = pd.read_csv(tmp_path / "out" / "tables" / "audit_probmed_full.csv")
    assert list(table["category"])[-1] == "overall" and {"exact random", "oracle", "blind"} <= set(table.columns)
    page = (tmp_path / "out" / "index.html").read_text()
    assert "Benchmark validity (probmed-full)" in page and "audit/probmed_full.md" in page
    assert (tmp_path / "out" / "audit" / "probmed_full.md").read_text().startswith("# Question-set audit")
    with pytest.raises(ReportError, match="run `probmed audit` first"):
        build_report(tmp_path / "scores", tmp_path / "out2", audits={"x": tmp_path / "missing"})


KILLED_MID_PLOT = """
import os, sys, time
real_replace = os.replace
def hang(src, dst):
    if str(dst).endswith(".png"):
        print("saving", flush=True)
        time.sleep(300)  # killed here: the figure is written under its temporary name, not yet renamed
    real_replace(src, dst)
os.replace = hang
from probmed.reporting.report import build_report
build_report(sys.argv[1], sys.argv[2])
"""


@pytest.mark.slow
def test_a_killed_report_leaves_no_hidden_temporary_file(report, tmp_path):
    import signal
    import subprocess
    import sys

    scores = report[0].parent / "scores"
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", KILLED_MID_PLOT, str(scores), str(out)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "saving"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = [p for p in out.rglob(".*") if p.is_file()]
    assert left, "the kill should have caught a figure under its temporary name"
    build_report(scores, out)  # the next report run (dvc repro re-runs the stage)
    assert [p for p in out.rglob(".*") if p.is_file()] == []
    assert_nontrivial_png(out / "plots" / sorted(p.name for p in (out / "plots").glob("*.png"))[0])


def test_no_table_shows_pandas_na_and_thin_numbers_show_their_n(report):
    """Count columns are Int64 (missing = <NA>): the page and the Markdown show a dash; an image type's cells
    rest on 5 units (< report.min_units = 10), so they show "— (n=5)", never a number."""
    out, _ = report
    page = (out / "index.html").read_text()
    assert "&lt;NA&gt;" not in page and "<NA>" not in page and ">nan<" not in page
    for md in (out / "tables").glob("*.md"):
        assert "<NA>" not in md.read_text() and "&lt;NA&gt;" not in md.read_text(), md.name
    appendix = (out / "tables" / "appendix_x_ray_chest.md").read_text()
    assert "— (n=5)" in appendix and not re.search(r"\d\.\d\d \(n=5\)", appendix)
    table3 = (out / "tables" / "table3_categories.md").read_text()
    assert re.search(r"\| \d+\.\d\d \(n=20\) \|", table3)  # 20 units: the number with its n
    csv = pd.read_csv(out / "tables" / "appendix_x_ray_chest.csv")  # the CSV keeps both, as numbers
    assert {"modality", "modality n"} <= set(csv.columns) and csv["modality n"].eq(5).all()


def test_every_overall_header_names_its_definition_and_the_page_says_how_they_differ(report):
    out, _ = report
    table3 = pd.read_csv(out / "tables" / "table3_categories.csv")
    assert "overall (paper-weighted)" in table3.columns and not any(c == "overall" for c in table3.columns)
    cont = pd.read_csv(out / "tables" / "table3_overall.csv")
    assert {"overall (pooled units)", "overall (question-weighted)"} <= set(cont.columns)
    table2 = pd.read_csv(out / "tables" / "table2_adversarial_drop.csv")
    assert all("adv. pairs" not in c for c in table2.columns)
    page = (out / "index.html").read_text()
    assert "Three overall accuracies with adversarial pairs" in page
    summary = json.loads((out / "metrics.json").read_text())["probmed-tiny-vanilla"]["overall"]
    assert set(summary) == {"overall_paper_weighted", "overall_pooled", "overall_question_weighted", "averaged_pooled"}


def test_figures_have_captions_with_their_images_and_the_main_set_comes_first(report):
    out, manifest = report
    page = (out / "index.html").read_text()
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    # every figure but the first screen's chart (its caption is its title attribute: the summary explains it)
    assert len(captions) == len(manifest["files"]["plots"]) - 1
    assert re.search(r"<figure id='headline'><img src='plots/headline_probmed.png' alt='[^']*rests on \d+ images", page)
    assert all(re.search(r"rests on \d+ images", c) for c in captions), captions
    assert all(not c.startswith("plots/") for c in captions)
    assert manifest["runs"][0].startswith("probmed/")  # the set of params datasets.question_sets first
    assert manifest["files"]["plots"][0].endswith("_probmed.png")


def test_the_main_set_opens_the_page_even_when_another_sorts_first(tmp_path):
    for qset in ("finetune-heldout", "probmed"):
        path = tmp_path / "scores" / qset / "tiny" / "vanilla" / "metrics.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(make_metrics(0)))
    questions = pd.DataFrame({"image_id": ["a"], "image_type": ["X-ray - Chest"], "category": ["modality"],
                              "answer": ["yes"]})
    questions.to_parquet(tmp_path / "q.parquet")
    manifest = build_report(tmp_path / "scores", tmp_path / "out", questions={"probmed": tmp_path / "q.parquet"},
                            report=Report(transfer_models=[], model_comparisons=[]))
    assert manifest["runs"] == ["probmed/tiny/vanilla", "finetune-heldout/tiny/vanilla"]
