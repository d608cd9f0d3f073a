"""Compact builders for hand-computed scoring fixtures."""

from __future__ import annotations

from typing import Iterable

import pandas as pd

from probmed.core.release_format import questions_from_official

MISSING = "missing"  # a label that means: no prediction row for this question


def build(images: Iterable[tuple[str, str, list[tuple[str, str, str]]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(questions, predictions) from ``[(image_id, image_type, [(qa_type, answer, label), ...]), ...]``."""
    records, labels = [], []
    for image, itype, items in images:
        for qa_type, answer, label in items:
            records.append(
                {
                    "id": image,
                    "i": len(records),
                    "image": f"{image}.png",
                    "image_type": itype,
                    "qa_type": qa_type,
                    "question": f"{qa_type}?",
                    "answer": answer,
                    "src_dataset": "fixture",
                }
            )
            labels.append(label)
    questions = questions_from_official(records)
    keep = [lab != MISSING for lab in labels]
    predictions = pd.DataFrame(
        {
            "qid": questions["qid"][keep].tolist(),
            "model": "fixture",
            "setting": "vanilla",
            "label": [lab for lab in labels if lab != MISSING],
        }
    )
    return questions, predictions


def pair(kind: str, gt_label: str, adv_label: str, k: int | None = None) -> list[tuple[str, str, str]]:
    suffix = "" if k is None else f"_{k}"
    return [(f"{kind}_gt{suffix}", "yes", gt_label), (f"{kind}_hallu{suffix}", "no", adv_label)]
