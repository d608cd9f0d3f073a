"""The Ray engine: questions answered by tasks on a cluster, every answer written once by the one writer.

The slow test starts a real two-node cluster (ray_cluster.py), runs the tiny model and an API model (the
counting mock server) through `probmed predict` with ``engine.kind=ray``, both at once, SIGKILLs every
process of the worker node while tasks run there, and checks that every question is answered once, that
nothing stored was asked again, and that tables and scores equal a single-process run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf
from predict_helpers import make_questions
from ray_cluster import RayCluster

from probmed.core.config import load_params
from probmed.core.records import read_predictions, write_questions
from probmed.inference.models.base import Item
from probmed.inference.models.baselines import RandomBackend
from probmed.inference.models.mock_server import MockChatServer
from probmed.inference.models.ray_engine import Chunk, Done, WorkerSpec, answer_chunk, chunks, merge_run_info, run_info_added

CONCURRENCY = 2


def test_chunks_split_by_image_and_ship_each_image_once(tmp_path):
    for name in "abcde":
        (tmp_path / f"{name}.png").write_bytes(name.encode() * 10)
    batch = [Item(qid=f"{n}:{k}", image_id=n, image_path=tmp_path / f"{n}.png", prompt="p", question="q")
             for n in "abcde" for k in range(3)]
    got = chunks(batch, images_per_task=2)
    assert [len({i.image_id for i in c.items}) for c in got] == [2, 2, 1]
    assert [p for c in got for p in c.positions] == list(range(15))  # every question once, in order
    first = got[0]
    assert sorted(first.images) == ["0.png", "1.png"] and first.images["1.png"] == b"b" * 10
    assert {str(i.image_path) for i in first.items} == {"0.png", "1.png"}  # names inside the task's folder


def test_merge_run_info_adds_counts_and_keeps_facts():
    a = {"family": "llava", "questions_by_path": {"shared-prefix": 6}, "path": "shared-prefix"}
    b = {"family": "llava", "questions_by_path": {"shared-prefix": 3, "per-image-batch": 2}, "path": "shared-prefix"}
    assert merge_run_info([a, b]) == {"family": "llava", "path": "shared-prefix",
                                      "questions_by_path": {"shared-prefix": 9, "per-image-batch": 2}}


def test_engine_is_no_stage_param(repo_root):
    """Switching the engine re-runs no stage: no stage of dvc.yaml declares it, and it lives in layout.yaml."""
    stages = yaml.safe_load((repo_root / "dvc.yaml").read_text())["stages"]
    declared = json.dumps({name: stage.get("do", stage).get("params", []) for name, stage in stages.items()})
    assert "engine" not in declared
    assert "engine" in yaml.safe_load((repo_root / "layout.yaml").read_text())


def unique_questions(shared_data: Path, n_images: int):
    """Real questions whose texts name their image, so the server's log tells which question each request was."""
    q = make_questions(shared_data, n_images)
    q["question"] = q["question"] + " (" + q["image_id"] + ")"
    return q


@pytest.mark.slow
def test_ray_cluster_survives_a_dead_worker_node_with_every_answer_once(tmp_path, repo_root, shared_data, tiny_dir):
    questions = unique_questions(shared_data, 16)  # 80 questions, 16 images
    qfile = tmp_path / "q.parquet"
    write_questions(questions, qfile)
    log = tmp_path / "requests.jsonl"
    with MockChatServer(latency_s=0.25, log_path=str(log)) as srv:
        cfg = load_params(repo_root / "params.yaml")
        cfg.models.api = {"backend": "openai", "model_id": "mock", "base_url": srv.base_url, "api_key_env": None,
                          "concurrency": CONCURRENCY, "max_tokens": 8, "timeout_s": 30, "max_retries": 2}
        cfg.models.tiny.model_id = str(tiny_dir)
        params = tmp_path / "params.yaml"
        OmegaConf.save(cfg, params)
        single = {m: predict(params, qfile, shared_data, tmp_path / "single", m, []) for m in ("api", "tiny")}
        for proc in single.values():
            assert proc.wait(timeout=600) == 0, proc.stderr.read()
        paid_single = len(log.read_text().splitlines())
        assert paid_single == len(questions)
        log.unlink()

        cluster = RayCluster(tmp_path).start()
        try:
            engine = ["engine.kind=ray", f"engine.ray.address={cluster.address}", "engine.ray.images_per_task=2"]
            runs = {m: predict(params, qfile, shared_data, tmp_path / "ray", m, engine, cluster.env)
                    for m in ("api", "tiny")}
            api_store = tmp_path / "ray" / "answers" / "api" / "answers.jsonl"
            t_kill, stored_before = kill_midway(cluster, api_store)
            outcomes = {m: finish(proc) for m, proc in runs.items()}
        finally:
            cluster.stop()
    received = list(srv.requests)  # every request the server took, with the time it came
    sent = [json.loads(line) for line in log.read_text().splitlines()]  # every answer it gave (sent: delivered)
    for model, summary in outcomes.items():
        store = tmp_path / "ray" / "answers" / model / "answers.jsonl"
        keys = [json.loads(line)["key"] for line in store.read_text().splitlines()]
        assert len(keys) == len(set(keys)) == len(questions), model  # every answer once: none lost, none twice
        assert summary["asked"] == len(questions) and summary["failed"] == 0, summary
    assert sum(s["backend_lost_tasks"] for s in outcomes.values()) >= 1  # tasks died with the node ...
    assert sum(s["backend_resubmitted"] for s in outcomes.values()) >= 1  # ... and were asked again elsewhere
    asked_after = {r["text"] for r in received[paid_single:] if r["t"] > t_kill}
    stored_texts = set(questions.set_index("qid").loc[sorted(stored_before), "question"])
    assert not {t for t in asked_after if any(q in t for q in stored_texts)}  # nothing stored was asked again
    paid = [r["text"] for r in sent if r["sent"]]
    repeated = len(paid) - len(set(paid))
    assert len(set(paid)) == len(questions) and repeated <= CONCURRENCY  # at most the requests in flight
    print(f"\nray: cluster up in {cluster.startup_s:.0f} s; {len(questions)} questions x 2 models; api requests "
          f"received {len(received) - paid_single}, answered {len(paid)} (repeated: {repeated}), lost tasks "
          f"{sum(s['backend_lost_tasks'] for s in outcomes.values())}")
    for model in ("api", "tiny"):
        same_as_single(tmp_path, model)


