"""`probmed run-plan`: the pipeline's predict stages at once from one driver, their questions on a Ray cluster.

Fast tests: the plan is dvc.yaml's predict stages as DVC resolves them (one per run of pipeline.runs /
described_runs), selection, readiness, what is cleared, how concurrent evaluations end, what the command refuses.

The slow test starts a real two-node cluster (`ray start`, tests/inference/models/ray_cluster.py) beside a DVC
project whose question set is made by the pipeline's own stage commands from ../shared/data, runs the tiny model
(two settings) and an API model (the counting mock server) through `probmed run-plan`, SIGKILLs the worker node
mid-run, and checks: every answer stored once, the API asked once per question (bar the requests in flight on the
dead node), predictions and scores byte-equal to `dvc repro`'s single-process run, and `dvc status` clean after
`--commit`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from probmed.cli import main
from probmed.core.config import load_params, to_plain
from probmed.core.errors import ConfigError, UserError
from probmed.core.params_schema import parse_params
from probmed.infra.stopping import Stopped
from probmed.pipeline.plan import evaluations
from probmed.pipeline.run_plan import Plan, PlanStage, exit_code, load_plan, run_concurrently


@pytest.fixture(scope="module")
def plan(repo_root) -> Plan:
    here = Path.cwd()
    os.chdir(repo_root / "tests")  # read from elsewhere: stage names do not depend on where the reader stands
    try:
        return load_plan(repo_root)
    finally:
        os.chdir(here)


def test_the_plan_is_the_predict_stage_of_every_run_as_dvc_resolves_it(plan, repo_root):
    runs = evaluations(parse_params(to_plain(load_params(repo_root / "params.yaml"))))
    assert [s.run for s in plan.stages] == [e.name for e in runs]  # every run once, none else, dvc.yaml's order
    for stage, run in zip(plan.stages, runs):
        assert stage.stage in (f"predict@{run.name}", f"predict-described@{run.name}")
        assert stage.argv[:2] == ("probmed", "predict")
        assert f"model={run.model}" in stage.argv and f"setting={run.setting}" in stage.argv
        out = f"build/predictions/{run.question_set}/{run.model}-{run.setting}.parquet"
        assert stage.argv[stage.argv.index("--out") + 1] == out and (out, False) in stage.outs
        store = f"build/answers/{run.question_set}/{run.setting}/{run.model}"
        assert (store, True) in stage.outs  # the answer store persists across runs, as for `dvc repro`
    assert plan.producers["build/questions/probmed.parquet"] == "subset@probmed"


def test_runs_are_selected_by_name_or_pattern_and_an_unknown_one_lists_the_runs(plan):
    assert [s.run for s in plan.select(["probmed-tiny-*", "vqarad-adv-random-vanilla"])] == [
        "probmed-tiny-vanilla", "probmed-tiny-cot", "probmed-tiny-blank", "probmed-tiny-shuffled",
        "vqarad-adv-random-vanilla", "probmed-tiny-described"]
    assert plan.select([]) == list(plan.stages)
    with pytest.raises(ConfigError, match=r"no run .* matches 'probmed-tyni-\*'; the runs: probmed-tiny-vanilla"):
        plan.select(["probmed-tyni-*"])


def test_a_missing_input_names_the_stage_that_makes_it(plan, tmp_path):
    elsewhere = Plan(tmp_path, plan.stages, plan.producers)
    with pytest.raises(UserError, match=r"predict@probmed-tiny-vanilla reads build/questions/probmed.parquet, which is "
                                        r"missing: make it first \(`dvc repro subset@probmed`\)"):
        elsewhere.check_ready(elsewhere.select(["probmed-tiny-vanilla"]))


def test_outputs_are_cleared_as_dvc_repro_clears_them_and_the_store_is_kept(tmp_path):
    stage = PlanStage("predict@x", "x", ("probmed", "predict"), (),
                      (("answers/x", True), ("predictions/x.parquet", False), ("scores/x", False)))
    for path in ("answers/x/answers.jsonl", "predictions/x.parquet", "scores/x/metrics.json"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")
    Plan(tmp_path, (stage,)).clear_outputs(stage)
    assert (tmp_path / "answers/x/answers.jsonl").is_file()
    assert not (tmp_path / "predictions/x.parquet").exists() and not (tmp_path / "scores/x").exists()


def test_evaluations_run_at_once_and_one_that_fails_leaves_the_others_running():
    running, most, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def job(name: str, outcome):
        def run():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            release.wait(5) if name != "c" else None
            with lock:
                running[0] -= 1
            return outcome()
        return run

    def fail():
        raise UserError("bad endpoint")

    def stop():
        raise Stopped("terminated", 143)

    heard = []
    threading.Timer(0.3, release.set).start()
    outcomes = run_concurrently([("a", job("a", lambda: ({"asked": 1}, 0))), ("b", job("b", fail)),
                                 ("c", job("c", stop)), ("d", job("d", lambda: ({"asked": 2}, 1)))], heard.append)
    assert most[0] >= 3  # at once, not one after another
    assert [(o.run, o.code) for o in outcomes] == [("a", 0), ("b", 2), ("c", 143), ("d", 1)]  # plan order
    assert outcomes[1].error == "bad endpoint" and outcomes[0].summary == {"asked": 1}
    assert sorted(o.run for o in heard) == ["a", "b", "c", "d"] and exit_code(outcomes) == 2


def test_at_once_limits_how_many_evaluations_run_together_and_a_bug_is_raised_after_all_end():
    running, most, lock = [0], [0], threading.Lock()

    def run():
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return {}, 0

    def bug():
        raise RuntimeError("a bug")

    ended = []
    with pytest.raises(RuntimeError, match="a bug"):
        run_concurrently([(str(k), run) for k in range(5)] + [("bug", bug)], ended.append, at_once=2)
    assert most[0] == 2 and len(ended) == 6


@pytest.mark.parametrize("argv, message", [
    (["seed=3"], "seed=3: only engine.ray.* may be set here"),
    (["--params", "params.yaml"], "--params is not taken here"),
    (["--at-once", "-1"], "--at-once -1: expected 0 (all) or more"),
    (["nothing-*"], "no run of pipeline.runs or pipeline.described_runs matches 'nothing-*'"),
])
def test_run_plan_refuses_what_would_change_a_stages_outputs(repo_root, monkeypatch, capsys, argv, message):
    monkeypatch.chdir(repo_root)
    assert main(["run-plan", "--dry-run", *argv]) == 2
    assert message in capsys.readouterr().err


def test_dry_run_prints_each_stages_command(repo_root, monkeypatch, capsys, plan):
    monkeypatch.chdir(repo_root)
    assert main(["run-plan", "--dry-run", "vqarad-adv-*", "engine.ray.address=auto"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["stage"] for line in lines] == ["predict@vqarad-adv-tiny-vanilla", "predict@vqarad-adv-random-vanilla"]
    assert lines[1]["cmd"].startswith("probmed predict --questions build/questions/vqarad-adv.parquet --out "
                                      "build/predictions/vqarad-adv/random-vanilla.parquet model=random setting=vanilla")


# --- slow: a real cluster, the pipeline's question set, DVC ---------------------------------------------------------

# CI: the default question set's params over four sources whose curation takes seconds (VQA-RAD's images where they
# lie, MedICaT, and two that write PNGs under build/images): ~450 questions on ~115 images of 6 image types. The
# default subset needs every source curated and the full set generated first (~4 min on 2 cores before any
# question is asked): PROBMED_TEST_DEFAULT_SUBSET=1 runs the test over it (docs/engines.md has both measured).
DEFAULT_SUBSET = os.environ.get("PROBMED_TEST_DEFAULT_SUBSET") == "1"
CI_SOURCES = ("vqarad", "medicat", "covid_ct", "brats")
RUNS = {"probmed-tiny-vanilla": ("tiny", "vanilla"), "probmed-tiny-blank": ("tiny", "blank"),
        "probmed-api-vanilla": ("api", "vanilla")}  # run: (model, setting)
API = {"backend": "openai", "model_id": "mock", "api_key_env": None, "concurrency": 2, "max_tokens": 8,
       "timeout_s": 30, "max_retries": 2}


def stage_commands(repo: Path) -> dict[str, list[str]]:
    """Every stage's command as DVC resolves it."""
    import shlex

    from dvc.repo import Repo
    from dvc.stage import PipelineStage

    with Repo(str(repo)) as dvc:
        return {s.name: shlex.split(s.cmd) for s in dvc.index.stages if isinstance(s, PipelineStage) and s.cmd}


