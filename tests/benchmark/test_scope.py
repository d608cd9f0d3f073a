"""A question set's scope: the extended default asks ultrasound and the new organs; the paper's keeps its 3 x 4."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

from probmed.benchmark.questions import generate_questions
from probmed.core.paper import PAPER_TABLE1_IMAGES
from probmed.core.records import Finding, ImageRecord, write_image_records
from probmed.core.vocab import PAPER_IMAGE_TYPES, PAPER_MODALITIES, PAPER_ORGANS, SCOPES


def _records() -> list[ImageRecord]:
    kinds = [("x-ray", "chest"), ("ct", "abdomen"), ("mri", "brain"), ("x-ray", "spine"), ("ultrasound", "pelvis"),
             ("x-ray", "knee"), ("ct", "head and neck"), ("mri", "shoulder")]
    return [ImageRecord(image_id=f"s{i}-{k}", source="test", modality=m, organ=o, abnormal=True,
                        findings=[Finding("fracture", None)], image_path=f"images/s{i}-{k}.png")
            for k, (m, o) in enumerate(kinds) for i in range(3)]


def _asked(frame: pd.DataFrame, category: str) -> set[str]:
    return set(frame.loc[frame["category"] == category, "entity"].str.lower())


def test_paper_image_types_are_the_papers_table1() -> None:
    assert PAPER_IMAGE_TYPES == set(PAPER_TABLE1_IMAGES)


def test_the_extended_scope_asks_ultrasound_and_the_new_organs() -> None:
    frame, _ = generate_questions(_records(), strategy="random")
    assert "ultrasound" in _asked(frame, "modality")
    assert {"pelvis", "knee", "head and neck", "shoulder"} <= _asked(frame, "organ")
    assert "Is this an ultrasound image?" in set(frame["question"])


def test_the_paper_scope_asks_only_the_papers_values() -> None:
    frame, _ = generate_questions(_records(), strategy="random", scope=SCOPES["paper"])
    assert _asked(frame, "modality") <= set(PAPER_MODALITIES)
    assert _asked(frame, "organ") <= set(PAPER_ORGANS)


def test_generate_with_the_paper_set_keeps_its_twelve_image_types(tmp_path: Path, repo_root: Path) -> None:
    records = tmp_path / "records.parquet"
    write_image_records(_records(), records)
    out = tmp_path / "paper.parquet"
    subprocess.run([sys.executable, "-m", "probmed", "generate", "--question-set", "paper", "--records", str(records),
                    "--out", str(out), "--official", "", "--report", str(tmp_path / "report.json"),
                    "--params", str(repo_root / "params.yaml"), "audit.enforce=false"],
                   check=True, capture_output=True, cwd=tmp_path)
    frame = pd.read_parquet(out)
    assert set(frame["image_type"]) == {"X-ray - Chest", "CT Scan - Abdomen", "MRI - Brain", "X-ray - Spine"}
    assert _asked(frame, "organ") <= set(PAPER_ORGANS)