def predict(params: Path, qfile: Path, shared_data: Path, root: Path, model: str, extra: list[str],
            env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "probmed", "predict", "--params", str(params), "--questions", str(qfile),
         "--image-root", str(shared_data), f"predict.store_dir={root / 'answers'}", f"model={model}",
         "--out", str(root / f"{model}.parquet"), "--score-dir", str(root / "scores" / model), "--no-progress",
         *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_midway(cluster: RayCluster, api_store: Path) -> tuple[float, set[str]]:
    """SIGKILL the worker node once the API model has stored answers and a task runs there; what was stored."""
    t_kill = cluster.kill_worker_node_when(
        lambda: api_store.exists() and len(api_store.read_text().splitlines()) >= 10)
    stored = {json.loads(line)["qid"] for line in api_store.read_text().splitlines() if line.endswith("}")}
    return t_kill, stored


def finish(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    return next(json.loads(line) for line in reversed(out.splitlines()) if line.startswith("{"))  # its summary


def same_as_single(root: Path, model: str) -> None:
    cols = ["qid", "response", "label", "p_yes", "cache_key", "error"]
    got, want = read_predictions(root / "ray" / f"{model}.parquet"), read_predictions(root / "single" / f"{model}.parquet")
    assert got[cols].equals(want[cols]), model
    ray_metrics = json.loads((root / "ray" / "scores" / model / "metrics.json").read_text())
    single_metrics = json.loads((root / "single" / "scores" / model / "metrics.json").read_text())
    assert ray_metrics["overall"] == single_metrics["overall"], model
    assert ray_metrics["by_category"] == single_metrics["by_category"], model


def test_a_task_reports_only_what_it_added_to_a_backend_that_served_tasks_before():
    before = {"family": "llava", "questions_by_path": {"shared-prefix": 6}, "path": "shared-prefix"}
    after = {"family": "llava", "questions_by_path": {"shared-prefix": 9, "per-image-batch": 2}, "path": "shared-prefix"}
    assert run_info_added(after, before) == {"family": "llava", "path": "shared-prefix",
                                             "questions_by_path": {"shared-prefix": 3, "per-image-batch": 2}}
    assert run_info_added(after, {}) == after  # a fresh backend: everything is this task's


def test_a_worker_prepares_a_table_backend_on_each_runs_own_table(shared_data):
    """One driver runs several evaluations (`probmed run-plan`), so one worker answers tasks of several question
    tables: a baseline that seeds on its table answers each table's questions from that table, as a local run."""
    first = make_questions(shared_data, 2)
    second = make_questions(shared_data, 3).assign(qid=lambda f: "other-" + f["qid"])
    entry = {"backend": "random", "seed": 3}
    spec = WorkerSpec("random", "random", entry, {"seed": 0})
    for table, name in ((first, "first"), (second, "second")):
        items = [Item(qid=q.qid, image_id=q.image_id, image_path=None, prompt="p", question=q.question)
                 for q in table.itertuples()]
        got = {items[p].qid: ans.label
               for message in answer_chunk(spec, Chunk(tuple(range(len(items))), tuple(items)), table, name)
               if not isinstance(message, Done) for p, ans in message}
        local = RandomBackend("random", entry, {"seed": 0})
        local.prepare(table)
        assert got == {item.qid: ans.label for item, ans in zip(items, local.answer(items))}, name


@pytest.mark.slow
def test_an_address_with_no_cluster_is_exit_2_naming_the_setting(tmp_path, repo_root, shared_data):
    """`engine.ray.address=auto` where no cluster runs (its own temp dir: no cluster's address file) is the
    user's setting, said in one line with what to do, not a traceback of exit 4."""
    qfile = tmp_path / "q.parquet"
    write_questions(make_questions(shared_data, 1), qfile)
    env = {**os.environ, "TMPDIR": str(tmp_path), "RAY_ADDRESS": ""}
    proc = subprocess.run([str(Path(sys.executable).parent / "probmed"), "predict", "model=random", "engine.kind=ray",
                           "engine.ray.address=auto", "--questions", str(qfile), "--out", str(tmp_path / "p.parquet"),
                           f"predict.image_root={shared_data}", f"predict.store_dir={tmp_path / 'answers'}",
                           "--params", str(repo_root / "params.yaml")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "engine.ray.address=auto: no Ray cluster there" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "p.parquet").exists()
