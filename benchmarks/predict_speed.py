"""Prediction speed, measured in one run on real VQA-RAD images and generated questions.

1. logit mode vs generation (max 64 new tokens), questions/s, on the tiny LLaVA, end to end and
   for the model alone (on the tiny model, resizing the 800-2300 px source images dominates);
2. per-image batching vs one question per call (generation, 16 new tokens);
3. API throughput at 16-way concurrency vs sequential against a local
   OpenAI-compatible server adding 50 ms latency per request (target >= 10x);
4. a fully cached re-run: the number of requests it makes (target 0).

    python benchmarks/predict_speed.py [--data ../shared/data] [--images 8]

Prints a table and, with --json PATH, writes the numbers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from probmed.inference.models.base import Item  # noqa: E402
from probmed.inference.models.registry import build_backend  # noqa: E402
from probmed.inference.models.tiny import build_tiny_llava  # noqa: E402
from probmed.inference.predict import run_predictions  # noqa: E402
from probmed.inference.prompting import PromptSet  # noqa: E402

PROMPTS = PromptSet.from_params({})


def question_set(data: Path, n_images: int):
    from probmed.benchmark.questions import generate_questions
    from probmed.benchmark.sources.vqarad import load_vqarad

    records = [r for r in load_vqarad(data / "vqa-rad", data).records if r.image_path][:n_images]
    frame, _ = generate_questions(records, seed=0)
    return frame.reset_index(drop=True)


def items(q, root: Path) -> list[Item]:
    return [Item(qid=r.qid, image_id=r.image_id, image_path=root / r.image_path,
                 prompt=PROMPTS.question_prompt("vanilla", r.question), question=r.question)
            for r in q.itertuples()]


def by_image(its: list[Item]) -> list[list[Item]]:
    groups: list[list[Item]] = []
    for it in its:
        if groups and groups[-1][0].image_id == it.image_id:
            groups[-1].append(it)
        else:
            groups.append([it])
    return groups


@contextlib.contextmanager
def mock_server_process(latency_ms: float):
    """The mock OpenAI-compatible server in its own process (as a real endpoint would be)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "probmed.inference.models.mock_server", "--port", str(port),
                             "--latency-ms", str(latency_ms)], stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/stats", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        yield url + "/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_requests(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
        return int(json.loads(resp.read())["requests"])


def rate(n: int, fn, repeats: int = 2) -> tuple[float, float]:
    """Questions/s of the best of `repeats` timed runs after one untimed warm-up run
    (first calls at each new batch shape are slow on the CPU, and the machine is shared)."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return n / best, best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--api-questions", type=int, default=96)
    p.add_argument("--max-side", type=int, default=512, help="API: longest image side sent (max_image_side)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (1: stable numbers on a shared machine; oversubscribed threads stall)")
    p.add_argument("--json", help="write the results here")
    args = p.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    q = question_set(data, args.images)
    its = items(q, data)
    n = len(its)
    out: dict[str, float] = {"questions": n, "images": args.images}
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_llava(Path(tmp) / "tiny")
        models = {
            "gen64": {"backend": "hf", "model_id": str(model_dir), "max_new_tokens": 64},
            "gen16": {"backend": "hf", "model_id": str(model_dir), "max_new_tokens": 16},
            "logits": {"backend": "hf", "model_id": str(model_dir), "mode": "logits"},
        }
        gen64, gen16, logits = (build_backend(models, k) for k in ("gen64", "gen16", "logits"))
        groups = by_image(its)
        out["generate64_qps"], _ = rate(n, lambda: [gen64.answer(g) for g in groups])
        out["logits_qps"], _ = rate(n, lambda: [logits.answer(g) for g in groups])
        # the model alone (inputs prepared beforehand): image resizing no longer hides the forward passes
        import torch

        model, _ = gen64.load()
        prepared = [gen64._inputs(g) for g in groups]
        with torch.no_grad():
            out["model_only_generate64_qps"], _ = rate(n, lambda: [model.generate(**b, max_new_tokens=64, min_new_tokens=64,
                                                                                 do_sample=False) for b in prepared])
            out["model_only_logits_qps"], _ = rate(n, lambda: [model(**b) for b in prepared])
        out["generate16_per_image_batch_qps"], _ = rate(n, lambda: [gen16.answer(g) for g in groups])
        out["generate16_one_per_call_qps"], _ = rate(n, lambda: [gen16.answer([it]) for it in its])

        # API: the same questions (repeated to --api-questions) against a 50 ms server
        api_q = q.loc[[i % n for i in range(args.api_questions)]].reset_index(drop=True)
        api_q["qid"] = [f"{qid}#{i}" for i, qid in enumerate(api_q["qid"])]
        api_q["question"] = [f"{text} (#{i})" for i, text in enumerate(api_q["question"])]
        with mock_server_process(latency_ms=50) as base_url:
            def api(conc: int):
                return {"backend": "openai", "model_id": "mock", "base_url": base_url, "api_key_env": None,
                        "concurrency": conc, "max_tokens": 8, "timeout_s": 30, "max_image_side": args.max_side}

            api_models = {"seq": api(1), "c16": api(16)}
            for name in ("seq", "c16"):
                b = build_backend(api_models, name)
                b.answer(its[:2])  # connect and warm up outside the timing
                store = Path(tmp) / f"store-{name}"
                res = run_predictions(api_q, b, "vanilla", PROMPTS, data, store, batch_size=len(api_q), progress=False)
                out[f"api_{name}_qps"] = len(api_q) / res.elapsed_s
                b.close()
            before = server_requests(base_url)
            b = build_backend(api_models, "c16")
            res = run_predictions(api_q, b, "vanilla", PROMPTS, data, Path(tmp) / "store-c16", progress=False)
            b.close()
            out["cached_rerun_requests"] = server_requests(base_url) - before
            out["cached_rerun_cached"] = res.n_cached
            out["cached_rerun_s"] = res.elapsed_s
            out["api_questions"] = len(api_q)
    out["logits_vs_generate64"] = out["logits_qps"] / out["generate64_qps"]
    out["model_only_logits_vs_generate64"] = out["model_only_logits_qps"] / out["model_only_generate64_qps"]
    out["per_image_vs_one_per_call"] = out["generate16_per_image_batch_qps"] / out["generate16_one_per_call_qps"]
    out["api_c16_vs_sequential"] = out["api_c16_qps"] / out["api_seq_qps"]
    rows = [
        ("tiny LLaVA, generation (max 64 new tokens)", f"{out['generate64_qps']:.1f} q/s"),
        ("tiny LLaVA, logit mode (one forward pass)", f"{out['logits_qps']:.1f} q/s  ({out['logits_vs_generate64']:.1f}x)"),
        ("  model only (inputs prepared), generation 64 tokens", f"{out['model_only_generate64_qps']:.1f} q/s"),
        ("  model only (inputs prepared), logit mode",
         f"{out['model_only_logits_qps']:.1f} q/s  ({out['model_only_logits_vs_generate64']:.1f}x)"),
        ("generation (16 tokens), one question per call", f"{out['generate16_one_per_call_qps']:.1f} q/s"),
        ("generation (16 tokens), questions of one image batched",
         f"{out['generate16_per_image_batch_qps']:.1f} q/s  ({out['per_image_vs_one_per_call']:.1f}x)"),
        ("API, sequential, 50 ms server", f"{out['api_seq_qps']:.1f} q/s"),
        ("API, 16-way concurrency, 50 ms server",
         f"{out['api_c16_qps']:.1f} q/s  ({out['api_c16_vs_sequential']:.1f}x, target >= 10x)"),
        ("fully cached re-run", f"{out['cached_rerun_requests']} requests, {out['cached_rerun_cached']} cached, "
                                f"{out['cached_rerun_s']:.2f} s"),
    ]
    print(f"{n} questions on {args.images} VQA-RAD images; API: {out['api_questions']} questions")
    width = max(len(r[0]) for r in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
