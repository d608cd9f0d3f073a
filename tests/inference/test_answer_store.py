"""The JSONL answer store: append, reload, a kill's partial line, failures re-asked, keys,
validation with quarantine, one writer per file, a write that fails on a full disk."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from probmed.core.errors import StoreLockedError
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


# --- validation on load: a bad line is quarantined (kept aside, with its line number) and re-asked ---------


def full(key: str, **over) -> dict:
    base = {"key": key, "qid": key, "image_id": "img", "model": "m", "setting": "vanilla", "prompt_version": "v1",
            "response": "Yes.", "label": "yes", "p_yes": None, "latency_s": 0.1, "prompt_tokens": 12,
            "completion_tokens": 1, "cost_usd": 0.0, "retries": 0, "error": "", "finish_reason": "stop",
            "time": 1.0}
    return {**base, **over}


BAD_LINES = {
    "label": json.dumps(full("b", label="definitely")),
    "type": json.dumps(full("b", prompt_tokens="12")),
    "p_yes": json.dumps(full("b", p_yes=3.5)),
    "garbage": "not json at all",
    "list": "[1, 2, 3]",
    "nested": "[" * 100_000 + "]" * 100_000,
    "no key": json.dumps({"qid": "b", "response": "yes"}),
    "bytes": b"\xff\xfe broken utf-8".decode("latin-1"),
}


@pytest.mark.parametrize("kind", list(BAD_LINES))
def test_a_bad_line_is_quarantined_with_its_line_number_and_reasked(tmp_path, kind):
    d = tmp_path / "s"
    d.mkdir()
    path = d / "answers.jsonl"
    bad = BAD_LINES[kind]
    path.write_bytes((json.dumps(full("a")) + "\n").encode() + bad.encode("latin-1" if kind == "bytes" else "utf-8")
                     + b"\n" + (json.dumps(full("c")) + "\n").encode())
    with AnswerStore(d, writer=True) as store:
        assert "a" in store and "c" in store and "b" not in store  # the bad line's question is asked again
        assert len(store) == 2
    side = [json.loads(x) for x in (d / "answers.jsonl.quarantine").read_text().splitlines()]
    assert len(side) == 1 and side[0]["line"] == 2 and side[0]["file"] == "answers.jsonl" and side[0]["reason"]
    assert [json.loads(x)["key"] for x in path.read_text().splitlines()] == ["a", "c"]  # the store is clean again
    assert len(AnswerStore(d)) == 2


def test_a_reader_skips_bad_lines_and_rewrites_nothing(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    text = json.dumps(full("a")) + "\n" + json.dumps(full("b", label="definitely")) + "\n"
    (d / "answers.jsonl").write_text(text)
    store = AnswerStore(d)
    assert "a" in store and "b" not in store
    assert (d / "answers.jsonl").read_text() == text and not (d / "answers.jsonl.quarantine").exists()


def test_a_complete_last_record_without_newline_is_kept(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    path = d / "answers.jsonl"
    path.write_text(json.dumps(full("a")) + "\n" + json.dumps(full("b")))  # the newline never made it to disk
    with AnswerStore(d, writer=True) as store:
        assert "a" in store and "b" in store
        store.append([full("c")])
    assert [json.loads(x)["key"] for x in path.read_text().splitlines()] == ["a", "b", "c"]


def test_a_lone_surrogate_in_a_response_is_stored_as_replacement_character(tmp_path):
    with AnswerStore(tmp_path / "s", writer=True) as store:
        store.append([full("a", response="Yes \ud800 indeed")])
        assert store.get("a")["response"] == "Yes \ufffd indeed"
    assert AnswerStore(tmp_path / "s").get("a")["response"] == "Yes \ufffd indeed"


def test_an_invalid_record_is_never_written(tmp_path):
    with AnswerStore(tmp_path / "s", writer=True) as store:
        with pytest.raises(ValueError, match="label"):
            store.append([full("a", label="definitely")])
    assert (tmp_path / "s" / "answers.jsonl").read_text() == ""


# --- one writer per store file -------------------------------------------------------------------------------

HOLD = textwrap.dedent("""
    import sys, time
    from probmed.inference.answer_store import AnswerStore
    store = AnswerStore(sys.argv[1], writer=True)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    if len(sys.argv) > 3:  # a marker written before the lock is released: whoever gets it next finds it
        open(sys.argv[3], "w").close()
    store.close()
