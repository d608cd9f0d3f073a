"""`probmed predict` end to end: tiny model, cache, shards + merge, export, crash safety,
key hygiene and bad input, through the real CLI and the real params.yaml."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf
from predict_helpers import assert_no_form_leaks, kill_when_stored, make_questions

from probmed.cli import main
from probmed.core.config import load_params
from probmed.core.records import read_predictions, write_questions
from probmed.inference.models.mock_server import MockChatServer


def run_cli(args: list[str]) -> int:
    return main(args)


@pytest.fixture()
def qfile(tmp_path, questions) -> Path:
    path = tmp_path / "questions.parquet"
    write_questions(questions, path)
    return path


def base_args(repo_root, qfile, shared_data, tmp_path, *extra) -> list[str]:
    return ["--params", str(repo_root / "params.yaml"), "--questions", str(qfile), "--image-root", str(shared_data),
            "--no-progress", f"predict.store_dir={tmp_path / 'answers'}", f"predict.describe_dir={tmp_path / 'desc'}",
            *extra]


@pytest.mark.slow
def test_predict_tiny_cached_sharded_merged_exported(tmp_path, repo_root, qfile, shared_data, tiny_dir, capsys):
    args = base_args(repo_root, qfile, shared_data, tmp_path, "model=tiny", f"models.tiny.model_id={tiny_dir}")
    full = tmp_path / "full.parquet"
    assert run_cli(["predict", *args, "--out", str(full)]) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert first["asked"] == 15 and first["cached"] == 0
    preds = read_predictions(full)
    assert len(preds) == 15 and preds["cache_key"].is_unique and (preds["model"] == "tiny").all()
    # a re-run asks nothing
    assert run_cli(["predict", *args, "--out", str(tmp_path / "again.parquet")]) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["asked"] == 0 and again["cached"] == 15
    # shards cover disjoint images; merged they equal the unsharded table (from a fresh store)
    shard_args = base_args(repo_root, qfile, shared_data, tmp_path / "sharded", "model=tiny",
                           f"models.tiny.model_id={tiny_dir}")
    outs = []
    for i in range(2):
        out = tmp_path / f"shard{i}.parquet"
        assert run_cli(["predict", *shard_args, "--shard", f"{i}/2", "--out", str(out)]) == 0
        outs.append(out)
    parts = [read_predictions(o) for o in outs]
    assert len(parts[0]) == 10 and len(parts[1]) == 5  # images 0 and 2 vs image 1
    assert sorted((tmp_path / "sharded" / "answers" / "tiny").glob("*.jsonl"))[0].name == "shard-000-of-002.jsonl"
    merged = tmp_path / "merged.parquet"
    assert run_cli(["merge", str(qfile), *map(str, outs), "--out", str(merged)]) == 0
    cols = ["qid", "response", "label", "cache_key"]
    pd.testing.assert_frame_equal(read_predictions(merged)[cols], preds[cols])
    # merging an incomplete set is refused
    assert run_cli(["merge", str(qfile), str(outs[0]), "--out", str(tmp_path / "bad.parquet")]) == 2
    assert "no prediction" in capsys.readouterr().err
    # export to the original response format
    resp = tmp_path / "responses.json"
    assert run_cli(["export-responses", str(qfile), str(full), "--out", str(resp)]) == 0
    records = json.loads(resp.read_text())
    assert [r["response"] for r in records] == list(preds["response"])
    assert set(records[0]) == {"id", "image_type", "qa_type", "question", "gt_ans", "response"}


@pytest.mark.slow
def test_cot_and_described_use_cached_descriptions(tmp_path, repo_root, qfile, shared_data, tiny_dir, capsys):
    common = base_args(repo_root, qfile, shared_data, tmp_path, "model=tiny", f"models.tiny.model_id={tiny_dir}")
    assert run_cli(["predict", *common, "setting=cot", "--out", str(tmp_path / "cot.parquet")]) == 0
    desc_store = tmp_path / "desc" / "tiny" / "answers.jsonl"
    assert len(desc_store.read_text().splitlines()) == 3  # one description per image
    assert run_cli(["predict", *common, "setting=described", "settings.describer=tiny",
                    "--out", str(tmp_path / "described.parquet")]) == 0
    assert len(desc_store.read_text().splitlines()) == 3  # same describer: reused, not regenerated
    vanilla_out = tmp_path / "vanilla.parquet"
    assert run_cli(["predict", *common, "--out", str(vanilla_out)]) == 0
    keys = [set(read_predictions(tmp_path / f"{s}.parquet")["cache_key"]) for s in ("cot", "described", "vanilla")]
    assert keys[0].isdisjoint(keys[2]) and keys[1].isdisjoint(keys[2])
    assert run_cli(["describe", *common, "--out", str(tmp_path / "d.parquet")]) == 0
    table = pd.read_parquet(tmp_path / "d.parquet")
    assert len(table) == 3 and table["description"].str.len().gt(0).all()
    # a blind baseline cannot take a described setting
    assert run_cli(["predict", *common, "model=blind", "setting=cot"]) == 2
    assert "never sees the image" in capsys.readouterr().err


def test_bad_input_is_a_clear_error(tmp_path, repo_root, questions, shared_data, tiny_dir, capsys):
    bad = questions.copy()
    bad.loc[bad["image_id"] == bad["image_id"].iat[-1], "image_path"] = "vqa-rad/missing.jpg"
    qfile = tmp_path / "q.parquet"
    write_questions(bad, qfile)
    args = base_args(repo_root, qfile, shared_data, tmp_path, "model=tiny", f"models.tiny.model_id={tiny_dir}")
    out = tmp_path / "out.parquet"
    assert run_cli(["predict", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "image vqarad-" in err and "missing.jpg" in err and not out.exists()
    assert run_cli(["predict", *args, "model=nosuch"]) == 2
    assert "unknown model 'nosuch'" in capsys.readouterr().err
    assert run_cli(["predict", *args, "model=gpt-4o"]) == 2
    assert "disabled" in capsys.readouterr().err
    assert run_cli(["predict", *args, "--shard", "3/2"]) == 2


def write_api_params(repo_root: Path, tmp_path: Path, base_url: str, **extra) -> Path:
    cfg = load_params(repo_root / "params.yaml")  # YAML 1.2, as DVC reads it (`yes:` is a string)
    api = {"backend": "openai", "model_id": "gpt-4o-mock", "base_url": base_url, "api_key_env": "PROBMED_TEST_KEY",
           "concurrency": 4, "max_retries": 2, "timeout_s": 2, "backoff_base_s": 0.01, "max_tokens": 8,
           "logprobs": True, **extra}
    cfg.models.api = api
    path = tmp_path / "params.yaml"
    OmegaConf.save(cfg, path)
    return path


def subprocess_predict(params: Path, qfile: Path, shared_data: Path, store: Path, out: Path, env: dict,
                       progress: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "probmed", "predict", "--params", str(params), "--questions", str(qfile),
           "--image-root", str(shared_data), f"predict.store_dir={store}", "model=api", "--out", str(out)]
    if not progress:
        cmd.append("--no-progress")
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def store_keys(path: Path) -> list[str]:
    """Keys of the complete lines of a store file (a line cut by a kill has no closing brace)."""
    return [json.loads(line)["key"] for line in path.read_text().splitlines() if line.endswith("}")]


def assert_resumed_equals_reference(run: Path, ref: Path, store_file: Path, total: int) -> None:
    cols = ["qid", "response", "label", "p_yes", "prompt_tokens", "completion_tokens", "cost_usd", "cache_key",
            "error"]
    pd.testing.assert_frame_equal(read_predictions(run)[cols], read_predictions(ref)[cols])
    keys = [json.loads(line)["key"] for line in store_file.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == total  # no duplicate keys, any cut line repaired


@pytest.mark.slow
def test_sigkill_mid_run_with_grouped_appends_loses_only_the_image_in_flight(tmp_path, repo_root, shared_data,
                                                                              tiny_dir):
    """A local model appends the answers of one image at once: a kill leaves only whole images on disk."""
    q = make_questions(shared_data, 20)  # 100 questions, 5 per image
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)

    def predict(store: Path, out: Path) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "probmed", "predict", "--params", str(repo_root / "params.yaml"), "--questions",
               str(qfile), "--image-root", str(shared_data), f"predict.store_dir={store}", "model=tiny",
               f"models.tiny.model_id={tiny_dir}", "--out", str(out),
               "--no-progress"]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    ref = predict(tmp_path / "ref", tmp_path / "ref.parquet")
    assert ref.wait(timeout=600) == 0, ref.stderr.read()
    store_file = tmp_path / "run" / "tiny" / "answers.jsonl"
    proc = predict(tmp_path / "run", tmp_path / "run.parquet")
    kill_when_stored(proc, store_file, lines=10)
    assert not (tmp_path / "run.parquet").exists()
    on_disk = store_keys(store_file)
    assert 10 <= len(on_disk) < len(q) and len(on_disk) == len(set(on_disk))
    stored = {json.loads(line)["qid"] for line in store_file.read_text().splitlines() if line.endswith("}")}
    per_image = q[q["qid"].isin(stored)].groupby("image_id").size()
    assert (per_image == 5).all(), per_image[per_image != 5]  # whole images only: the one in flight is not there
    resumed = predict(tmp_path / "run", tmp_path / "run.parquet")
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    summary = json.loads(resumed.stdout.read().strip().splitlines()[-1])
    assert summary["cached"] == len(on_disk) and summary["asked"] == len(q) - len(on_disk)
    assert summary["backend_shared_prefix_questions"] == len(q) - len(on_disk)  # the path the run took
    assert_resumed_equals_reference(tmp_path / "run.parquet", tmp_path / "ref.parquet", store_file, len(q))


@pytest.mark.slow
def test_sigkill_mid_run_then_resume_equals_uninterrupted(tmp_path, repo_root, shared_data):
    q = make_questions(shared_data, 12)  # 60 questions
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-crash"}
    with MockChatServer(latency_s=0.04) as srv:
        params = write_api_params(repo_root, tmp_path, srv.base_url, concurrency=2)
        ref = subprocess_predict(params, qfile, shared_data, tmp_path / "ref", tmp_path / "ref.parquet", env)
        assert ref.wait(timeout=120) == 0, ref.stderr.read()
        n_ref = len(srv.requests)
        assert n_ref == 60

        store_file = tmp_path / "run" / "api" / "answers.jsonl"
        proc = subprocess_predict(params, qfile, shared_data, tmp_path / "run", tmp_path / "run.parquet", env)
        kill_when_stored(proc, store_file, lines=20)
        assert not (tmp_path / "run.parquet").exists()
        on_disk = set(store_keys(store_file))  # an API answer is on disk the moment it arrives
        assert 20 <= len(on_disk) < 60
        before = len(srv.requests)
        resumed = subprocess_predict(params, qfile, shared_data, tmp_path / "run", tmp_path / "run.parquet", env)
        assert resumed.wait(timeout=120) == 0, resumed.stderr.read()
        summary = json.loads(resumed.stdout.read().strip().splitlines()[-1])
        assert summary["cached"] == len(on_disk) and summary["asked"] == 60 - len(on_disk)
        assert len(srv.requests) - before == 60 - len(on_disk)  # nothing on disk was asked again
    assert_resumed_equals_reference(tmp_path / "run.parquet", tmp_path / "ref.parquet", store_file, 60)


def _questions_asking_for(faults: list[str], questions, path: Path) -> Path:
    """The questions with the i-th one tagged `[fault]`, which makes the mock server answer with that fault."""
    q = questions.copy()
    for i, marker in enumerate(faults):
        q.loc[i, "question"] = f"[{marker}] " + q.loc[i, "question"]
    write_questions(q, path)
    return path


@pytest.mark.slow
def test_api_key_never_leaks(tmp_path, repo_root, shared_data, questions):
    secret = "sk-leak-7f3a9c0e1d2b4a68"
    echoes = ["echo500", "echo400", "echo_pct", "echo_b64", "echo_prefix", "echo500pct"]
    qfile = _questions_asking_for(echoes, questions, tmp_path / "q.parquet")
    env = {**os.environ, "PROBMED_TEST_KEY": secret}
    outputs: list[str] = []
    with MockChatServer(faults={f"[{m}]": [m] for m in echoes}) as srv:
        params = write_api_params(repo_root, tmp_path, srv.base_url)
        p = subprocess_predict(params, qfile, shared_data, tmp_path / "store", tmp_path / "p.parquet", env,
                               progress=True)
        out, err = p.communicate(timeout=120)
        outputs += [out, err]
        assert p.returncode == 1  # three questions recorded as failed (the 500s and the 400)
        assert any(r["auth"] == f"Bearer {secret}" for r in srv.requests)  # the key was sent (and echoed)
    with MockChatServer(required_key="sk-other") as srv:  # bad credentials: the 401 body echoes the key
        params = write_api_params(repo_root, tmp_path, srv.base_url)
        p = subprocess_predict(params, qfile, shared_data, tmp_path / "store2", tmp_path / "p2.parquet", env,
                               progress=True)
        out, err = p.communicate(timeout=120)
        outputs += [out, err]
        assert p.returncode == 2 and "credentials" in err
    resp = tmp_path / "responses.json"
    assert main(["export-responses", str(qfile), str(tmp_path / "p.parquet"), "--out", str(resp)]) == 0
    preds = read_predictions(tmp_path / "p.parquet")
    assert "Bearer ***" in " ".join(preds["error"])  # the echoed header was stored, redacted
    assert sum("***" in r for r in preds["response"]) == 3  # the three echoes in answers, redacted
    import base64
    import urllib.parse

    # the key in every form the server echoed it: raw, percent-encoded, base64 (at the header's alignment), a prefix
    forms = [secret, urllib.parse.quote(secret, safe="").replace("-", "%2D"), secret[:12],
             base64.b64encode(f"Bearer {secret}".encode()).decode()[12:36]]
    assert_no_form_leaks(tmp_path, outputs, forms)


@pytest.mark.slow
def test_endpoint_dying_mid_run_keeps_received_answers(tmp_path, repo_root, shared_data, questions):
    qfile = tmp_path / "q.parquet"
    write_questions(questions, qfile)
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-x"}
    with MockChatServer(die_after=6) as srv:
        params = write_api_params(repo_root, tmp_path, srv.base_url, concurrency=1, max_retries=1)
        p = subprocess_predict(params, qfile, shared_data, tmp_path / "s", tmp_path / "p.parquet", env)
        out, err = p.communicate(timeout=120)
    assert p.returncode == 2 and "unreachable" in err, err
    lines = (tmp_path / "s" / "api" / "answers.jsonl").read_text().splitlines()
    assert len(lines) == 6 and all(not json.loads(x)["error"] for x in lines)
    assert not (tmp_path / "p.parquet").exists()


def test_unreadable_image_mid_run_stops_with_answers_on_disk(tmp_path, repo_root, questions, shared_data, tiny_dir,
                                                              capsys):
    root = tmp_path / "images"
    q = questions.copy()
    for i, rel in enumerate(pd.unique(q["image_path"])):
        target = root / f"img{i}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        if i < 2:
            shutil.copy(shared_data / rel, target)  # copies: a symlink out of the image root is refused
        else:
            target.write_bytes(b"this is not a JPEG")  # the third image is corrupt
        q.loc[q["image_path"] == rel, "image_path"] = target.name
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)
    args = ["--params", str(repo_root / "params.yaml"), "--questions", str(qfile), "--image-root", str(root),
            "--no-progress", f"predict.store_dir={tmp_path / 'answers'}", "model=tiny",
            f"models.tiny.model_id={tiny_dir}", "--out", str(tmp_path / "p.parquet")]
    assert run_cli(["predict", *args]) == 2
    err = capsys.readouterr().err
    assert "img2.jpg" in err and "not a decodable image" in err
    lines = (tmp_path / "answers" / "tiny" / "answers.jsonl").read_text().splitlines()
    assert len(lines) == 10  # the two readable images' answers are kept
    assert not (tmp_path / "p.parquet").exists()


# --- a full disk: every answer the server returned is on disk, the rest is asked on the next run -------------

def _tmpfs_available() -> bool:
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || "
                            "mount -t tmpfs -o size=64k tmpfs /tmp"], capture_output=True)
    return probe.returncode == 0


class _SmallDisk:
    """os for the answer store with a byte budget: writes past it fail with ENOSPC, as on a full disk;
    the store's reserve (posix_fallocate) counts against it and unlinking it gives the space back."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.reserved: dict[str, int] = {}

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if len(data) > self.free:
            n = max(0, self.free)
            self.free = 0
            if n:
                return os.write(fd, bytes(data[:n]))
            raise OSError(28, "No space left on device")
        self.free -= len(data)
        return os.write(fd, data)

    def ftruncate(self, fd, length):
        self.free += max(0, os.fstat(fd).st_size - length)
        return os.ftruncate(fd, length)

    def posix_fallocate(self, fd, offset, length):
        if length > self.free:
            raise OSError(28, "No space left on device")
        self.free -= length
        self.reserved[os.readlink(f"/proc/self/fd/{fd}")] = length


