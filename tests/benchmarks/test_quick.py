"""Every script under benchmarks/ runs in its --quick mode and prints its figures, so none can rot unseen.

Each quick run is a subprocess on small inputs through the script's real code path; it must exit 0 (a quick
run never judges wall time) and print the figure lines below. A script added to benchmarks/ without an entry
here fails test_every_script_has_a_quick_run. Slow: the torch-based scripts alone take tens of seconds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NUMBER = r"\d[\d,]*(\.\d+)?"

# script -> patterns its quick output must contain (its figures, and ratios where it has a baseline)
FIGURES: dict[str, tuple[str, ...]] = {
    "cli_speed.py": (rf"probmed --help: +{NUMBER} s", rf"ratio probmed / original: +wall {NUMBER}, CPU {NUMBER}"),
    "family_estimates.py": (rf"\| llava \|.*\| {NUMBER} h \|", rf"\| qwen2.5-vl \|.*\| {NUMBER} h \|"),
    "engines_speed.py": (rf"vLLM \(CPU build\) +{NUMBER} q/s", rf"transformers serve +{NUMBER} q/s",
                         rf"ratio vLLM / transformers serve: {NUMBER}"),
    "generate_speed.py": (rf"questions \(random\) in {NUMBER} s wall, {NUMBER} s CPU",
                          rf"questions \(balanced\) in {NUMBER} s wall", rf"integer programs .* {NUMBER} s"),
    "mainjob_speed.py": (r"fine-tuning encoding, \d+ questions on \d+ images: identical tensors",
                         rf"ratio old / new: CPU {NUMBER}, wall {NUMBER}", r"identical rows and counts",
                         r"audit grey-level percentiles, \d+ images: identical",
                         r"curate vqarad \+ medicat in one process: identical record tables and reports",
                         r"predict \+ score in one process .*: identical score files",
                         rf"start-up saved per merged stage: -?{NUMBER} s CPU"),
    "merge_speed.py": (rf"^ +500 +{NUMBER} +{NUMBER} +{NUMBER} +{NUMBER}$",),
    # the baseline cli_speed.py runs beside `probmed score-official`, not a benchmark of its own
    "original_calculate_score.py": (rf"modality {{\"acc\": {NUMBER}", rf"scored 900 records in {NUMBER} s"),
    "pipeline_time.sh": (rf"\"plan_stage_s\": {NUMBER}",),
    "plane_estimation.py": (rf"{NUMBER} ms per slice", r"\| BraTS \(axial\) \| axial \| \d+/\d+"),
    "predict_speed.py": (rf"shared prefix +{NUMBER} q/s wall", rf"shared prefix / per-image batch >= 5: {NUMBER} \(CPU\)",
                         rf"API, 16-way concurrency, 50 ms server +{NUMBER} q/s"),
    "refusal_speed.py": (rf"ratio per character, long / short: {NUMBER}", rf"billion laughs params.yaml refused \(exit 2\) in {NUMBER} ms",
                         rf"alias override refused \(exit 2\) in {NUMBER} ms"),
    "score_speed.py": (rf"official-compatible scorer \(one pass\): +{NUMBER} s",
                       rf"vectorised is {NUMBER}x faster", rf"one pass is {NUMBER}x faster"),
    "soak_api.py": (r'"duplicate_paid_requests": 0', rf'"throughput_vs_baseline": {NUMBER}', r'"problems": \[\]'),
}


def test_every_script_has_a_quick_run():
    scripts = sorted(p.name for p in BENCHMARKS.iterdir() if p.suffix in (".py", ".sh"))
    assert scripts == sorted(FIGURES)


def command(script: str) -> list[str]:
    if script.endswith(".sh"):
        return ["bash", str(BENCHMARKS / script), "--quick"]
    return [sys.executable, str(BENCHMARKS / script), "--quick"]


NEEDS_VLLM = ("engines_speed.py",)  # installs and starts vLLM's CPU build: under the vllm marker, as its test


@pytest.mark.slow
@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.vllm) if s in NEEDS_VLLM else s
                                    for s in sorted(FIGURES)])
def test_quick_run_prints_its_figures(script, tmp_path, shared_data):
    # pipeline_time.sh clones the repository, links the running interpreter's environment and the data
    env = {**os.environ, "WORK_DIR": str(tmp_path), "VENV": sys.prefix, "HF_HUB_OFFLINE": "1",
           "DVC_NO_ANALYTICS": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    proc = subprocess.run(command(script), cwd=BENCHMARKS.parent, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for pattern in FIGURES[script]:
        assert re.search(pattern, proc.stdout, re.MULTILINE), (pattern, proc.stdout[-3000:])
