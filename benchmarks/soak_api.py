"""Soak test of `probmed predict` against the fault-injecting OpenAI-compatible server.

20,000 questions (unique texts, on real VQA-RAD images) at 16-way concurrency; the server, a
separate process on 127.0.0.1, answers 5% of requests with 429 (Retry-After), 2% with 500 and
lets 1% time out, and is SIGKILLed half way through and restarted on the same port. Then the
run is repeated over the same store. Measured and checked:

* every question ends answered or recorded failed (the answer store holds each key once);
* 0 duplicate paid requests: no question gets a successful answer from the server twice
  (the server logs every request it answers), and the re-run asks only the recorded failures;
* peak memory (max RSS of the predict process) and wall time, each under a bound
  (`--max-rss-mib`, `--max-seconds`), against a fault-free baseline run of `--baseline`
  questions measured in the same invocation (ratios printed).

    python benchmarks/soak_api.py [--questions 20000] [--concurrency 16] [--data ../shared/data] [--json OUT] [--quick]

Exit status 0 when every check holds (tests/inference/models/test_soak.py runs a small version); --quick runs
100 questions after a 20-question baseline, with every fault, the kill and every check but the time bound.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
FAULTS = {"429": 0.05, "500": 0.02, "timeout": 0.01}
QUICK = {"questions": 100, "baseline": 20}


def question_table(data: Path, n: int, per_image: int = 50) -> pd.DataFrame:
    """`n` questions with unique texts, `per_image` per real VQA-RAD image (paths relative to `data`)."""
    from probmed.core.records import QUESTION_COLUMNS

    images = sorted((data / "vqa-rad" / "VQA_RAD Image Folder").glob("synpic*.jpg"))
    rows = []
    for k in range(n):
        img = images[(k // per_image) % len(images)]
        image_id = f"soak-{k // per_image:05d}"
        pol = "gt" if k % 2 == 0 else "adversarial"
        rows.append({"qid": f"q{k:06d}", "image_id": image_id, "image_path": str(img.relative_to(data)),
                     "source": "VQA-RAD", "category": "condition", "polarity": pol,
                     "pair_id": f"{image_id}:entity_{(k % per_image) // 2}",
                     "question": f"Question {k}: is there a finding number {k} in this image?",
                     "answer": "yes" if pol == "gt" else "no", "entity": f"finding {k}",
                     "image_type": "CT Scan - Chest",
                     "qa_type": f"entity_{'gt' if pol == 'gt' else 'hallu'}_{(k % per_image) // 2}",
                     "strategy": "gt" if pol == "gt" else "random", "evidence": ""})
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, log: Path, faults: dict[str, float], latency_ms: float) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "probmed.inference.models.mock_server", "--port", str(port), "--latency-ms",
         str(latency_ms), "--fault-rates", json.dumps(faults), "--timeout-sleep-s", "3", "--retry-after", "0.2",
         "--log", str(log)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert "mock OpenAI-compatible server" in proc.stdout.readline()
    return proc


def wait_until_idle(port: int, limit_s: float = 60.0) -> None:
    """Block until the server has no request in flight: a request the client gave up on (a timeout) is
    logged only when the server is done with it, which can be after predict has exited."""
    deadline = time.monotonic() + limit_s
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=5) as resp:
            if json.loads(resp.read())["in_flight"] == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the mock server still had requests in flight after {limit_s} s")
        time.sleep(0.1)


def write_params(work: Path, port: int, concurrency: int) -> Path:
    from probmed.core.config import merge_registries, read_yaml_12

    params = read_yaml_12(REPO / "params.yaml")  # YAML 1.2 like DVC: keys yes/no stay strings
    merge_registries(params, REPO / "params.yaml")  # models.yaml, layout.yaml: one self-contained file below
    params["models"]["soak"] = {
        "backend": "openai", "model_id": "soak-mock", "base_url": f"http://127.0.0.1:{port}/v1",
        "api_key_env": "PROBMED_SOAK_KEY", "concurrency": concurrency, "max_retries": 8, "timeout_s": 2,
        "backoff_base_s": 0.05, "backoff_max_s": 2.0, "max_tokens": 8, "max_image_side": 64}
    params["predict"]["batch_size"] = 512  # questions handed to the backend at once: a batch waits for its slowest
    path = work / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def run_predict(params: Path, qfile: Path, data: Path, store: Path, out: Path,
                on_tick=None) -> tuple[int, float, int, str]:
    """(exit status, seconds, peak RSS in MiB, stderr tail) of one `probmed predict` process."""
    cmd = [sys.executable, "-m", "probmed", "predict", "--params", str(params), "--questions", str(qfile),
           "--image-root", str(data), f"predict.store_dir={store}", "model=soak", "--out", str(out), "--no-progress"]
    env = {**os.environ, "PROBMED_SOAK_KEY": "sk-soak-0123456789abcdef", "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        while True:  # wait4, not Popen.poll: it reaps the child and gives its own resource usage
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if on_tick is not None:
                on_tick()
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - t0
        err.seek(0)
        tail = err.read()[-2000:]
    return proc.returncode, elapsed, usage.ru_maxrss // 1024, tail


def read_log(log: Path) -> list[dict]:
    """The server's request log (a line the SIGKILL cut short is skipped)."""
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def soak(data: Path, n: int, concurrency: int, work: Path, faults: dict[str, float], kill: bool) -> dict:
    """One run (+ a re-run) of `n` questions; the figures and checks as a dict."""
    q = question_table(data, n)
    qfile = work / "questions.parquet"
    from probmed.core.records import write_questions

    write_questions(q, qfile)
    port, log = free_port(), work / "server.jsonl"
    params = write_params(work, port, concurrency)
    server = [start_server(port, log, faults, latency_ms=2)]
    killed_at: list[int] = []

    def kill_half_way() -> None:
        if kill and not killed_at and log.exists() and log.stat().st_size and len(read_log(log)) >= n // 2:
            killed_at.append(len(read_log(log)))
            server[0].send_signal(signal.SIGKILL)
            server[0].wait()
            time.sleep(1.0)  # the endpoint is gone for a second: connection failures, retried
            server[0] = start_server(port, log, faults, latency_ms=2)

    store = work / "store"
    try:
        rc, elapsed, rss, err = run_predict(params, qfile, data, store, work / "p.parquet", kill_half_way)
        wait_until_idle(port)  # the first run's late log lines belong to it, not to the re-run
        first = read_log(log)
        rc2, elapsed2, rss2, err2 = run_predict(params, qfile, data, store, work / "p2.parquet")
        second = read_log(log)[len(first):]
    finally:
        server[0].send_signal(signal.SIGKILL)
        server[0].wait()
    return summarise(q, store, first, second, (rc, elapsed, rss, err), (rc2, elapsed2, rss2, err2), killed_at)


