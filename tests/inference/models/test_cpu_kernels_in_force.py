"""The commands whose models answer put the portable CPU kernels in force before torch and numpy load:
`probmed predict model=blind` in its own process, as the pipeline's stages run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from probmed.cli import build_parser
from probmed.cli.options import answering_kernels
from probmed.core.records import write_questions

COMMANDS_WITH_MODELS = {"predict", "describe", "audit", "transfer", "finetune"}


def test_every_command_that_computes_with_a_model_names_its_kernels():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    declared = {name for name, p in sub.choices.items() if p.get_default("cpu_kernels_of") is not None}
    assert declared == COMMANDS_WITH_MODELS
    assert sub.choices["predict"].get_default("cpu_kernels_of") is answering_kernels


@pytest.mark.parametrize("mode", ["portable", "native"])
def test_predict_answers_with_the_kernels_params_name(tmp_path, repo_root, questions, shared_data, mode):
    qfile = tmp_path / "q.parquet"
    write_questions(questions, qfile)
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "MKL_CBWR")}
    proc = subprocess.run(
        [sys.executable, "-m", "probmed", "predict", "--params", str(repo_root / "params.yaml"), "--questions",
         str(qfile), "--image-root", str(shared_data), "--no-progress", "--out", str(tmp_path / "p.parquet"),
         f"predict.store_dir={tmp_path / 'answers'}", "model=blind", "models.blind.folds=2",
         f"predict.cpu_kernels={mode}"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["cpu_kernels"] == mode and summary["asked"] == len(questions)