def copy_data(repo: Path, shared_data: Path, sources: tuple[str, ...] | None) -> None:
    """data/ as `probmed fetch-data` makes it (a copy of ../shared/data: images are read only from inside the
    project), the folders of `sources` only, when given."""
    curate = to_plain(load_params(repo / "params.yaml"))["curate"]
    folders = [Path(curate[s]["data"]).name for s in sources] if sources else [p.name for p in shared_data.iterdir() if p.is_dir()]
    for name in folders:
        shutil.copytree(shared_data / name, repo / "data" / name)


def make_question_set(repo: Path, sources: tuple[str, ...] | None):
    """build/questions/probmed.parquet as the pipeline makes it: the curate, generate and subset stages' commands
    (curate and generate on `sources` only, when given), and the split the pretrain stage writes (its training is
    not needed: the subset reads only the split)."""
    from probmed.core.records import read_questions
    from probmed.finetune.train import SPLIT_COLUMNS, finetune_params, load_split_questions
    from probmed.infra.io import write_parquet
    from test_pipeline import sh

    cmds = stage_commands(repo)
    every = to_plain(load_params(repo / "params.yaml"))["curate"]["all"]  # what the stage's `curate all` reads
    keep = [s for s in every if sources is None or s in sources]
    records = [f"build/records/{s}.parquet" for s in keep]
    assert cmds["curate"][:3] == ["probmed", "curate", "all"], cmds["curate"]
    sh(*cmds["curate"][:2], *keep, *cmds["curate"][3:], cwd=repo, timeout=1200)
    sh(*[t for t in cmds["generate"] if not t.startswith("build/records/") or t in records], cwd=repo, timeout=1200)
    fcfg = finetune_params(parse_params(to_plain(load_params(repo / "params.yaml"))))
    frame = load_split_questions(repo / fcfg.questions, [repo / r for r in records], fcfg)
    write_parquet(frame[SPLIT_COLUMNS].drop_duplicates("image_id").reset_index(drop=True),
                  repo / "build/finetune/splits.parquet")
    sh(*cmds["subset@probmed"], cwd=repo)
    return read_questions(repo / "build/questions/probmed.parquet")