""")


def hold_lock(directory, seconds: float, marker=None) -> subprocess.Popen:
    extra = [str(marker)] if marker is not None else []
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory), str(seconds), *extra],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_a_second_writer_is_refused_naming_the_holders_pid(tmp_path):
    holder = hold_lock(tmp_path / "s", 30)
    try:
        with pytest.raises(StoreLockedError, match=f"pid {holder.pid}"):
            AnswerStore(tmp_path / "s", writer=True)
        reader = AnswerStore(tmp_path / "s")  # reading is always allowed
        with pytest.raises(StoreLockedError, match=f"pid {holder.pid}"):
            reader.append([full("a")])  # a reader becomes a writer at its first append
        with pytest.raises(StoreLockedError, match=f"in use by an unsharded run \\(pid {holder.pid}\\)"):
            AnswerStore(tmp_path / "s", "shard-001-of-002.jsonl", writer=True)  # another split of the same store
    finally:
        holder.kill()
        holder.wait()
    with AnswerStore(tmp_path / "s", writer=True) as store:  # the kernel dropped the dead holder's lock
        store.append([full("a")])
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["answers.jsonl"]  # no lock file is left


def test_a_second_writer_waits_when_asked(tmp_path):
    released = tmp_path / "released"
    holder = hold_lock(tmp_path / "s", 1.0, released)
    with AnswerStore(tmp_path / "s", writer=True, lock_wait_s=60) as store:
        assert released.exists()  # it got the lock only once the holder let go: it waited, it did not fail
        store.append([full("a")])
    holder.wait()


# --- a full disk: the failed write leaves no partial line ----------------------------------------------------

FILL = textwrap.dedent("""
    import json, os, resource, signal, sys
    from probmed.core.errors import DiskFullError
    from probmed.inference.answer_store import AnswerStore
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))  # a file may not grow past 20 kB
    store = AnswerStore(sys.argv[1], writer=True)
    written = 0
    try:
        for i in range(1000):
            store.append([{"key": f"k{i}", "response": "x" * 900, "error": ""}])
            written += 1
    except DiskFullError as exc:
        print(json.dumps({"written": written, "error": str(exc), "in_store": len(store)}))
""")


def test_a_write_that_hits_the_size_limit_leaves_no_partial_line(tmp_path):
    """RLIMIT_FSIZE makes the kernel refuse the write half way (EFBIG), as a full disk does (ENOSPC)."""
    out = subprocess.run([sys.executable, "-c", FILL, str(tmp_path / "s")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert 0 < result["written"] < 1000 and "disk full" in result["error"]
    assert result["in_store"] == result["written"]  # the failed answer was never acknowledged
    data = (tmp_path / "s" / "answers.jsonl").read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == result["written"]
    assert len(AnswerStore(tmp_path / "s")) == result["written"]


# --- the pipeline's stores, read by a by-hand run ---------------------------------------------------------


def test_a_by_hand_store_reads_the_pipelines_stores_of_its_model_and_writes_only_its_own(tmp_path, monkeypatch):
    """`probmed predict` by hand after `dvc repro` pays for nothing the pipeline answered, and leaves the
    pipeline's (DVC-tracked) stores byte for byte as they were."""
    from probmed.core.params_schema import Predict
    from probmed.inference.answer_store import open_store, shared_stores

    monkeypatch.chdir(tmp_path)
    pipeline = tmp_path / "build/answers/probmed/cot/tiny"
    with AnswerStore(pipeline) as store:
        store.append([full("k1"), full("k2", error="timeout")])
    with AnswerStore(tmp_path / "build/answers/probmed/vanilla/blind") as store:
        store.append([full("k3")])
    before = sorted((p.name, p.read_bytes()) for p in pipeline.rglob("*") if p.is_file())
    predict = Predict()
    assert shared_stores(Path(predict.store_dir) / "tiny", predict.read_stores) == [Path("build/answers/probmed/cot/tiny")]
    store = open_store(Path(predict.store_dir) / "tiny", "answers.jsonl", predict)
    try:
        assert store.get("k1") is not None and store.get("k2") is None and store.get("k3") is None
        assert [r["key"] for r in store.records()] == ["k1"]  # what this run used, as if it had asked
        store.append([full("k4")])
    finally:
        store.close()
    assert sorted((p.name, p.read_bytes()) for p in pipeline.rglob("*") if p.is_file()) == before
    assert AnswerStore(pipeline).get("k4") is None
    # a pipeline stage's own store reads only itself: no stage depends on another stage's output
    assert shared_stores(Path("build/answers/probmed/vanilla/tiny"), predict.read_stores) == []
