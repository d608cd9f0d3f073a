"""`probmed score`, `probmed score-official`, `probmed baseline`: outputs, exit codes, no partial output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from scoring_helpers import build, pair

from probmed.cli import main
from probmed.core.records import read_predictions, write_predictions
from probmed.core.release_format import write_question_file

CHEST = "X-ray - Chest"
SPEC = [
    ("a", CHEST, pair("modality", "yes", "no") + pair("body_part", "yes", "yes") + [("abnormality", "yes", "yes")]
     + pair("entity", "yes", "no", 1) + pair("grounding", "yes", "no", 1)),
    ("b", "CT Scan - Brain", pair("modality", "yes", "no") + pair("body_part", "yes", "no")
     + [("abnormality", "no", "no"), ("entity_hallu", "no", "refusal")]),
]


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    questions, predictions = build(SPEC)
    qfile = tmp_path / "test.json"
    write_question_file(questions, qfile)
    pfile = tmp_path / "pred.parquet"
    full = predictions.assign(response="", p_yes=float("nan"), latency_s=0.0, prompt_tokens=0,
                              completion_tokens=0, cost_usd=0.0, cache_key="", error="")
    write_predictions(full, pfile)
    return qfile, pfile


def test_score_writes_metrics_and_tables(files, tmp_path: Path, capsys) -> None:
    qfile, pfile = files
    out = tmp_path / "scores"
    assert main(["score", str(qfile), str(pfile), "--out-dir", str(out), "--params",
                 str(Path(__file__).resolve().parents[2] / "params.yaml"), "score.bootstrap_resamples=50"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["meta"]["bootstrap_resamples"] == 50
    assert metrics["by_category"]["organ"]["accuracy_adv_pairs"] == 50.0
    assert metrics["by_category"]["condition"]["single_accuracy"] == 0.0
    for name in ("table2", "table3", "table_image_types", "table4", "table_subsets"):
        assert (out / f"{name}.csv").exists() and (out / f"{name}.md").exists()
    assert "accuracy with adversarial pairs" in capsys.readouterr().out


def test_score_refuses_malformed_question_file(files, tmp_path: Path, capsys) -> None:
    qfile, pfile = files
    records = json.loads(qfile.read_text())
    records[3]["answer"] = "maybe"
    qfile.write_text(json.dumps(records))
    out = tmp_path / "scores"
    assert main(["score", str(qfile), str(pfile), "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "record 3 (image a): field 'answer'" in err
    assert not out.exists()


def test_score_refuses_bad_override(files, tmp_path: Path, capsys) -> None:
    qfile, pfile = files
    params = Path(__file__).resolve().parents[2] / "params.yaml"
    out = tmp_path / "scores"
    assert main(["score", str(qfile), str(pfile), "--out-dir", str(out), "--params", str(params),
                 "score.no_such_key=1"]) == 2
    assert "no_such_key" in capsys.readouterr().err
    assert not out.exists()


def test_baseline_command(files, tmp_path: Path) -> None:
    qfile, _ = files
    out = tmp_path / "yes.parquet"
    assert main(["baseline", "always-yes", str(qfile), "--out", str(out)]) == 0
    preds = read_predictions(out)
    assert len(preds) == 15 and set(preds["label"]) == {"yes"}
    r1, r2 = tmp_path / "r1.parquet", tmp_path / "r2.parquet"
    assert main(["baseline", "random", str(qfile), "--out", str(r1), "--seed", "5"]) == 0
    assert main(["baseline", "random", str(qfile), "--out", str(r2), "--seed", "5"]) == 0
    assert read_predictions(r1)["label"].tolist() == read_predictions(r2)["label"].tolist()


def _responses(qfile: Path) -> list[dict]:
    return [
        {"id": r["id"], "image_type": r["image_type"], "qa_type": r["qa_type"], "question": r["question"],
         "gt_ans": r["answer"], "response": "Yes" if r["answer"] == "yes" else "Normal"}
        for r in json.loads(qfile.read_text())
    ]


def test_score_official_output_shape(files, tmp_path: Path) -> None:
    qfile, _ = files
    rfile = tmp_path / "responses.json"
    rfile.write_text(json.dumps(_responses(qfile)))
    out = tmp_path / "official.json"
    assert main(["score-official", str(rfile), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert list(result) == ["by_image_type", "by_category", "overall", "warnings"]
    assert list(result["overall"]) == ["acc", "num", "acc_wo_adv", "num_wo_adv"]
    assert list(result["by_category"]) == ["modality", "organ", "abnormality", "condition", "position"]
    for m in result["by_category"].values():
        assert list(m) == ["acc", "acc_wo_adv", "num"]
    assert result["by_category"]["abnormality"]["acc_wo_adv"] is None
    assert result["overall"]["acc"] == 100.0  # "Normal" counts as a "no"
    assert result["by_image_type"]["CT Scan - Brain"]["position"] == {"acc": None, "acc_wo_adv": None, "num": 1}
    assert any("no position questions" in w for w in result["warnings"])


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json", "not valid JSON"),
        ('{"a": 1}', "expected a JSON list"),
        (json.dumps([{"id": "a", "image_type": CHEST, "qa_type": "abnormality", "question": "q", "gt_ans": "yes"}]),
         "record 0 (image a): field 'response': missing"),
    ],
)
def test_score_official_refuses_malformed_file(tmp_path: Path, capsys, content: str, needle: str) -> None:
    rfile = tmp_path / "responses.json"
    rfile.write_text(content)
    out = tmp_path / "official.json"
    assert main(["score-official", str(rfile), "--out", str(out)]) == 2
    assert needle in capsys.readouterr().err
    assert not out.exists()


def test_missing_input_file_is_a_user_error(tmp_path: Path, capsys) -> None:
    assert main(["score-official", str(tmp_path / "nope.json"), "--out", str(tmp_path / "o.json")]) == 2
    assert "nope.json" in capsys.readouterr().err


@pytest.mark.slow
def test_console_script_exit_code(tmp_path: Path) -> None:
    rfile = tmp_path / "responses.json"
    rfile.write_text("[1]")
    proc = subprocess.run([sys.executable, "-m", "probmed", "score-official", str(rfile), "--out",
                           str(tmp_path / "o.json")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "record 0: expected an object" in proc.stderr
    assert not (tmp_path / "o.json").exists()


def test_real_vqarad_set_scores_always_yes_at_zero(shared_data: Path, tmp_path: Path) -> None:
    """The real VQA-RAD adversarial set (built from ../shared/data) passes the strict reader and
    scores the paired properties: always-yes 0% with adversarial pairs, 50% averaged."""
    from probmed.benchmark.vqarad_adversarial import build_vqarad_adversarial

    frame, _report = build_vqarad_adversarial(shared_data / "vqa-rad", shared_data / "vqa-rad")
    qfile = tmp_path / "vqarad.json"
    write_question_file(frame, qfile, with_category=True)
    pfile = tmp_path / "yes.parquet"
    assert main(["baseline", "always-yes", str(qfile), "--out", str(pfile)]) == 0
    out = tmp_path / "scores"
    assert main(["score", str(qfile), str(pfile), "--out-dir", str(out), "--params",
                 str(Path(__file__).resolve().parents[2] / "params.yaml"), "score.bootstrap_resamples=20"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["meta"]["question_set"] == "vqarad"
    assert metrics["overall"]["accuracy_adv_pairs"] == 0.0
    assert metrics["overall"]["averaged_accuracy"] == 50.0
    assert metrics["overall"]["n_units"] == len(frame) // 2
    table2 = pd.read_csv(out / "table2.csv")
    assert table2.loc[0, "accuracy_adv_pairs"] == 0.0
    # the same answers through the original VQA-RAD ablation scorer (pairs by position)
    from probmed.core.release_format import read_question_file, write_response_file

    rfile = tmp_path / "responses.json"
    write_response_file(read_question_file(qfile), read_predictions(pfile), rfile)
    assert main(["score-official", str(rfile), "--out", str(tmp_path / "o.json"), "--vqarad"]) == 0
    official = json.loads((tmp_path / "o.json").read_text())
    assert (official["averaged_accuracy"], official["accuracy_adv_pairs"]) == (50.0, 0.0)
    assert official["num_pairs"] == len(frame) // 2 and official["warnings"] == []


def test_score_responses_uses_robust_parsing(files, tmp_path: Path) -> None:
    qfile, _ = files
    recs = _responses(qfile)
    for r in recs:
        r["response"] = "The answer is yes." if r["gt_ans"] == "yes" else "**No**, it is not."
    recs[4]["response"] = "I cannot determine this from the image."
    rfile = tmp_path / "responses.json"
    rfile.write_text(json.dumps(recs))
    out = tmp_path / "scores"
    assert main(["score-responses", str(rfile), "--out-dir", str(out), "--params",
                 str(Path(__file__).resolve().parents[2] / "params.yaml"), "score.bootstrap_resamples=10"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["meta"]["model"] == "responses"
    assert metrics["by_category"]["modality"]["accuracy_adv_pairs"] == 100.0  # official rule: 0 for "The answer is yes."
    assert metrics["by_category"]["abnormality"]["refusal_rate"] == 50.0
    assert main(["score-official", str(rfile), "--out", str(tmp_path / "o.json")]) == 0
    assert json.loads((tmp_path / "o.json").read_text())["by_category"]["modality"]["acc"] == 0.0


def test_score_responses_refuses_what_the_strict_reader_refuses(files, tmp_path: Path, capsys) -> None:
    qfile, _ = files
    recs = _responses(qfile)
    recs[1]["gt_ans"] = "maybe"
    rfile = tmp_path / "responses.json"
    rfile.write_text(json.dumps(recs))
    out = tmp_path / "scores"
    assert main(["score-responses", str(rfile), "--out-dir", str(out)]) == 2
    assert "record 1 (image a): field 'gt_ans'" in capsys.readouterr().err
    assert not out.exists()


def test_scoring_twice_writes_byte_identical_outputs_and_logs_its_time_outside_them(files, tmp_path: Path) -> None:
    """The score directory is a DVC output: two runs of the same inputs write the same bytes; when the scoring
    happened goes to its work log under logs/ (build/logs/ in the pipeline), which no stage outputs or reads."""
    import time

    from probmed.infra.clock import read_work_log, work_log_path

    qfile, pfile = files
    params = ["--params", str(Path(__file__).resolve().parents[2] / "params.yaml"), "score.bootstrap_resamples=20"]
    outputs = []
    for run in ("first", "second"):
        out = tmp_path / "build" / "scores" / run
        assert main(["score", str(qfile), str(pfile), "--out-dir", str(out), *params]) == 0
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
        time.sleep(0.01)  # a later moment: a time written into the outputs would differ
    assert outputs[0] == outputs[1] and "work.json" not in outputs[0]
    log = work_log_path(tmp_path / "build" / "scores" / "second")
    assert log == tmp_path / "build" / "logs" / "scores" / "second.work.json"
    assert set(read_work_log(tmp_path / "build" / "scores" / "second")["scoring"]) == {"started_at", "finished_at"}


def test_predict_with_score_dir_scores_as_probmed_score_does(files, tmp_path: Path, capsys) -> None:
    """The main job's predict stages score in their own process: the same files as a `probmed score` stage."""
    qfile, _ = files
    params = ["--params", str(Path(__file__).resolve().parents[2] / "params.yaml"), "score.bootstrap_resamples=20"]
    pred = tmp_path / "pred.parquet"
    assert main(["predict", "--questions", str(qfile), "--out", str(pred), "--no-progress", "model=random",
                 "setting=vanilla", f"predict.store_dir={tmp_path / 'answers'}", "--score-dir", str(tmp_path / "in"),
                 "--score-name", "random (vanilla)", *params]) == 0
    assert "accuracy with adversarial pairs" in capsys.readouterr().out
    assert main(["score", str(qfile), str(pred), "--out-dir", str(tmp_path / "apart"), "--name", "random (vanilla)",
                 *params]) == 0
    written = sorted(p.name for p in (tmp_path / "in").iterdir())
    assert "metrics.json" in written and written == sorted(p.name for p in (tmp_path / "apart").iterdir())
    assert json.loads((tmp_path / "in" / "metrics.json").read_text())["meta"]["bootstrap_resamples"] == 20
    for name in written:
        assert (tmp_path / "in" / name).read_bytes() == (tmp_path / "apart" / name).read_bytes(), name


def test_predict_refuses_score_dir_with_a_shard(files, tmp_path: Path, capsys) -> None:
    qfile, _ = files
    assert main(["predict", "--questions", str(qfile), "--out", str(tmp_path / "p.parquet"), "model=random",
                 "setting=vanilla", "--shard", "0/2", "--score-dir", str(tmp_path / "s"),
                 "--params", str(Path(__file__).resolve().parents[2] / "params.yaml")]) == 2
    assert "--score-dir with --shard 0/2" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
