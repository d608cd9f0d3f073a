"""The curate -> generate -> stats chain through the `probmed` command, on real VQA-RAD and MedICaT data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from probmed.cli import main
from probmed.core.records import read_image_records, read_questions
from probmed.core.release_format import read_question_file


def test_curate_generate_stats(shared_data: Path, repo_root: Path, tmp_path: Path) -> None:
    params = ["--params", str(repo_root / "params.yaml")]
    for src, folder in (("vqarad", "vqa-rad"), ("medicat", "medicat-sample")):
        assert main(["curate", src, "--data", str(shared_data / folder), "--out", str(tmp_path / f"{src}.parquet"),
                     "--image-root", str(shared_data), *params]) == 0
    assert len(read_image_records(tmp_path / "vqarad.parquet")) == 314
    rep = json.loads((tmp_path / "vqarad.report.json").read_text())
    assert rep["excluded"]["image without questions"] == {"count": 1, "ids": ["synpic35356.jpg"]}
    out = tmp_path / "q"
    args = ["generate", "--records", str(tmp_path / "vqarad.parquet"), str(tmp_path / "medicat.parquet"),
            "--out", str(out / "q.parquet"), "--official", str(out / "test.json"), "--report", str(out / "rep.json"), *params]
    assert main([*args, "--seed", "7", "--strategy", "popular", "audit.enforce=false"]) == 0  # POPE popular fails the gate
    q = read_questions(out / "q.parquet")
    assert read_question_file(out / "test.json")["qid"].tolist() == q["qid"].tolist()
    assert (shared_data / q["image_path"].iat[0]).is_file()  # paths relative to the image root
    gen = json.loads((out / "rep.json").read_text())
    assert gen["seed"] == 7 and gen["strategy"] == "popular" and gen["questions"] == len(q)
    assert gen["gate"]["passed"] is False and (out / "q.audit" / "audit.md").is_file()
    assert set(q.strategy) <= {"gt", "popular"}
    assert main(["stats", "--questions", str(out / "q.parquet"), "--records", str(tmp_path / "vqarad.parquet"),
                 "--out", str(tmp_path / "stats"), *params]) == 0
    t1 = pd.read_csv(tmp_path / "stats" / "table1.csv")
    assert t1.iloc[-1]["image_type"] == "Total" and t1.iloc[-1]["questions"] == len(q)
    assert (tmp_path / "stats" / "stats.md").read_text().startswith("# Dataset statistics")


def test_generate_without_records_fails_clearly(tmp_path: Path, repo_root: Path, capsys) -> None:
    rc = main(["generate", "--records", str(tmp_path / "none.parquet"), "--out", str(tmp_path / "q.parquet"), "--params", str(repo_root / "params.yaml")])
    assert rc == 2 and "run `probmed curate` first" in capsys.readouterr().err
    assert not (tmp_path / "q.parquet").exists()


def test_generate_gate_fails_on_an_unbalanced_set(shared_data: Path, repo_root: Path, tmp_path: Path, capsys) -> None:
    """POPE's popular strategy asks every image about the most common values: the text alone answers it."""
    params = ["--params", str(repo_root / "params.yaml")]
    assert main(["curate", "vqarad", "--data", str(shared_data / "vqa-rad"), "--out", str(tmp_path / "v.parquet"),
                 "--image-root", str(shared_data), *params]) == 0
    capsys.readouterr()
    args = ["generate", "--records", str(tmp_path / "v.parquet"), "--out", str(tmp_path / "q.parquet"),
            "--official", str(tmp_path / "test.json"), "--report", str(tmp_path / "rep.json"), *params]
    assert main([*args, "--strategy", "popular"]) == 2
    err = capsys.readouterr().err
    assert "fails the audit gate" in err and "points above exact random" in err and "audit.enforce=false" in err
    assert not (tmp_path / "q.parquet").exists() and not (tmp_path / "test.json").exists()  # nothing half-made
    assert json.loads((tmp_path / "rep.json").read_text())["gate"]["passed"] is False
    assert (tmp_path / "q.audit" / "audit.md").read_text().count("FAILED") == 1
    assert main([*args, "--strategy", "balanced"]) == 0  # the same records, balanced: the gate passes
    assert json.loads((tmp_path / "rep.json").read_text())["gate"] == {"passed": True, "enforced": True, "failures": [],
                                                                     "unchecked": []}


TIMING_KEYS = ("seconds", "time", "timestamp", "date", "started_at", "finished_at", "elapsed")


