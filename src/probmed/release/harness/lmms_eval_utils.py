"""lmms-eval task functions over a probmed release (copied as ``<release>/harness/lmms_eval/utils.py``).

The task YAML beside it (generated) loads the release with ``datasets`` and names
these functions: the image, the vanilla prompt (probmed_task.json), and per
question a record that the aggregations score as strict pair accuracy per category
and the paper's weighted overall, parsed and scored as ``probmed score`` does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HARNESS = Path(__file__).resolve().parent.parent  # <release>/harness: the shared parser, scorer and task spec
sys.path.insert(0, str(HARNESS))

from probmed_answer_parser import parse_answer  # noqa: E402
from probmed_strict import strict_scores  # noqa: E402

SPEC = json.loads((HARNESS / "probmed_task.json").read_text(encoding="utf-8"))
UNIT_FIELDS = ("qid", "category", "pair_id", "image_id", "answer")


def doc_to_visual(doc: dict[str, Any]) -> list[Any]:
    """The question's image (RGB)."""
    return [doc["image"].convert("RGB")]


def doc_to_text(doc: dict[str, Any], lmms_eval_specific_kwargs: dict[str, Any] | None = None) -> str:
    """The vanilla prompt, as `probmed predict` renders it."""
    return SPEC["prompt"].format(question=doc["question"])


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
    """One scoring record per strict_* metric: the question's unit fields and the parsed answer."""
    record = {**{k: doc[k] for k in UNIT_FIELDS}, "label": parse_answer(results[0] if results else "")}
    return {f"strict_{name}": record for name in ["overall", *SPEC["categories"]]}


def _aggregate(records: list[dict[str, Any]], category: str | None) -> float:
    result = strict_scores(records)
    value = result["overall"] if category is None else result["by_category"].get(category, {}).get("accuracy")
    return float("nan") if value is None else float(value)


def aggregate_overall(records: list[dict[str, Any]]) -> float:
    """Strict pair accuracy: overall."""
    return _aggregate(records, None)


def aggregate_modality(records: list[dict[str, Any]]) -> float:
    """Strict pair accuracy: modality."""
    return _aggregate(records, "modality")


def aggregate_organ(records: list[dict[str, Any]]) -> float:
    """Strict pair accuracy: organ."""
    return _aggregate(records, "organ")


def aggregate_abnormality(records: list[dict[str, Any]]) -> float:
    """Strict pair accuracy: abnormality."""
    return _aggregate(records, "abnormality")


def aggregate_condition(records: list[dict[str, Any]]) -> float:
    """Strict pair accuracy: condition."""
    return _aggregate(records, "condition")


def aggregate_position(records: list[dict[str, Any]]) -> float:
    """Strict pair accuracy: position."""
    return _aggregate(records, "position")
