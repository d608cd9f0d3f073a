"""The commands whose models answer put the portable CPU kernels in force before torch and numpy load:
`probmed predict model=blind` in its own process, as the pipeline's stages run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from probmed.cli import build_parser
from probmed.cli.options import answering_kernels
from probmed.core.records import read_predictions, write_questions
from probmed.infra.cpu_kernels import PORTABLE_ENV

COMMANDS_WITH_MODELS = {"predict", "describe", "audit", "transfer", "finetune", "run-plan"}


def test_every_command_that_computes_with_a_model_names_its_kernels():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    declared = {name for name, p in sub.choices.items() if p.get_default("cpu_kernels_of") is not None}
    assert declared == COMMANDS_WITH_MODELS
    assert sub.choices["predict"].get_default("cpu_kernels_of") is answering_kernels


def _predict_blind(tmp_path, repo_root, qfile, mode: str, **knobs: str) -> tuple[dict, list[float]]:
    """`probmed predict model=blind` in its own process, with no kernel choice inherited but ``knobs``:
    its summary line and its P(yes) by qid."""
    run = tmp_path / f"{mode}-{'-'.join(knobs) or 'plain'}"
    env = {**{k: v for k, v in os.environ.items() if k not in PORTABLE_ENV}, **knobs}
    proc = subprocess.run(
        [sys.executable, "-m", "probmed", "predict", "--params", str(repo_root / "params.yaml"), "--questions",
         str(qfile), "--no-progress", "--out", str(run / "predictions.parquet"), f"predict.store_dir={run}",
         "model=blind", f"predict.cpu_kernels={mode}"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    return summary, read_predictions(run / "predictions.parquet").sort_values("qid")["p_yes"].tolist()


@pytest.mark.parametrize("mode", ["portable", "native"])
def test_predict_answers_with_the_kernels_params_name(tmp_path, repo_root, questions, mode):
    qfile = tmp_path / "q.parquet"
    write_questions(questions, qfile)
    summary, _ = _predict_blind(tmp_path, repo_root, qfile, mode)
    assert summary["cpu_kernels"] == mode and summary["asked"] == len(questions)


KNOBS = {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Sandybridge"}  # what another CPU would pick


@pytest.mark.slow
@pytest.mark.skipif("OPENBLAS_CORETYPE" not in PORTABLE_ENV, reason="x86-64 only: OpenBLAS and numpy run other kernels on ARM")
def test_the_blind_baseline_gives_the_same_p_yes_whatever_kernels_the_cpu_would_pick(tmp_path, repo_root):
    """The kernels an Intel Xeon and an AMD EPYC pick differ (SkylakeX vs Haswell OpenBLAS, AVX-512 vs AVX2 ATen);
    here the knobs that pick them stand in for the other CPU, on the smoke pipeline's real question set. Native
    kernels must give other P(yes) (the control: the knobs reach a CPU-dependent path); portable ones the same."""
    frame = pd.read_csv(repo_root / "tests" / "golden" / "questions" / "probmed.parquet.csv", keep_default_na=False)
    frame["contrast_id"] = frame["contrast_id"].replace("", None)  # the CSV writes a missing id as ""
    qfile = tmp_path / "questions.parquet"
    write_questions(frame, qfile)
    p_yes = {(mode, bool(knobs)): _predict_blind(tmp_path, repo_root, qfile, mode, **knobs)[1]
             for mode in ("native", "portable") for knobs in ({}, KNOBS)}
    assert p_yes["native", False] != p_yes["native", True]
    assert p_yes["portable", False] == p_yes["portable", True]