def _run_on_small_disk(params, qfile, shared_data, store, out, env, tmp_path, monkeypatch) -> tuple[int, str]:
    """predict with its answer store on a disk that fills after about 20 answers: a real 64 kB tmpfs in a
    private mount namespace where one can be made, else the same limits injected at the store's write layer."""
    args = ["predict", "--params", str(params), "--questions", str(qfile), "--image-root", str(shared_data),
            f"predict.store_dir={store}", "model=api", "predict.disk_reserve_mb=0.04", "--out", str(out), "--no-progress"]
    if _tmpfs_available():
        kept = tmp_path / "kept"
        kept.mkdir()
        script = (f'mkdir -p "{store}" && mount -t tmpfs -o size=64k tmpfs "{store}" && '
                  f'{sys.executable} -m probmed "$@"; rc=$?; cp -a "{store}/." "{kept}/"; exit $rc')
        proc = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", *args], env=env, capture_output=True,
                              text=True, timeout=300)
        shutil.copytree(kept, store, dirs_exist_ok=True)
        return proc.returncode, proc.stderr
    import io
    from contextlib import redirect_stderr

    from probmed.inference import answer_store

    disk = _SmallDisk(free=64 * 1024 - 8 * 1024)
    real_unlink = os.unlink

    def unlink(path, *a, **kw):  # Path.unlink: deleting the reserve gives its space back
        disk.free += disk.reserved.pop(str(path), 0)
        return real_unlink(path, *a, **kw)

    monkeypatch.setattr(answer_store, "os", disk)
    monkeypatch.setattr(os, "unlink", unlink)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    err = io.StringIO()
    with redirect_stderr(err):
        rc = main(args)
    monkeypatch.undo()
    return rc, err.getvalue()


