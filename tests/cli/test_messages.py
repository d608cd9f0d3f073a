"""Messages a user acts on: predictions of another question set, a missing question file or local model, a
misspelt model name, and side outputs that follow `--out` instead of landing in build/questions/."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from probmed.cli import main
from probmed.core.errors import BackendError, ConfigError, RecordError
from probmed.core.records import PREDICTION_COLUMNS, check_predictions_belong, write_predictions, write_questions
from probmed.scoring.synthetic import synthetic_questions


def _predictions(questions: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame({"qid": questions["qid"].to_numpy(), "label": "yes", "model": "m", "setting": "vanilla",
                          "response": "yes", "error": ""})
    for column in PREDICTION_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame


@pytest.fixture()
def two_sets(tmp_path) -> tuple[Path, Path, Path]:
    """Question set A, question set B (other ids), and predictions made for A."""
    a = synthetic_questions(n_images=4, n_questions=40, seed=0)
    b = a.assign(qid="other-" + a["qid"].astype(str), image_id="other-" + a["image_id"].astype(str))
    write_questions(a, tmp_path / "a.parquet")
    write_questions(b, tmp_path / "b.parquet")
    write_predictions(_predictions(a), tmp_path / "pa.parquet")
    return tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "pa.parquet"


def test_predictions_belong_when_at_least_half_of_their_ids_are_in_the_set():
    q = synthetic_questions(n_images=4, n_questions=40, seed=0)
    check_predictions_belong(_predictions(q.iloc[:5]), q, "p", "q")  # a partial run belongs
    mixed = pd.concat([_predictions(q.iloc[:10]), _predictions(q.iloc[:10]).assign(qid=lambda f: "x" + f["qid"])])
    check_predictions_belong(mixed, q, "p", "q")  # half of them: still this set's
    with pytest.raises(RecordError, match=r"predictions p do not belong to question set q: 0 of their 40"):
        check_predictions_belong(_predictions(q).assign(qid=lambda f: "x" + f["qid"]), q, "p", "q")
    with pytest.raises(RecordError, match="0 of their 0"):
        check_predictions_belong(_predictions(q.iloc[:0]), q, "p", "q")


@pytest.mark.parametrize("command", [
    ["score", "{b}", "{p}", "--out-dir", "{tmp}/s"],
    ["export-responses", "{b}", "{p}", "--out", "{tmp}/r.json"],
    ["merge", "{b}", "{p}", "--out", "{tmp}/m.parquet"],
])
def test_joining_predictions_to_another_question_set_exits_2_naming_both_files(command, two_sets, tmp_path, capsys):
    a, b, p = two_sets
    argv = [w.format(b=b, p=p, tmp=tmp_path) for w in command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(b) in err and str(p) in err and "do not belong" in err
    assert not any((tmp_path / name).exists() for name in ("s", "r.json", "m.parquet"))
    assert main([w.replace(str(b), str(a)) for w in argv]) == 0  # the right pair still runs


def test_a_missing_question_file_says_what_builds_one(tmp_path, capsys):
    missing = tmp_path / "build/questions/probmed.parquet"
    for argv in (["predict", "--questions", str(missing), "model=random"],
                 ["score", str(missing), str(missing), "--out-dir", str(tmp_path / "s")],
                 ["audit", str(missing)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(missing) in err and "probmed generate" in err and "dvc repro" in err, err


def test_an_unknown_model_name_suggests_the_nearest():
    from probmed.inference.models.registry import model_config
    from probmed.pipeline.plan import check_model

    models = {"tiny": {"backend": "hf"}, "always-yes": {"backend": "always_yes"}}
    with pytest.raises(ConfigError, match=r"unknown model 'tiyn' \(did you mean 'tiny'\?\)"):
        model_config(models, "tiyn")
    with pytest.raises(ConfigError, match=r"did you mean 'always-yes'\?"):
        check_model(models, "always_yes", "model")
    with pytest.raises(ConfigError) as err:
        model_config(models, "gpt-5")
    assert "did you mean" not in str(err.value)


def test_a_missing_local_model_says_how_to_build_it(tmp_path):
    from probmed.inference.models.hf import HFBackend

    backend = HFBackend("tiny", {"backend": "hf", "model_id": str(tmp_path / "build/finetune/pretrain/model")})
    with pytest.raises(BackendError, match=r"run `probmed finetune --stage pretrain` \(or dvc repro\)") as err:
        backend.processor()
    assert "Repo id" not in str(err.value)


def test_generate_with_out_writes_every_file_beside_it(tmp_path, monkeypatch):
    from probmed.cli.curation import beside_out

    assert beside_out("x/set.parquet", None, "build/questions/test.json", ".json") == "x/set.json"
    assert beside_out("x/set.parquet", "y.json", "build/questions/test.json", ".json") == "y.json"
    assert beside_out(None, None, "build/questions/test.json", ".json") == "build/questions/test.json"


@pytest.mark.slow
def test_vqarad_adversarial_with_out_writes_nothing_into_build_questions(tmp_path, monkeypatch, repo_root):
    data = repo_root.parent / "shared" / "data" / "vqa-rad"
    if not data.is_dir():
        pytest.fail(f"real data not found at {data}")
    monkeypatch.chdir(tmp_path)
    assert main(["vqarad-adversarial", "--data", str(data), "--image-root", str(data.parent),
                 "--out", "mine/adv.parquet", "--params", str(repo_root / "params.yaml")]) == 0
    assert not (tmp_path / "build").exists()
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == [
        "adv.json", "adv.parquet", "adv.report.json", "adv.report.md"]
