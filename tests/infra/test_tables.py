"""The one reader of user-given tables: a damaged or foreign file is a RecordError naming it, never a library traceback."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from probmed.core.errors import MissingFileError, RecordError
from probmed.infra.tables import read_csv, read_json, read_parquet


@pytest.fixture()
def good(tmp_path: Path) -> bytes:
    path = tmp_path / "good.parquet"
    pd.DataFrame({"qid": [f"q{i}" for i in range(2000)], "label": ["yes", "no"] * 1000}).to_parquet(path)
    return path.read_bytes()


@pytest.mark.parametrize(("damage", "looks_like"), [
    (lambda b: b[: len(b) // 2], "cut short or damaged"),  # truncated: no footer
    (lambda b: b[:-3], "cut short or damaged"),
    (lambda b: b"", "empty"),
    (lambda b: b'[{"id": "a", "response": "yes"}]', "JSON text"),
    (lambda b: os.urandom(4096), "not Parquet data"),
    (lambda b: b[:300] + bytes(600) + b[900:], "cut short or damaged"),  # footer intact, a data page zeroed
])
def test_a_damaged_parquet_file_is_named_with_what_was_expected(tmp_path, good, damage, looks_like):
    path = tmp_path / "pred.parquet"
    path.write_bytes(damage(good))
    with pytest.raises(RecordError) as caught:
        read_parquet(path, "prediction table", "; hint")
    message = str(caught.value)
    assert message.startswith(f"prediction table {path}: not a readable Parquet table: ")
    assert looks_like in message and message.endswith("; hint")


def test_a_good_parquet_file_and_a_missing_one(tmp_path, good):
    path = tmp_path / "good.parquet"
    path.write_bytes(good)
    assert len(read_parquet(path, "prediction table")) == 2000
    with pytest.raises(MissingFileError, match="prediction table .*nope.parquet not found"):
        read_parquet(tmp_path / "nope.parquet", "prediction table")


def test_a_machine_error_is_not_called_a_bad_file(tmp_path, good, monkeypatch):
    """An OSError with an errno is the machine's (a failing disk), not the file's format: the CLI says exit 3.
    (Nothing here can make a real disk fail a read, so pandas' reader raises it.)"""
    path = tmp_path / "good.parquet"
    path.write_bytes(good)

    def failing_disk(*args, **kwargs):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(pd, "read_parquet", failing_disk)
    with pytest.raises(OSError) as caught:
        read_parquet(path, "prediction table")
    assert not isinstance(caught.value, RecordError) and caught.value.errno == errno.EIO


def test_a_lone_surrogate_in_json_is_named_by_record_and_field(tmp_path):
    path = tmp_path / "test.json"
    path.write_text('[{"id": "a", "question": "ok"}, {"id": "b", "question": "Is there \\ud800 here?"}]')
    with pytest.raises(RecordError, match=r"question file .*test.json: record 1, field 'question': a lone UTF-16 surrogate"):
        read_json(path, "question file")
    path.write_text('[{"id": "a", "tags": ["x", "\\uDFFF"]}]')
    with pytest.raises(RecordError, match=r"record 0, field 'tags', item 1: a lone"):
        read_json(path, "question file")
    path.write_text('[{"\\ud800": 1}]')
    with pytest.raises(RecordError, match=r"record 0, field '\\ud800': a lone"):
        read_json(path, "question file")
    assert read_json(path, "response file", text_only=False) == [{"\ud800": 1}]  # let through when asked


def test_a_surrogate_pair_is_text(tmp_path):
    path = tmp_path / "test.json"
    path.write_text(json.dumps([{"question": "a \U0001F600 face"}]))  # json.dumps writes it as \ud83d\ude00
    assert "\\ud83d" in path.read_text()
    assert read_json(path, "question file") == [{"question": "a \U0001F600 face"}]


def test_json_that_is_not_json_or_not_utf8(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("[{")
    with pytest.raises(RecordError, match="response file .*r.json: not valid JSON"):
        read_json(path, "response file")
    path.write_bytes(b'["\xff"]')
    with pytest.raises(RecordError, match="not UTF-8 text"):
        read_json(path, "response file")


def test_a_csv_that_is_not_utf8_or_not_a_table(tmp_path):
    path = tmp_path / "review.csv"
    path.write_bytes(b"qid,valid\nq1,\xff\xfe\n")
    with pytest.raises(RecordError, match="review sheet .*review.csv: not a readable CSV table"):
        read_csv(path, "review sheet", dtype=str)
    path.write_text('qid,valid\nq1,"yes\n')  # an unclosed quote
    with pytest.raises(RecordError, match="not a readable CSV table"):
        read_csv(path, "review sheet", dtype=str)
    path.write_text("")
    with pytest.raises(RecordError, match="not a readable CSV table"):
        read_csv(path, "review sheet", dtype=str)
