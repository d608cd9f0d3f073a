"""A small real question set to release: 20 VQA-RAD images (5 of them marked non-commercial), with its audit.

The set's own audit fails the gate (20 images cannot balance every text); ``passing_audit`` is that
audit with the oracle at exact random, for the cases that need a set the gate lets through.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from probmed.benchmark.audit import gate, run_audit
from probmed.benchmark.questions import generate_questions
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.core.records import write_questions

IMAGES = 20
NONCOMMERCIAL = 5


def passing(audit: dict) -> dict:
    """The audit with the oracle and the blind ceiling scoring exactly random everywhere: the gate passes on it."""
    out = copy.deepcopy(audit)
    for entry in [*out["oracle"]["by_category"].values(), out["oracle"]["overall"]]:
        entry["accuracy"] = entry["random"]
    for cell in out["blind_ceiling"]["cells"]:
        cell["ceiling"] = cell["random"] if cell["bar"] == "random" else cell["floor"]
    return out


@pytest.fixture(scope="session")
def small_set(tmp_path_factory, shared_data: Path) -> dict:
    """{questions, frame, image_root, audit (fails the gate), passing_audit}: files under a session folder."""
    root = tmp_path_factory.mktemp("small_set")
    records = load_vqarad(shared_data / "vqa-rad", shared_data).records
    questions = generate_questions(records, seed=0)[0]
    ids = list(dict.fromkeys(questions["image_id"]))[:IMAGES]
    questions = questions[questions["image_id"].isin(ids)].reset_index(drop=True)
    questions.loc[questions["image_id"].isin(ids[:NONCOMMERCIAL]), "licence"] = "CC BY-NC 4.0"
    path = root / "small.parquet"
    write_questions(questions, path)
    audit = run_audit(questions, records)
    (root / "small.audit").mkdir()
    (root / "small.audit" / "audit.json").write_text(json.dumps({**audit, "gate": gate(audit, 5.0).to_json()}))
    (root / "passing").mkdir()
    (root / "passing" / "audit.json").write_text(json.dumps(passing(audit)))
    return {"questions": path, "frame": questions, "image_root": shared_data, "audit": root / "small.audit",
            "passing_audit": root / "passing" / "audit.json"}


@pytest.fixture(scope="session")
def mock_set(tmp_path_factory, shared_data: Path) -> dict:
    """20 VQA-RAD images for the harness runs: those with an abnormality question first, then images with condition
    pairs (the units that can come out right under the mock server's fixed answers), in image order."""
    root = tmp_path_factory.mktemp("mock_set")
    records = load_vqarad(shared_data / "vqa-rad", shared_data).records
    questions = generate_questions(records, seed=0)[0]
    order = list(dict.fromkeys(questions["image_id"]))
    by_cat = questions.groupby("image_id")["category"].agg(set)
    abnormal = [i for i in order if "abnormality" in by_cat[i]]
    condition = [i for i in order if "condition" in by_cat[i] and i not in abnormal]
    ids = (abnormal + condition)[:IMAGES]
    questions = questions[questions["image_id"].isin(ids)].reset_index(drop=True)
    path = root / "mockset.parquet"
    write_questions(questions, path)
    audit = run_audit(questions, records)
    (root / "passing").mkdir()
    (root / "passing" / "audit.json").write_text(json.dumps(passing(audit)))
    return {"questions": path, "frame": questions, "image_root": shared_data, "passing_audit": root / "passing" / "audit.json"}