def outputs_md5(repo: Path, run: str) -> dict[str, str]:
    from test_pipeline import md5, tree_md5

    model, setting = RUNS[run]
    scores = repo / "build/scores/probmed" / model / setting
    return {"predictions": md5(repo / f"build/predictions/probmed/{model}-{setting}.parquet"),
            **{f"scores/{name}": digest for name, digest in tree_md5(scores).items()}}


def json_lines(out: str) -> list[dict]:
    """The JSON lines of a command's output (each evaluation's, then the plan's); the rest are scores and notes."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def store_of(run: str) -> str:
    model, setting = RUNS[run]
    return f"build/answers/probmed/{setting}/{model}"


def stored_keys(repo: Path, run: str) -> list[str]:
    store = repo / store_of(run)
    return [json.loads(line)["key"] for path in sorted(store.glob("*.jsonl")) for line in path.read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_run_plan_on_a_cluster_that_loses_its_worker_node(tmp_path, repo_root, shared_data):
    from inference.models.ray_cluster import RayCluster
    from probmed.inference.models.mock_server import MockChatServer
    from probmed.inference.models.tiny import build_tiny_llava
    from test_pipeline import BIN, _env, copy_project, edit_params, sh

    repo = tmp_path / "repo"
    repo.mkdir()
    copy_project(repo_root, repo)
    sh("git", "init", "-q", cwd=repo)
    copy_data(repo, shared_data, None if DEFAULT_SUBSET else CI_SOURCES)
    t0 = time.monotonic()
    questions = make_question_set(repo, None if DEFAULT_SUBSET else CI_SOURCES)
    build_tiny_llava(repo / "build/finetune/pretrain/model", seed=0, corpus=questions["question"].tolist())
    t_questions = time.monotonic() - t0
    stages = [f"predict@{run}" for run in RUNS]
    with MockChatServer(latency_s=0.1) as srv:
        edit_params(repo / "models.yaml", lambda cfg: cfg["models"].update(api={**API, "base_url": srv.base_url}))
        edit_params(repo / "params.yaml", lambda cfg: cfg["pipeline"]["runs"].update(
            {"probmed-api-vanilla": {"question_set": "probmed", "model": "api", "setting": "vanilla"}}))
        t0 = time.monotonic()
        sh(f"{BIN}/dvc", "repro", "--single-item", *stages, cwd=repo, timeout=1800)  # the single-process reference
        t_single = time.monotonic() - t0
        assert srv.answered == len(questions)
        single = {run: outputs_md5(repo, run) for run in RUNS}
        single_keys = {run: sorted(stored_keys(repo, run)) for run in RUNS}
        for folder in ("answers", "predictions", "scores", "logs"):  # the cluster asks everything again
            shutil.rmtree(repo / "build" / folder / ("probmed" if folder != "logs" else ""), ignore_errors=True)

        cluster = RayCluster(tmp_path).start()
        env = {**_env(), **{k: v for k, v in cluster.env.items() if k.startswith("RAY_")}}
        run_plan = [f"{BIN}/probmed", "run-plan", *RUNS, f"engine.ray.address={cluster.address}",
                    "engine.ray.images_per_task=2", "--no-progress"]
        api_store = repo / "build/answers/probmed/vanilla/api/answers.jsonl"
        try:
            t0 = time.monotonic()
            proc = subprocess.Popen(run_plan, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            t_kill = cluster.kill_worker_node_when(
                lambda: api_store.exists() and len(api_store.read_text().splitlines()) >= len(questions) // 10)
            out, err = proc.communicate(timeout=1800)
            t_plan = time.monotonic() - t0
            assert proc.returncode == 0, err[-3000:]
            answered = srv.answered - len(questions)
            changed = json.loads(sh(f"{BIN}/dvc", "status", "--json", *stages, cwd=repo).stdout or "{}")
            again = subprocess.run([*run_plan, "--commit"], cwd=repo, env=env, capture_output=True, text=True,
                                   timeout=1800)
        finally:
            cluster.stop()
    assert again.returncode == 0, again.stderr[-3000:]
    outcomes = {o["run"]: o for o in json_lines(out) if o.get("run")}
    for run in RUNS:
        # every answer once, none lost: the records of the single-process run, one per request (under `blank`
        # two questions of the same text on the blank image are one request, asked and stored once)
        assert sorted(stored_keys(repo, run)) == single_keys[run] and len(set(single_keys[run])) == len(single_keys[run])
        assert outcomes[run]["code"] == 0, outcomes[run]
        assert outcomes[run]["asked"] == len(single_keys[run]) == len(questions) - outcomes[run]["shared"], outcomes[run]
        assert outputs_md5(repo, run) == single[run], run  # the bytes `dvc repro` wrote, single-process
    lost = sum(o["backend_lost_tasks"] for o in outcomes.values())
    resubmitted = sum(o["backend_resubmitted"] for o in outcomes.values())
    assert lost >= 1 and resubmitted >= 1  # tasks died with the node and were asked again elsewhere
    paid_twice = answered - len(questions)
    in_flight = 2 * API["concurrency"]  # the requests of the dead node's tasks (2 CPUs) in flight when it died
    assert 0 <= paid_twice <= in_flight, answered
    # `dvc status` before the commit: only answer stores may differ from dvc.lock (their answers arrive in an order
    # of the cluster's; a store whose tasks all came back in the order asked is byte-equal)
    assert all(entries == [{"changed outs": {store_of(stage.split("@")[1]): "modified"}}]
               for stage, entries in changed.items()), changed
    # again, with --commit: nothing asked (every answer is stored), the same bytes, dvc.lock up to date
    assert srv.answered == len(questions) + answered
    assert all(o["asked"] == 0 for o in json_lines(again.stdout) if o.get("run"))
    assert json_lines(again.stdout)[-1]["committed"] == stages
    assert json.loads(sh(f"{BIN}/dvc", "status", "--json", *stages, cwd=repo).stdout or "{}") == {}
    assert all(outputs_md5(repo, run) == single[run] for run in RUNS)
    print(f"\nrun-plan: {len(questions)} questions on {questions['image_id'].nunique()} images x {len(RUNS)} "
          f"evaluations; question set made in {t_questions:.0f} s, single-process `dvc repro` {t_single:.0f} s, "
          f"cluster up in {cluster.startup_s:.0f} s, run-plan {t_plan:.0f} s (worker node killed at "
          f"{t_kill - t0:.0f} s); api requests answered {answered} (paid twice: {paid_twice}); lost tasks {lost}, "
          f"resubmitted {resubmitted}; answers stored once each: {sum(map(len, single_keys.values()))}; stores differing from "
          f"the single-process run's bytes: {sorted(changed)}")
