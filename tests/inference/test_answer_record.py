"""The answer record is the one definition the run loop, the store and the prediction table share."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from probmed.core.errors import DiskFullError
from probmed.core.records import PREDICTION_COLUMNS
from probmed.inference.answer_record import (
    COLUMN_OF_FIELD,
    STORE_FIELDS,
    TIMING_FIELDS,
    AnswerRecord,
    DescriptionRecord,
    prediction_table,
    validate_line,
)
from probmed.inference.answer_sink import AnswerSink
from probmed.inference.answer_store import AnswerStore
from probmed.inference.models.base import Answer, Backend, Item
from probmed.inference.predict import Shard, parse_shard


def record(key: str = "k1", **over) -> AnswerRecord:
    base = dict(key=key, qid=f"q-{key}", image_id="img", model="m", setting="vanilla", prompt_version="v1",
                response="Yes.", label="yes", p_yes=None, latency_s=0.25, prompt_tokens=12, completion_tokens=1,
                cost_usd=0.0, retries=0, error="", finish_reason="stop", truncated_from=None, time=1.0)
    return AnswerRecord(**{**base, **over})


def test_every_prediction_column_is_a_field_of_the_record():
    names = [COLUMN_OF_FIELD.get(f.name, f.name) for f in dataclasses.fields(AnswerRecord)]
    assert set(PREDICTION_COLUMNS) <= set(names)


def test_a_record_is_a_valid_store_line_and_round_trips_through_the_store(tmp_path):
    line = record().to_line()
    assert validate_line(line) is None and list(line) == [f.name for f in dataclasses.fields(AnswerRecord)]
    with AnswerStore(tmp_path / "s", writer=True) as store:
        store.append([line])
    text = (tmp_path / "s" / "answers.jsonl").read_text()
    stored = {k: v for k, v in line.items() if k not in TIMING_FIELDS}  # timings: the timing log's
    assert text == json.dumps(stored, ensure_ascii=False, sort_keys=True) + "\n"
    assert AnswerStore(tmp_path / "s").get("k1") == line


def test_timings_go_to_a_log_outside_the_store_so_two_runs_write_identical_stores(tmp_path):
    """A store is a DVC output: the same answers at other times and speeds must give the same bytes."""
    for run, (arrived, took) in enumerate([(1.0, 0.25), (99.0, 3.5)]):
        with AnswerStore(tmp_path / f"run{run}" / "s", writer=True) as store:
            store.append([record(time=arrived, latency_s=took).to_line()])
    first, second = ((tmp_path / f"run{i}" / "s" / "answers.jsonl").read_bytes() for i in (0, 1))
    assert first == second and b"latency_s" not in first and b'"time"' not in first
    assert [p.name for p in (tmp_path / "run1" / "s").iterdir()] == ["answers.jsonl"]
    log_line = json.loads((tmp_path / "run1" / "logs" / "s" / "answers.times.jsonl").read_text())
    assert log_line == {"key": "k1", "latency_s": 3.5, "time": 99.0}
    got = AnswerStore(tmp_path / "run1" / "s").get("k1")
    assert got is not None and (got["time"], got["latency_s"]) == (99.0, 3.5)


def test_a_store_written_before_the_timing_log_keeps_its_inline_timings(tmp_path):
    (tmp_path / "s").mkdir()
    line = record(time=7.0).to_line()
    (tmp_path / "s" / "answers.jsonl").write_text(json.dumps(line, sort_keys=True) + "\n")
    got = AnswerStore(tmp_path / "s").get("k1")
    assert got is not None and got["time"] == 7.0


def test_description_records_share_the_store_fields():
    desc = DescriptionRecord(key="d", image_id="img", describer="tiny", response="a chest film", error="",
                             latency_s=0.1, prompt_tokens=3, completion_tokens=4, cost_usd=0.0)
    assert validate_line(desc.to_line()) is None
    assert set(STORE_FIELDS) == {f.name for cls in (AnswerRecord, DescriptionRecord) for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(("over", "reason"), [
    ({"label": "definitely"}, "field 'label': invalid value 'definitely'"),
    ({"prompt_tokens": "12"}, "field 'prompt_tokens': expected int, got str"),
    ({"p_yes": 3.5}, "field 'p_yes': invalid value 3.5"),
    ({"p_yes": "0.5"}, "field 'p_yes': expected int/float/NoneType, got str"),
    ({"latency_s": -1}, "field 'latency_s': invalid value -1"),
    ({"retries": True}, "field 'retries': expected int, got bool"),
    ({"truncated_from": 1.5}, "field 'truncated_from': expected int/NoneType, got float"),
    ({"key": ""}, "field 'key': invalid value ''"),
])
def test_a_bad_line_is_refused_naming_the_field(over, reason):
    assert validate_line({**record().to_line(), **over}) == reason


def test_a_line_needs_only_its_key_and_keeps_unknown_fields():
    assert validate_line({"qid": "q"}) == "field 'key' is missing"
    assert validate_line([1]) == "expected a JSON object, got list"
    assert validate_line({"key": "k", "a_later_field": [1, 2]}) is None


def test_the_prediction_table_types_follow_the_fields():
    old = {"key": "k2", "qid": "q2", "model": "m", "setting": "vanilla", "response": None, "label": "no"}
    frame = prediction_table([record().to_line(), old])  # a line of an older store lacks fields
    assert list(frame.columns) == list(PREDICTION_COLUMNS)
    assert frame["cache_key"].tolist() == ["k1", "k2"]
    assert frame["p_yes"].dtype == "float64" and frame["p_yes"].isna().all()
    assert frame["prompt_tokens"].dtype == "int64" and frame["prompt_tokens"].tolist() == [12, 0]
    assert frame["cost_usd"].dtype == "float64" and frame["cost_usd"].tolist() == [0.0, 0.0]
    assert "latency_s" not in frame.columns and "time" not in frame.columns  # timings stay in the store line
    assert frame["response"].tolist() == ["Yes.", ""] and frame["error"].tolist() == ["", ""]
    assert list(prediction_table([]).columns) == list(PREDICTION_COLUMNS)


def test_shards_name_their_store_file_and_table():
    assert parse_shard(None) == Shard() and Shard().file_name == "answers.jsonl" and Shard().suffix == ""
    two = parse_shard("1/2")
    assert two == Shard(1, 2) and two.file_name == "shard-001-of-002.jsonl" and two.suffix == ".shard-001-of-002"


class _Echo(Backend):
    kind = "echo"
    batch_by_image = False

    def __init__(self) -> None:
        self.name = "echo"
        self.context = {}

    def _answer(self, items: list[Item]) -> list[Answer]:
        return [Answer(response="yes", cost_usd=0.5) for _ in items]


def _items(n: int) -> list[Item]:
    return [Item(qid=f"q{i}", image_id="img", image_path=None, prompt="p", question="q") for i in range(n)]


def test_the_sink_counts_what_is_on_disk(tmp_path):
    written: list[int] = []
    with AnswerStore(tmp_path / "s", writer=True) as store:
        sink = AnswerSink(store, _Echo(), on_written=written.append)
        sink.execute(_items(3), lambda i, ans: record(f"k{i}", error="boom" if i == 2 else ""), together=False)
        assert (sink.asked, sink.failed, sink.cost, written) == (3, 1, 1.5, [1, 1, 1])
        sink.stop_if_disk_full(lambda: ["never"])  # the disk is not full: nothing happens
    assert len(AnswerStore(tmp_path / "s")) == 3


def test_a_full_disk_keeps_the_answers_and_stops_naming_what_remains(tmp_path, monkeypatch):
    with AnswerStore(tmp_path / "s", writer=True) as store:
        backend = _Echo()
        sink = AnswerSink(store, backend)
        real_append = store.append

        def full(*a, **kw):
            raise DiskFullError("disk full writing the answer store")

        monkeypatch.setattr(store, "append", full)
        sink.execute(_items(2), lambda i, ans: record(f"k{i}"), together=True)
        assert backend.stop_requested and sink.asked == 0 and len(sink.unwritten) == 2
        monkeypatch.setattr(store, "append", real_append)  # the freed reserve has room
        with pytest.raises(DiskFullError, match=r"all 2 answers received are on disk .*1 question\(s\) remain"):
            sink.stop_if_disk_full(lambda: ["q9"])
        assert "k0" in store and "k1" in store
    assert isinstance(prediction_table(AnswerStore(tmp_path / "s").records()), pd.DataFrame)
