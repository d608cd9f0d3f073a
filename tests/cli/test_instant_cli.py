"""Commands import only what they use: help, plan, audit and score-official start without the heavy libraries.

Checked by module, not by wall time (benchmarks/cli_speed.py measures the time):
each command runs in a fresh interpreter that then reports which top-level
packages it has imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from probmed.cli import build_parser, commands

# What no command may import to print its help: every library that takes more than a few milliseconds.
HEAVY = ("torch", "transformers", "peft", "lightning", "pandas", "numpy", "pyarrow", "omegaconf", "mlflow", "dvc",
         "PIL", "tqdm", "matplotlib", "huggingface_hub", "tokenizers")
COMMANDS = commands()  # command -> the module whose register() declares it
MODEL_LIBRARIES = ("torch", "transformers", "peft", "lightning", "tokenizers")

DRIVER = """
import json, sys
from probmed.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
sys.stderr.write("\\nIMPORTED " + json.dumps({"code": code, "modules": sorted({m.split('.')[0] for m in sys.modules})}) + "\\n")
"""


def imported(args: list[str], cwd: Path | None = None) -> tuple[int, set[str]]:
    """Run `probmed ARGS` in a fresh interpreter; its exit code and the top-level packages it imported."""
    proc = subprocess.run([sys.executable, "-c", DRIVER, *args], capture_output=True, text=True, cwd=cwd, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("IMPORTED ")]
    assert line, proc.stderr
    report = json.loads(line[-1].removeprefix("IMPORTED "))
    return report["code"], set(report["modules"])


def command_names() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sorted(sub.choices)


def test_every_command_is_covered():
    names = command_names()
    assert {"score-official", "plan", "predict", "score"} <= set(names)


def test_each_command_is_mapped_to_the_module_that_registers_it():
    """`probmed COMMAND` imports no command module after COMMANDS[COMMAND]; the table comes from register()."""
    assert set(COMMANDS) == set(command_names())
    for name, module in COMMANDS.items():
        sub = next(a for a in build_parser(name)._actions if a.dest == "command")
        assert name in sub.choices, (name, module)
        last = [COMMANDS[c] for c in sub.choices][-1]
        assert last == module, (name, module, last)  # the parser stopped at the module that declares it


@pytest.mark.parametrize("args", [["--help"]] + [[name, "--help"] for name in command_names()],
                         ids=lambda a: " ".join(a))
def test_help_imports_nothing_heavy(args):
    code, modules = imported(args)
    assert code == 0
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_score_official_runs_without_pandas_or_models(tmp_path):
    records = [
        {"id": "img1", "image_type": "X-ray - Chest", "qa_type": qa, "question": q, "gt_ans": gt, "response": r}
        for qa, q, gt, r in [
            ("modality_gt", "Is this an X-ray?", "yes", "Yes."),
            ("modality_hallu", "Is this a CT scan?", "no", "No."),
            ("body_part_gt", "Is this the chest?", "yes", "Yes"),
            ("body_part_hallu", "Is this the brain?", "no", "Yes"),
            ("abnormality", "Is there an abnormality?", "yes", "yes"),
        ]
    ]
    path = tmp_path / "responses.json"
    path.write_text(json.dumps(records))
    code, modules = imported(["score-official", str(path), "--out", str(tmp_path / "out.json")])
    assert code == 0 and (tmp_path / "out.json").is_file()
    scores = json.loads((tmp_path / "out.json").read_text())
    assert scores["by_category"]["modality"]["acc"] == 100.0 and scores["by_category"]["organ"]["acc"] == 0.0
    assert not modules & {"pandas", "numpy", "pyarrow", *MODEL_LIBRARIES}, sorted(modules)


def test_plan_runs_without_model_libraries(tmp_path, repo_root, shared_data):
    (tmp_path / "data").symlink_to(shared_data)  # params.yaml names the raw sources under data/
    code, modules = imported(["plan", "--params", str(repo_root / "params.yaml"), "--out-dir", str(tmp_path / "plan")],
                             cwd=tmp_path)
    assert code == 0 and (tmp_path / "plan" / "gate").is_file()
    assert not modules & set(MODEL_LIBRARIES), sorted(modules & set(MODEL_LIBRARIES))


def test_audit_runs_without_model_libraries(tmp_path, repo_root, shared_data):
    """The audit of a question set (records checked, pixels read) needs no model; only --blind loads one."""
    from probmed.benchmark.questions import generate_questions
    from probmed.benchmark.sources.vqarad import load_vqarad
    from probmed.core.records import write_image_records

    records = [r for r in load_vqarad(shared_data / "vqa-rad", shared_data).records if r.image_path][:12]
    write_image_records(records, tmp_path / "records.parquet")
    generate_questions(records, seed=0)[0].to_parquet(tmp_path / "q.parquet")
    code, modules = imported(["audit", str(tmp_path / "q.parquet"), "--records", str(tmp_path / "records.parquet"),
                              "--image-root", str(shared_data), "--out-dir", str(tmp_path / "audit"),
                              "--params", str(repo_root / "params.yaml")])
    assert code == 0 and (tmp_path / "audit" / "audit.json").is_file()
    assert json.loads((tmp_path / "audit" / "audit.json").read_text())["meta"]["questions"] > 0
    assert not modules & set(MODEL_LIBRARIES), sorted(modules & set(MODEL_LIBRARIES))
