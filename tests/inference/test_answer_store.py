"""The JSONL answer store: append, reload, a kill's partial line, failures re-asked, keys."""

from __future__ import annotations

import json

import pytest

from probmed.inference.answer_store import AnswerStore, cache_key


def rec(key: str, response: str = "yes", error: str = "") -> dict:
    return {"key": key, "qid": key, "response": response, "error": error}


def test_append_and_reload(tmp_path):
    with AnswerStore(tmp_path / "s") as store:
        store.append([rec("a"), rec("b", "no")])
        assert "a" in store and store.get("b")["response"] == "no"
    again = AnswerStore(tmp_path / "s")
    assert len(again) == 2 and again.get("a")["response"] == "yes"


def test_partial_last_line_from_a_kill_is_dropped_and_repaired(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    path = d / "answers.jsonl"
    path.write_text(json.dumps(rec("a")) + "\n" + '{"key": "b", "resp')
    store = AnswerStore(d)
    assert "a" in store and "b" not in store
    store.append([rec("c")])
    store.close()
    lines = path.read_text().splitlines()
    assert [json.loads(x)["key"] for x in lines] == ["a", "c"]


def test_corrupt_middle_line_is_an_error_naming_the_line(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "answers.jsonl").write_text(json.dumps(rec("a")) + "\nnot json\n" + json.dumps(rec("b")) + "\n")
    with pytest.raises(ValueError, match="line 2"):
        AnswerStore(d)


def test_failed_answers_are_kept_but_reasked_and_success_wins(tmp_path):
    with AnswerStore(tmp_path / "s") as store:
        store.append([rec("a", "", error="gave up")])
        assert "a" not in store and store.record("a")["error"] == "gave up"
        store.append([rec("a", "no")])
        assert store.get("a")["response"] == "no"
        store.append([rec("a", "", error="later failure")])  # a success is never replaced by a failure
        assert store.get("a")["response"] == "no"
    assert AnswerStore(tmp_path / "s").get("a")["response"] == "no"


def test_shard_files_are_read_together(tmp_path):
    with AnswerStore(tmp_path / "s", "shard-000-of-002.jsonl") as s0:
        s0.append([rec("a")])
    with AnswerStore(tmp_path / "s", "shard-001-of-002.jsonl") as s1:
        s1.append([rec("b")])
    union = AnswerStore(tmp_path / "s")
    assert "a" in union and "b" in union


def test_cache_key_changes_with_every_input():
    base = dict(fingerprint={"model_id": "m", "revision": "r"}, setting="vanilla", prompt_version="v1",
                prompt="Is this a CT scan?", image_hash="abc", question="Is this a CT scan?")
    k = cache_key(**base)
    assert k == cache_key(**base)
    variants = [
        {"fingerprint": {"model_id": "m", "revision": "r2"}},
        {"fingerprint": {"model_id": "m", "revision": "r", "adapter": "x"}},
        {"setting": "cot"},
        {"prompt_version": "v2"},
        {"prompt": "other"},
        {"image_hash": "abd"},
        {"question": "Is this an MRI?"},
    ]
    keys = {cache_key(**{**base, **v}) for v in variants}
    assert k not in keys and len(keys) == len(variants)
