"""Predictions made here as lmms-eval per-sample logs (``--log_samples`` JSONL), so its tools can read them.

One line per question in the ``doc_id`` order lmms-eval gives the release's ``all``
config (probmed.release.table.release_order): ``doc_id``, ``doc`` (the row's text
fields; the image is left out), ``target``, ``arguments`` (the prompt),
``resps`` / ``filtered_resps`` (the raw response; the parsed label when logits
answered), ``doc_hash`` / ``prompt_hash`` / ``target_hash`` (sha256 of the JSON doc,
the prompt and the target, as lmms-eval hashes them), and the strict-scoring record
of each ``strict_*`` metric (lmms_eval_utils.process_results).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd

from probmed.core.answer_parser import parse_answer
from probmed.core.release_format import responses_to_official
from probmed.infra.io import write_text_atomic
from probmed.release.harness.strict_pairs import CATEGORIES
from probmed.release.table import release_order, text_rows

UNIT_FIELDS = ("qid", "category", "pair_id", "image_id", "answer")


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def lmms_eval_records(questions: pd.DataFrame, predictions: pd.DataFrame, prompt: str) -> tuple[list[dict[str, Any]], int]:
    """(one record per question, in release order; questions without a prediction)."""
    questions = questions.reset_index(drop=True)
    responses, missing = responses_to_official(questions, predictions)  # the response text, "" when missing
    docs = text_rows(questions).to_dict("records")
    out = []
    for doc_id, i in enumerate(release_order(questions)):
        doc, response = docs[i], responses[i]["response"]
        text = prompt.format(question=doc["question"])
        record = {**{k: doc[k] for k in UNIT_FIELDS}, "label": parse_answer(response)}
        out.append({"doc_id": doc_id, "doc": doc, "target": doc["answer"], "arguments": [text], "input": text,
                    "resps": [[response]], "filtered_resps": [response],
                    "doc_hash": _sha256(json.dumps(doc, indent=2, ensure_ascii=False)), "prompt_hash": _sha256(text),
                    "target_hash": _sha256(doc["answer"]),
                    **{f"strict_{name}": record for name in ["overall", *CATEGORIES]}})
    return out, missing


def write_lmms_eval_log(questions: pd.DataFrame, predictions: pd.DataFrame, prompt: str, path: str | Path) -> int:
    """The JSONL file (atomically); returns the number of questions without a prediction."""
    records, missing = lmms_eval_records(questions, predictions, prompt)
    write_text_atomic("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), path)
    return missing
