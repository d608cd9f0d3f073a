"""Image descriptions for the `cot` and `described` settings, generated once and cached.

A description depends on the describer (its fingerprint), the describe prompt
and the image content, never on the question, so each image is described once
per describer and the text is kept in its own answer store (a DVC-tracked
cache like the answers). `cot` uses the evaluated model as its own describer;
`described` uses the configured describer (GPT-4o in the paper, the local
model offline).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from probmed.inference.answer_record import DescriptionRecord
from probmed.inference.answer_sink import AnswerSink
from probmed.inference.answer_store import AnswerStore, cache_keys, file_hash
from probmed.inference.images import DecodedImages
from probmed.inference.models.base import Answer, Backend, Item
from probmed.inference.prompting import PromptSet
from probmed.infra.io import write_parquet


def description_key(describer: Backend, prompts: PromptSet, image_hash: str, store: AnswerStore | None = None) -> str:
    """The answer-store key of one image's description (describer, describe prompt and image content, no question):
    the one `store` answers it under (an older key of the same describer, Backend.fingerprints), else today's."""
    fingerprints = [{**fp, "describe_max_new_tokens": prompts.describe_max_new_tokens} for fp in describer.fingerprints()]
    keys = cache_keys(fingerprints, "describe", prompts.version, prompts.describe, image_hash, "")
    return store.answered_key(keys) if store is not None else next(keys)


DESCRIBE_BATCH = 8  # images per describer call when the backend sets no batch size


def describe_images(
    describer: Backend,
    images: list[tuple[str, Path]],
    prompts: PromptSet,
    store: AnswerStore,
    on_progress: Callable[[int], None] | None = None,
    decoded: DecodedImages | None = None,
) -> dict[str, str | None]:
    """image_id -> description (None where the describer gave up), asking only for uncached images
    (each decoded before the describer sees it). Descriptions go to the store through an AnswerSink, so a
    full disk stops the way a prediction run does (exit 3, the ones in flight written into the reserve).
    Images go to the describer ``describer.batch_size`` at a time (DESCRIBE_BATCH when it sets none)."""
    decoded = decoded or DecodedImages()
    batch_size = describer.batch_size or DESCRIBE_BATCH
    out: dict[str, str | None] = {}
    todo: list[tuple[str, Path, str]] = []
    for image_id, path in images:
        key = description_key(describer, prompts, file_hash(path), store)
        rec = store.get(key)
        if rec is not None:
            out[image_id] = rec["response"]
        else:
            todo.append((image_id, path, key))
    sink = AnswerSink(store, describer, on_written=on_progress or (lambda n: None))
    for start in range(0, len(todo), batch_size):
        if describer.stop_requested:
            break
        chunk = todo[start : start + batch_size]
        decoded.check((image_id, path) for image_id, path, _ in chunk)
        items = [
            Item(qid=f"describe:{image_id}", image_id=image_id, image_path=path, prompt=prompts.describe,
                 question="", task="describe", max_new_tokens=prompts.describe_max_new_tokens)
            for image_id, path, _ in chunk
        ]
        got: dict[str, DescriptionRecord] = {}

        def to_record(i: int, ans: Answer, chunk: list[tuple[str, Path, str]] = chunk) -> DescriptionRecord:
            image_id, _, key = chunk[i]
            got[image_id] = description_record(key, image_id, describer, ans)
            return got[image_id]

        sink.execute(items, to_record, together=False)
        sink.stop_if_disk_full(lambda: [image_id for image_id, _, key in todo if store.record(key) is None],
                               kind=("descriptions", "image"))
        out.update({image_id: None if rec.error else rec.response for image_id, rec in got.items()})
    return out


def description_record(key: str, image_id: str, describer: Backend, ans: Answer) -> DescriptionRecord:
    """The store record of one description, every text the describer got from outside redacted."""
    return DescriptionRecord(
        key=key, image_id=image_id, describer=describer.name, response=describer.redact(ans.response),
        error=describer.redact(ans.error), latency_s=ans.latency_s, prompt_tokens=ans.prompt_tokens,
        completion_tokens=ans.completion_tokens, cost_usd=ans.cost_usd,
    )


def export_descriptions(store: AnswerStore, path: str | Path) -> pd.DataFrame:
    """The cached descriptions as a table (image_id, describer, description, key)."""
    rows = [
        {"image_id": r["image_id"], "describer": r.get("describer", ""), "description": r["response"], "key": r["key"]}
        for r in store.records()
        if not r.get("error")
    ]
    frame = pd.DataFrame(rows, columns=["image_id", "describer", "description", "key"]).sort_values(["describer", "image_id"])
    write_parquet(frame, path)
    return frame
