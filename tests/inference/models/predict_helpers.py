"""Helpers shared by the model and prediction tests (a unique module name, unlike conftest)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path


def make_questions(shared_data: Path, n_images: int = 3):
    """A small real question table: a modality pair, an organ pair and one single question
    per VQA-RAD image (paths relative to the image root `shared_data`)."""
    import pandas as pd

    from probmed.core.records import QUESTION_COLUMNS

    folder = shared_data / "vqa-rad" / "VQA_RAD Image Folder"
    rows = []
    for k, img in enumerate(sorted(folder.glob("synpic*.jpg"))[:n_images]):
        image_id = f"vqarad-{img.stem}"
        rel = str(img.relative_to(shared_data))
        specs = [
            ("modality", "gt", "Is this a CT scan?", "yes", "ct", "modality_gt"),
            ("modality", "adversarial", "Is this an MRI?", "no", "mri", "modality_hallu"),
            ("organ", "gt", "Is this an image of the chest?", "yes", "chest", "body_part_gt"),
            ("organ", "adversarial", "Is this an image of the brain?", "no", "brain", "body_part_hallu"),
            ("abnormality", "single", "Is there any abnormality in this image?", "yes", "abnormality", "abnormality"),
        ]
        for j, (cat, pol, text, ans, ent, qa) in enumerate(specs):
            pair = f"{image_id}:{cat}" if pol != "single" else f"{image_id}:{qa}"
            rows.append({
                "qid": f"{image_id}:{qa}", "image_id": image_id, "image_path": rel, "source": "VQA-RAD",
                "category": cat, "polarity": pol, "pair_id": pair, "question": text, "answer": ans,
                "entity": ent, "image_type": "CT Scan - Chest", "qa_type": qa,
                "strategy": "gt" if pol == "gt" else "random", "evidence": "",
            })
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


def kill_when_stored(proc: subprocess.Popen, store_file: Path, lines: int, wait_s: float = 120) -> None:
    """SIGKILL `proc` once its answer store holds `lines` lines (or after `wait_s`): a kill mid-run."""
    deadline = time.time() + wait_s
    while time.time() < deadline and proc.poll() is None:
        if store_file.exists() and len(store_file.read_text().splitlines()) >= lines:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""


def assert_no_form_leaks(folder: Path, outputs: list[str], forms: list[str], skip: tuple[str, ...] = ()) -> None:
    """No file under `folder` (but those named in `skip`) and no captured output holds any of `forms`."""
    files = [f for f in folder.rglob("*") if f.is_file() and f.name not in skip]
    assert any(f.suffix == ".jsonl" for f in files)  # an answer store was written: there was something to leak into
    for f in files:
        data = f.read_bytes()
        for form in forms:
            assert form.encode() not in data, (f, form)
    for text in outputs:
        for form in forms:
            assert form not in text, form
