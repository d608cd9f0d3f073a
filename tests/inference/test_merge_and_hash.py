"""Shard merging and the file-hash memo of the answer store."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from probmed.core.errors import RecordError
from probmed.core.records import PREDICTION_COLUMNS
from probmed.inference.answer_store import file_hash
from probmed.inference.predict import merge_shards


def _predictions(qids: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: qids if c == "qid" else [f"{c}-{q}" for q in qids] for c in PREDICTION_COLUMNS})


def test_merge_restores_question_order_and_checks_coverage():
    questions = pd.DataFrame({"qid": [f"q{i}" for i in range(10)]})
    shards = [_predictions(["q9", "q1", "q5", "q3", "q7"]), _predictions(["q8", "q0", "q2", "q6", "q4"])]
    merged = merge_shards(questions, shards)
    assert merged["qid"].tolist() == questions["qid"].tolist()
    assert merged["label"].tolist() == [f"label-q{i}" for i in range(10)]
    assert list(merged.columns) == list(PREDICTION_COLUMNS)
    with pytest.raises(RecordError, match="1 question\\(s\\) have no prediction, e.g. qid 'q4'"):
        merge_shards(questions, [shards[0], shards[1].iloc[:-1]])
    with pytest.raises(RecordError, match="'q1' appears in more than one shard"):
        merge_shards(questions, [shards[0], shards[0].iloc[1:2]])
    with pytest.raises(RecordError, match="'x' is not in the question table"):
        merge_shards(questions, [*shards, _predictions(["x"])])


def test_file_hash_follows_the_file(tmp_path):
    path = tmp_path / "img.png"
    path.write_bytes(b"one")
    first = file_hash(path)
    assert file_hash(path) == first
    path.write_bytes(b"two")
    os.utime(path, ns=(1, 1))  # same size; a new mtime is what tells the memo the file changed
    assert file_hash(path) != first