def summarise(q: pd.DataFrame, store: Path, first: list[dict], second: list[dict], run1, run2, killed_at) -> dict:
    lines = [json.loads(x) for x in (store / "soak" / "answers.jsonl").read_text().splitlines()]
    by_key: dict[str, dict] = {}
    for rec in lines:
        if rec["key"] not in by_key or not rec.get("error"):
            by_key[rec["key"]] = rec
    answered = {r["qid"] for r in by_key.values() if not r.get("error")}
    failed = {r["qid"] for r in by_key.values() if r.get("error")} - answered
    prompt_of = {row.qid: row.question for row in q.itertuples()}
    ok_counts: dict[str, int] = {}
    for r in first + second:
        if r["action"] == "ok" and r["sent"]:
            ok_counts[r["text"]] = ok_counts.get(r["text"], 0) + 1
    answered_texts = {prompt_of[qid] for qid in answered}
    return {
        "questions": len(q), "exit_status": run1[0], "rerun_exit_status": run2[0],
        "answered": len(answered), "recorded_failed": len(failed),
        "unaccounted": len(q) - len(answered | failed), "store_lines": len(lines),
        "requests": len(first), "faults": {a: sum(r["action"] == a for r in first) for a in FAULTS},
        "server_killed_after_requests": killed_at[0] if killed_at else None,
        "duplicate_paid_requests": sum(c - 1 for c in ok_counts.values() if c > 1),
        "rerun_requests": len(second),
        "rerun_requests_for_answered": sum(_text_in(r["text"], answered_texts) for r in second),
        "elapsed_s": round(run1[1], 1), "questions_per_s": round(len(q) / run1[1], 1),
        "peak_rss_mib": run1[2], "rerun_elapsed_s": round(run2[1], 1), "rerun_peak_rss_mib": run2[2],
        "stderr_tail": run1[3].strip().splitlines()[-1:] if run1[3].strip() else [],
    }