def test_identical_curations_write_identical_reports(shared_data: Path, repo_root: Path, tmp_path: Path, capsys) -> None:
    """build/records/*.report.json is a DVC output: a timing in it gave every run a new dvc.lock hash."""
    params = ["--params", str(repo_root / "params.yaml")]
    for run in ("a", "b"):
        assert main(["curate", "vqarad", "--data", str(shared_data / "vqa-rad"), "--out", str(tmp_path / run / "v.parquet"),
                     "--image-root", str(shared_data), *params]) == 0
    first, second = ((tmp_path / run / "v.report.json").read_bytes() for run in ("a", "b"))
    assert first == second
    keys = json.dumps(json.loads(first)).lower()
    assert not [k for k in TIMING_KEYS if f'"{k}"' in keys]
    assert " s); excluded" in capsys.readouterr().out  # the timing is still shown, in the log line


def test_one_curate_names_several_sources_and_writes_what_each_alone_writes(shared_data: Path, repo_root: Path,
                                                                            tmp_path: Path, capsys) -> None:
    """The main job's one curate stage: `probmed curate A B` is `probmed curate A` then `probmed curate B`."""
    params = ["--params", str(repo_root / "params.yaml"), "--image-root", str(shared_data)]
    folders = {"vqarad": "vqa-rad", "medicat": "medicat-sample"}
    for src, folder in folders.items():
        assert main(["curate", src, "--data", str(shared_data / folder), "--out", str(tmp_path / "alone" / f"{src}.parquet"),
                     *params]) == 0
    data = [f"curate.{src}.data={shared_data / folder}" for src, folder in folders.items()]
    assert main(["curate", "vqarad", "medicat", "vqarad", f"curate.records_dir={tmp_path / 'together'}", *data, *params]) == 0
    assert capsys.readouterr().out.count(" records -> ") == 4  # each source once in the run of both
    for src in folders:
        together, alone = (read_image_records(tmp_path / run / f"{src}.parquet") for run in ("together", "alone"))
        assert len(together) > 0 and together == alone
        assert (tmp_path / "together" / f"{src}.report.json").read_bytes() == (tmp_path / "alone" / f"{src}.report.json").read_bytes()
    assert main(["curate", "vqarad", "medicat", "--out", str(tmp_path / "x.parquet"), *params]) == 2
    assert "--out/--data apply to a single source, not 2 (vqarad, medicat)" in capsys.readouterr().err


def test_extract_reads_captions_in_the_profile_named(repo_root: Path, tmp_path: Path) -> None:
    """`--profile paper` keeps the paper's scope (ultrasound and the knee are `other`); `extended` reads them."""
    captions = tmp_path / "captions.tsv"
    captions.write_text("c1\tTransabdominal ultrasound of the right kidney shows a 2 cm cyst.\n"
                        "c2\tAP radiograph of the left knee shows a fracture of the tibial plateau.\n", encoding="utf-8")
    got = {}
    for profile in ("paper", "extended"):
        out = tmp_path / f"{profile}.jsonl"
        assert main(["extract", str(captions), "--profile", profile, "--out", str(out),
                     "--params", str(repo_root / "params.yaml")]) == 0
        got[profile] = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert (got["paper"]["c1"]["modality"], got["paper"]["c2"]["organ"]) == ("other", "other")
    assert (got["extended"]["c1"]["modality"], got["extended"]["c2"]["organ"]) == ("ultrasound", "knee")


def test_curate_all_is_the_curate_stages_sources_and_writes_under_adhoc_by_hand(repo_root: Path) -> None:
    """One list: the curate stage runs `probmed curate all`, the sources of curate.all, whose records generation
    and fine-tuning read; by hand its records and images go under build/adhoc/, never into the stage's outputs."""
    import yaml

    from probmed.cli.options import load_checked_params
    from probmed.core.config import to_plain
    from probmed.core.params_schema import RECORD_TABLES, parse_params

    stage = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]["curate"]
    params = parse_params(to_plain(load_checked_params(str(repo_root / "params.yaml"), [])))
    assert stage["cmd"].split()[:3] == ["probmed", "curate", "all"] and "curate.all" in stage["params"]
    assert params.curate.all == RECORD_TABLES and "roco" not in params.curate.all
    assert {d for d in stage["deps"] if d.startswith("data/")} == {getattr(params.curate, s).data for s in params.curate.all}
    assert params.questions.records == [f"build/records/{s}.parquet" for s in params.curate.all]
    assert params.finetune.records == params.questions.records
    outs = [str(o) for o in stage["outs"]]
    by_hand = [params.curate.records_dir] + [getattr(params.curate, s).images_dir for s in params.curate.all
                                             if hasattr(getattr(params.curate, s), "images_dir")]
    assert all(p.startswith("build/adhoc/") for p in by_hand), by_hand
    assert not [p for p in by_hand for o in outs if p == o or p.startswith(o + "/")]