@pytest.mark.slow
def test_a_full_disk_loses_no_answer_and_says_what_remains(tmp_path, repo_root, shared_data, monkeypatch):
    q = make_questions(shared_data, 12)  # 60 questions
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-disk"}
    store = tmp_path / "store"
    with MockChatServer(latency_s=0.05) as srv:
        params = write_api_params(repo_root, tmp_path, srv.base_url, concurrency=8)
        rc, err = _run_on_small_disk(params, qfile, shared_data, store, tmp_path / "p.parquet", env, tmp_path,
                                     monkeypatch)
        assert rc == 3, err
        lines = [x for x in err.splitlines() if x.strip()]
        assert len(lines) == 1 and "Traceback" not in err and "environment error: disk full" in lines[0]
        assert "written into the space the store keeps in reserve" in lines[0] and "remain to ask" in lines[0]
        stored = [json.loads(x) for x in (store / "api" / "answers.jsonl").read_text().splitlines()]
        served = len(srv.requests)
        assert 0 < len(stored) < 60 and len(stored) == served  # every answer the server returned is on disk
        assert f"{60 - served} question(s) remain" in lines[0]
        assert not (tmp_path / "p.parquet").exists()
        # space is back: the next run asks exactly the remaining questions
        p = subprocess_predict(params, qfile, shared_data, store, tmp_path / "p.parquet", env)
        assert p.wait(timeout=120) == 0, p.stderr.read()
        assert len(srv.requests) == 60  # nothing asked twice, nothing lost
    keys = [json.loads(x)["key"] for x in (store / "api" / "answers.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 60


@pytest.mark.slow
def test_a_second_predict_on_the_same_store_exits_2_naming_the_first(tmp_path, repo_root, shared_data):
    """Two writers on one store used to ask everything twice (488 requests for 244 questions)."""
    q = make_questions(shared_data, 6)  # 30 questions
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-two"}
    # 0.3 s per answer: the first still asks (~8 s) while the second starts up, even on a loaded machine
    with MockChatServer(latency_s=0.3) as srv:
        params = write_api_params(repo_root, tmp_path, srv.base_url, concurrency=1)
        first = subprocess_predict(params, qfile, shared_data, tmp_path / "s", tmp_path / "a.parquet", env)
        while len(srv.requests) < 2:
            time.sleep(0.02)
        second = subprocess_predict(params, qfile, shared_data, tmp_path / "s", tmp_path / "b.parquet", env)
        out, err = second.communicate(timeout=60)
        assert second.returncode == 2 and f"pid {first.pid}" in err and "in use by another process" in err
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "b.parquet").exists()
        # asked to wait, a second writer starts once the first is done, and asks nothing
        waiting = subprocess.Popen(
            [sys.executable, "-m", "probmed", "predict", "--params", str(params), "--questions", str(qfile),
             "--image-root", str(shared_data), f"predict.store_dir={tmp_path / 's'}", "model=api", "--out",
             str(tmp_path / "c.parquet"), "--no-progress", "--wait-lock", "120"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert first.wait(timeout=120) == 0, first.stderr.read()
        out, err = waiting.communicate(timeout=120)
        assert waiting.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["asked"] == 0
        assert len(srv.requests) == 30  # every question asked once


def test_a_prediction_table_holds_no_time_and_its_answering_goes_to_the_work_log(tmp_path, repo_root, qfile,
                                                                                   shared_data):
    """The table is a DVC output: the same answers give the same bytes, whenever they were asked (a re-run
    reads them from the store). When they were asked is in its work log, where `probmed track` reads it."""
    from probmed.infra.clock import read_work_log

    args = base_args(repo_root, qfile, shared_data, tmp_path, "model=random")
    first, second = tmp_path / "build" / "a" / "random.parquet", tmp_path / "build" / "b" / "random.parquet"
    assert run_cli(["predict", *args, "--out", str(first)]) == 0
    time.sleep(0.01)
    assert run_cli(["predict", *args, "--out", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    assert "answering" not in pd.read_parquet(first).attrs
    answering = read_work_log(first)["answering"]
    assert answering == read_work_log(second)["answering"]  # the answers' own times, kept by the store
    assert (tmp_path / "build" / "logs" / "a" / "random.work.json").is_file()
    assert answering["started_at"] <= answering["finished_at"]


@pytest.mark.slow
def test_two_runs_asking_every_question_again_give_byte_identical_tables(tmp_path, repo_root, qfile, shared_data,
                                                                        tiny_dir):
    """Each run asks the tiny model afresh (its own empty store), so every latency differs; the table and the
    answer store, DVC outputs, hold none and are the same bytes. The latencies go to the store's timing log."""
    tables, stores = [], []
    for run in ("one", "two"):
        args = base_args(repo_root, qfile, shared_data, tmp_path / run, "model=tiny", f"models.tiny.model_id={tiny_dir}")
        out = tmp_path / run / "tiny-vanilla.parquet"
        assert run_cli(["predict", *args, "--out", str(out)]) == 0
        tables.append(out.read_bytes())
        (store_file,) = (p for p in (tmp_path / run / "answers").rglob("*.jsonl") if not p.name.endswith(".times.jsonl"))
        stores.append(store_file.read_bytes())
        timings = [json.loads(line) for path in (tmp_path / run / "answers").rglob("*.times.jsonl")
                   for line in path.read_text().splitlines()]
        assert len(timings) == 15 and all(t["latency_s"] > 0 for t in timings)
        assert "latency_s" not in pd.read_parquet(out).columns
    assert tables[0] == tables[1] and stores[0] == stores[1] and b"latency_s" not in stores[0]


@pytest.mark.slow
def test_a_rerun_from_a_warm_store_writes_the_same_table(tmp_path, repo_root, qfile, shared_data, tiny_dir):
    """How the backend answered (the prompt path, which depends on what was cached) goes to the work log, not
    the table: a `dvc repro` that re-runs a predict stage over its warm store must not change `dvc.lock`."""
    from probmed.infra.clock import read_work_log

    args = base_args(repo_root, qfile, shared_data, tmp_path, "model=tiny", f"models.tiny.model_id={tiny_dir}")
    asked, cached = tmp_path / "build" / "asked.parquet", tmp_path / "build" / "cached.parquet"
    assert run_cli(["predict", *args, "--out", str(asked)]) == 0
    assert run_cli(["predict", *args, "--out", str(cached)]) == 0
    assert asked.read_bytes() == cached.read_bytes()
    assert "run_info" not in pd.read_parquet(asked).attrs
    paths = [read_work_log(p)["run_info"]["path"] for p in (asked, cached)]
    assert paths[0] != paths[1]  # the runs did answer differently (asked vs all from the store)


URL_PASSWORD = "pa55-w0rd-Zq7x"


@pytest.mark.slow
def test_credentials_in_the_endpoint_url_never_leak(tmp_path, repo_root, shared_data, questions):
    """The probe: `base_url=http://user:password@127.0.0.1:PORT/v1` ran (exit 0) and was sent as Basic auth; a server
    echoing it got the base64 of user:password into answers.jsonl and the predictions; the error line of an
    unreachable host printed the password. Now: refused in params; from the environment (base_url_env), used and
    redacted wherever it could show."""
    import base64
    import urllib.parse

    basic = base64.b64encode(f"user:{URL_PASSWORD}".encode()).decode()
    forms = [URL_PASSWORD, f"user:{URL_PASSWORD}", basic, urllib.parse.quote(URL_PASSWORD, safe="")]
    echoes = ["echo_auth", "echo_b64", "echo_pct", "echo500", "echo400", "echo500pct"]
    qfile = _questions_asking_for(echoes, questions, tmp_path / "q.parquet")
    outputs: list[str] = []
    with MockChatServer(faults={f"[{m}]": [m] for m in echoes}) as srv:
        url = f"http://user:{URL_PASSWORD}@127.0.0.1:{srv.port}/v1"
        in_params = write_api_params(repo_root, tmp_path, url)
        p = subprocess_predict(in_params, qfile, shared_data, tmp_path / "s1", tmp_path / "p1.parquet", dict(os.environ))
        outputs += p.communicate(timeout=120)
        assert p.returncode == 2 and "models.api.base_url" in outputs[-1] and "base_url_env" in outputs[-1]
        assert srv.requests == [] and not (tmp_path / "s1").exists()

        from_env = write_api_params(repo_root, tmp_path, None, base_url_env="PROBMED_TEST_URL")
        env = {**os.environ, "PROBMED_TEST_URL": url}
        p = subprocess_predict(from_env, qfile, shared_data, tmp_path / "s2", tmp_path / "p2.parquet", env, progress=True)
        outputs += p.communicate(timeout=120)
        assert p.returncode == 1, outputs[-1]  # the 500s and the 400 recorded as failed; the rest answered
        assert {r["auth"] for r in srv.requests} == {f"Basic {basic}"}  # the URL's credentials went as Basic auth
    preds = read_predictions(tmp_path / "p2.parquet")
    assert (preds["error"] == "").sum() == len(questions) - 3 and sum("***" in r for r in preds["response"]) == 3

    env = {**os.environ, "PROBMED_TEST_URL": f"http://user:{URL_PASSWORD}@probmed-no-such-host.invalid/v1"}
    p = subprocess_predict(from_env, qfile, shared_data, tmp_path / "s3", tmp_path / "p3.parquet", env)
    outputs += p.communicate(timeout=120)
    assert p.returncode == 2 and "does not resolve" in outputs[-1] and "http://***@probmed-no-such-host.invalid/v1" in outputs[-1]

    assert_no_form_leaks(tmp_path, outputs, forms, skip=("params.yaml", "models.yaml"))


def wait_for_lines(proc: subprocess.Popen, store_file: Path, lines: int) -> None:
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if store_file.exists() and len(store_keys(store_file)) >= lines:
            return
        time.sleep(0.01)
    raise AssertionError(f"predict stored fewer than {lines} answers (exit {proc.poll()})")


def paid(srv: MockChatServer) -> int:
    """The requests the server took and answered (what a paid API bills, whether or not the client was still
    there to read the answer), once no request is in its hands any more."""
    deadline = time.time() + 30
    while srv.in_flight and time.time() < deadline:
        time.sleep(0.01)
    return len(srv.requests)


def assert_one_clean_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    for noise in ("Traceback", "KeyboardInterrupt", "Task was destroyed", "never awaited", "Exception ignored"):
        assert noise not in err, err
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_api_run_stores_every_answer_the_server_sent(sig, tmp_path, repo_root, shared_data):
    """Ctrl-C dropped the answers of the requests in flight (one run: 1,241 answers paid, 1,216 kept; up to
    `concurrency` paid twice per interrupt), printed a KeyboardInterrupt traceback one time in two and neither
    a count nor a resume hint; SIGTERM printed asyncio's "Task was destroyed but it is pending!". Interrupted twice,
    then resumed: the requests the server took equal the answers stored each time, and nothing is paid twice."""
    q = make_questions(shared_data, 12)  # 60 questions
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-x"}
    store_file = tmp_path / "run" / "api" / "answers.jsonl"
    with MockChatServer(latency_s=0.3) as srv:
        params = write_api_params(repo_root, tmp_path, srv.base_url, concurrency=8, timeout_s=30)
        stored = 0
        for _ in (1, 2):
            proc = subprocess_predict(params, qfile, shared_data, tmp_path / "run", tmp_path / "run.parquet", env)
            # answers of this run, not the last one's: a signal before the run has begun asking is no interrupt
            # of a run (the first round's 8 requests in flight left 20 or more lines some times)
            wait_for_lines(proc, store_file, stored + 10)
            os.kill(proc.pid, sig)
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 128 + sig, err
            line = assert_one_clean_line(err)
            stored = len(store_keys(store_file))
            assert paid(srv) == stored < 60  # every answer paid for is on disk
            reason = "interrupted (Ctrl-C)" if sig == signal.SIGINT else "terminated (SIGTERM)"
            assert line.startswith(f"probmed predict: stopped: {reason}; {stored} of 60 answers stored"), line
            assert f"{60 - stored} question(s) left; run the same command again" in line, line
            assert not (tmp_path / "run.parquet").exists()
        proc = subprocess_predict(params, qfile, shared_data, tmp_path / "run", tmp_path / "run.parquet", env)
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        assert paid(srv) == srv.answered == 60  # over three runs each question paid for once, every answer read
    keys = store_keys(store_file)
    assert len(keys) == len(set(keys)) == 60


@pytest.mark.slow
def test_a_second_interrupt_abandons_the_requests_in_flight_cleanly(tmp_path, repo_root, shared_data, questions):
    """The first Ctrl-C waits for the answers in flight (up to timeout_s); the second gives them up, still with one
    clean line and no asyncio warning."""
    qfile = tmp_path / "q.parquet"
    write_questions(questions, qfile)
    env = {**os.environ, "PROBMED_TEST_KEY": "sk-x"}
    with MockChatServer(fault_rates={"timeout": 1.0}, timeout_sleep_s=60) as srv:  # every answer takes a minute
        params = write_api_params(repo_root, tmp_path, srv.base_url, concurrency=4, timeout_s=120)
        proc = subprocess_predict(params, qfile, shared_data, tmp_path / "run", tmp_path / "run.parquet", env)
        deadline = time.time() + 60
        while srv.in_flight < 4 and time.time() < deadline:
            time.sleep(0.01)
        assert srv.in_flight == 4
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None  # waiting for the four answers in flight
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    line = assert_one_clean_line(err)
    assert "interrupted (Ctrl-C); 0 of 15 answers stored (0 received in this run), 15 question(s) left" in line, line


@pytest.mark.slow
def test_ctrl_c_on_a_local_model_keeps_whole_images_and_says_what_is_left(tmp_path, repo_root, shared_data, tiny_dir):
    """A local model stops after the image it is answering (its answers stored together), with the same one line."""
    q = make_questions(shared_data, 20)  # 100 questions, 5 per image
    qfile = tmp_path / "q.parquet"
    write_questions(q, qfile)
    store_file = tmp_path / "run" / "tiny" / "answers.jsonl"
    cmd = [sys.executable, "-m", "probmed", "predict", "--params", str(repo_root / "params.yaml"), "--questions",
           str(qfile), "--image-root", str(shared_data), f"predict.store_dir={tmp_path / 'run'}", "model=tiny",
           f"models.tiny.model_id={tiny_dir}", "--out", str(tmp_path / "run.parquet"), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_lines(proc, store_file, 10)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    line = assert_one_clean_line(err)
    stored = store_keys(store_file)
    assert len(stored) % 5 == 0 and 10 <= len(stored) < 100  # whole images only
    assert f"interrupted (Ctrl-C); {len(stored)} of 100 answers stored" in line, line
    assert f"{100 - len(stored)} question(s) left" in line and not (tmp_path / "run.parquet").exists()
    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1])["asked"] == 100 - len(stored)