def _text_in(prompt: str, questions: set[str]) -> bool:
    return prompt.split(" Answer with", 1)[0] in questions


def checks(result: dict, max_seconds: float, max_rss_mib: float) -> list[str]:
    """What must hold; an empty list when everything does."""
    problems = []
    if result["elapsed_s"] > max_seconds:
        problems.append(f"the soak run took {result['elapsed_s']} s, over the bound of {max_seconds} s")
    if result["peak_rss_mib"] > max_rss_mib:
        problems.append(f"predict peaked at {result['peak_rss_mib']} MiB, over the bound of {max_rss_mib} MiB")
    if result["exit_status"] not in (0, 1):
        problems.append(f"predict exited {result['exit_status']}: {result['stderr_tail']}")
    if result["unaccounted"]:
        problems.append(f"{result['unaccounted']} questions neither answered nor recorded failed")
    if result["duplicate_paid_requests"]:
        problems.append(f"{result['duplicate_paid_requests']} questions were answered twice by the server")
    if result["rerun_requests_for_answered"]:
        problems.append(f"the re-run asked {result['rerun_requests_for_answered']} answered questions again")
    return problems


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=int, default=20_000)
    p.add_argument("--baseline", type=int, default=2_000, help="fault-free questions for the baseline run (0: none)")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--data", default=str(REPO.parent / "shared" / "data"))
    p.add_argument("--max-seconds", type=float, default=3600.0, help="bound on the soak run's wall time")
    p.add_argument("--max-rss-mib", type=float, default=2048.0, help="bound on predict's peak memory")
    p.add_argument("--json", help="write the figures here")
    p.add_argument("--quick", action="store_true", help="100 questions, a 20-question baseline; no time bound")
    args = p.parse_args()
    if args.quick:
        vars(args).update(QUICK, max_seconds=float("inf"))
    data = Path(args.data).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        base_dir, soak_dir = Path(tmp) / "baseline", Path(tmp) / "soak"
        base_dir.mkdir()
        soak_dir.mkdir()
        baseline = soak(data, args.baseline, args.concurrency, base_dir, {}, kill=False) if args.baseline else None
        result = soak(data, args.questions, args.concurrency, soak_dir, FAULTS, kill=True)
    if baseline is not None:
        result["baseline"] = {k: baseline[k] for k in ("questions", "elapsed_s", "questions_per_s", "peak_rss_mib")}
        result["throughput_vs_baseline"] = round(result["questions_per_s"] / max(baseline["questions_per_s"], 1e-9), 2)
        result["peak_rss_vs_baseline"] = round(result["peak_rss_mib"] / max(baseline["peak_rss_mib"], 1), 2)
    result["bounds"] = {"max_seconds": args.max_seconds, "max_rss_mib": args.max_rss_mib}
    result["problems"] = checks(result, args.max_seconds, args.max_rss_mib)
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
