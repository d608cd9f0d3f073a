"""inspect_ai task over a probmed release (copied into ``<release>/harness/``; needs inspect-ai and datasets).

Run from anywhere::

    inspect eval <release>/harness/inspect_task.py --model openai/<name> [-T config=commercial]

One sample per question: the image and the vanilla prompt (probmed_task.json);
the scorer parses the answer as ``probmed score`` does and the metrics give strict
pair accuracy per category and the paper's weighted overall (probmed_strict).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import MemoryDataset, Sample  # noqa: E402
from inspect_ai.model import ChatMessageUser, ContentImage, ContentText  # noqa: E402
from inspect_ai.scorer import Score, Target, metric, scorer  # noqa: E402
from inspect_ai.solver import TaskState, generate  # noqa: E402
from probmed_answer_parser import parse_answer  # noqa: E402
from probmed_strict import CATEGORIES, strict_scores  # noqa: E402

SPEC = json.loads((HERE / "probmed_task.json").read_text(encoding="utf-8"))
UNIT_FIELDS = ("qid", "category", "pair_id", "image_id", "answer")


def _image_uri(image: dict[str, Any]) -> str:
    suffix = str(image.get("path") or "x.png").rsplit(".", 1)[-1].lower()
    mime = "image/jpeg" if suffix in ("jpg", "jpeg") else f"image/{suffix}"
    return f"data:{mime};base64," + base64.b64encode(image["bytes"]).decode("ascii")


def samples(config: str) -> MemoryDataset:
    """The release's rows of one config as samples (images as data URIs, undecoded)."""
    import datasets

    rows = datasets.load_dataset(str(HERE.parent), config, split="test").cast_column("image", datasets.Image(decode=False))
    out = []
    for row in rows:
        prompt = SPEC["prompt"].format(question=row["question"])
        content = [ContentImage(image=_image_uri(row["image"])), ContentText(text=prompt)]
        out.append(Sample(input=[ChatMessageUser(content=content)], target=row["answer"], id=row["qid"],
                          metadata={k: row[k] for k in UNIT_FIELDS}))
    return MemoryDataset(out, name=f"{SPEC['name']}-{config}")


def _rows(scores: list[Any]) -> list[dict[str, Any]]:
    """Scoring rows from the (epoch-reduced) sample scores: the sample's unit fields, right iff its value is 1."""
    rows = []
    for item in scores:
        unit = item.sample_metadata or item.score.metadata or {}
        right = float(item.score.value) == 1.0
        rows.append({**unit, "label": unit["answer"] if right else "wrong"})
    return rows


def _strict_metric(category: str | None):
    name = f"strict_{category or 'overall'}"

    @metric(name=name)
    def strict_metric():
        def compute(scores: list[Any]) -> float:
            result = strict_scores(_rows(scores))
            value = result["overall"] if category is None else result["by_category"].get(category, {}).get("accuracy")
            return float("nan") if value is None else float(value)

        return compute

    return strict_metric()


@scorer(metrics=[_strict_metric(None)] + [_strict_metric(c) for c in CATEGORIES])
def strict_pairs():
    """Parse the answer (yes / no / refusal / unparsed); the metrics score the pairs."""

    async def score(state: TaskState, target: Target) -> Score:
        label = parse_answer(state.output.completion)
        return Score(value=1.0 if label == target.text else 0.0, answer=label, metadata=dict(state.metadata))

    return score


@task
def probmed(config: str = "all") -> Task:
    """The release's questions of one config (all, commercial, paper), answered one at a time."""
    return Task(dataset=samples(config), solver=[generate()], scorer=strict_pairs())
