"""Prediction speed, measured side by side in one run on real images and generated questions.

1. The physical limit (`--realistic-images` ChestX-ray14 radiographs, the generator's questions drawn as the
   ProbMed release draws them, strategy `random`: 9.2 per image on the default 6 images, 8.3 on the 12 of
   part 2, 9.1 in the release): a randomly initialised LLaVA with LLaVA-1.5's token geometry (336 px,
   14 px patches: 576 image tokens; inference.models.tiny.REALISTIC), in logit mode and in generation (16 new tokens), three ways:
   - per question: one question per call (the image decoded, preprocessed, encoded and the whole prompt
     prefilled for every question);
   - per-image batch: the questions of one image in one padded batch (`prefix_cache: off`; the image
     encoded and the prompt prefilled once per question);
   - shared prefix: the image preprocessed and encoded and the common prefix prefilled once per image,
     the question suffixes in one pass from that cache (`prefix_cache: on`);
   questions/s, the ratios (targets: shared prefix >= 5x per-image batch in logit mode, >= 2x in
   generation), and the accounting per question: image encodes and prefill tokens. The answers of the
   three paths are compared (P(yes) within 1e-4, identical text).
2. The default tiny model (32 px, 16 image tokens), end to end from image files to answers, the same three
   ways (target: shared prefix >= 5x per question in logit mode), and a `predict` run through the answer
   store with one grouped append per image.
3. API throughput at 16-way concurrency vs sequential against a local OpenAI-compatible server adding
   50 ms latency per request (target >= 10x), and a fully cached re-run (target: 0 requests).

    python benchmarks/predict_speed.py [--data ../shared/data] [--realistic-images 6] [--images 12] [--quick]

--quick: 4 questions of one image for each model, one timed run per path, 4 new tokens, 8 API questions: every
section and check, the
targets printed but not judged (exit status 0).

Prints a table and, with --json PATH, writes the numbers. Each timing is the best of --repeats runs after
an untimed warm-up on one image (first calls at a new batch shape are slow on a CPU), by wall time and by
CPU time; the targets are judged on CPU time, which a shared machine does not inflate.
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
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from probmed.core.settings import SETTINGS  # noqa: E402
from probmed.inference.models.base import Item  # noqa: E402
from probmed.inference.models.registry import build_backend  # noqa: E402
from probmed.inference.models.tiny import REALISTIC, build_tiny_llava  # noqa: E402
from probmed.inference.predict import PredictJob, run_predictions  # noqa: E402
from probmed.inference.prompting import PromptSet  # noqa: E402

PROMPTS = PromptSet.from_params({})
VANILLA = SETTINGS["vanilla"]
PATHS = ("per question", "per-image batch", "shared prefix")
QUICK = {"realistic_images": 1, "images": 1, "repeats": 1, "api_questions": 8, "new_tokens": 4, "max_questions": 4}
CXR14_PIXELS = {"original_1024": "images", "thumbnail_256": "thumbnails_256"}  # else images_no_finding


def chestxray_questions(data: Path, n_images: int, seed: int = 0):
    """Generated questions on a seeded sample of ChestX-ray14 images, read from the raw files under `data`."""
    import random

    from probmed.benchmark.questions import generate_questions
    from probmed.benchmark.sources.chestxray14 import load_chestxray14

    res = load_chestxray14(data / "chestxray14", data / "unused", data, write_images=False)
    records = random.Random(seed).sample(list(res.records), n_images)
    for r in records:  # the raw source file stands in for the curated copy
        folder = CXR14_PIXELS.get(r.provenance["pixels"], "images_no_finding")
        r.image_path = f"chestxray14/{folder}/{r.provenance['origin']}"
    frame, _ = generate_questions(records, seed=seed, strategy="random")  # as the ProbMed release draws them
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


def rate(n: int, fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Questions/s by wall time and by CPU time (this process, one torch thread), each the best of `repeats`
    runs, and the last run's result. On a shared machine a run waits for a core for a varying while, so the
    CPU rate is the stable one; on an idle machine the two agree."""
    wall = cpu = float("inf")
    result = None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    return n / wall, n / cpu, result


def compare_paths(model_dir: Path, its: list[Item], mode: str, repeats: int, max_new_tokens: int = 16
                  ) -> dict[str, Any]:
    """The three paths on one model and mode: questions/s, accounting per question, answers compared."""
    groups = by_image(its)
    cfg = {"backend": "hf", "model_id": str(model_dir), "mode": mode, "max_new_tokens": max_new_tokens}
    backends = {name: build_backend({"m": {**cfg, "prefix_cache": pc}}, "m")
                for name, pc in zip(PATHS, ("off", "off", "on"))}
    calls = {
        "per question": lambda b: [a for it in its for a in b.answer([it])],
        "per-image batch": lambda b: [a for g in groups for a in b.answer(g)],
        "shared prefix": lambda b: [a for g in groups for a in b.answer(g)],
    }
    out: dict[str, Any] = {}
    answers = {}
    for name in PATHS:
        b = backends[name]
        b.answer(groups[0][:1] if name == "per question" else groups[0])  # warm-up, untimed
        b.counters.clear()
        runs = 1 if name == "per question" else repeats  # the slowest path, timed once
        qps, cpu_qps, answers[name] = rate(len(its), lambda b=b, name=name: calls[name](b), runs)
        stats = b.stats()
        out[name] = {"qps": qps, "cpu_qps": cpu_qps,
                     "image_encodes_per_question": stats.get("image_encodes", 0) / (runs * len(its)),
                     "prefill_tokens_per_question": stats.get("prefill_tokens", 0) / (runs * len(its))}
        b.close()
    ref = answers["per question"]
    for name in PATHS[1:]:
        got = answers[name]
        if mode == "logits":
            out[name]["max_p_yes_diff"] = max(abs(a.p_yes - r.p_yes) for a, r in zip(got, ref))
        else:
            out[name]["same_text"] = sum(a.response == r.response for a, r in zip(got, ref)) / len(ref)
    return out


def predict_run(model_dir: Path, q, root: Path, store: Path) -> tuple[float, float]:
    """Questions/s (wall, CPU) of a whole `predict` run: image hashes, store look-ups, the shared-prefix
    path, one grouped append and fsync per image."""
    backend = build_backend({"m": {"backend": "hf", "model_id": str(model_dir), "mode": "logits"}}, "m")
    backend.load()
    job = PredictJob.in_folders(VANILLA, PROMPTS, root, store)
    qps, cpu_qps, _ = rate(len(q), lambda: run_predictions(q, backend, job, progress=False), 1)
    backend.close()
    return qps, cpu_qps


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


def api_section(q, its: list[Item], data: Path, tmp: Path, n_questions: int, max_side: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = len(q)
    api_q = q.loc[[i % n for i in range(n_questions)]].reset_index(drop=True)
    api_q["qid"] = [f"{qid}#{i}" for i, qid in enumerate(api_q["qid"])]
    api_q["question"] = [f"{text} (#{i})" for i, text in enumerate(api_q["question"])]
    with mock_server_process(latency_ms=50) as base_url:
        def api(conc: int):
            return {"backend": "openai", "model_id": "mock", "base_url": base_url, "api_key_env": None,
                    "concurrency": conc, "max_tokens": 8, "timeout_s": 30, "max_image_side": max_side}

        api_models = {"seq": api(1), "c16": api(16)}
        for name in ("seq", "c16"):
            b = build_backend(api_models, name)
            b.answer(its[:2])  # connect and warm up outside the timing
            job = PredictJob.in_folders(VANILLA, PROMPTS, data, tmp / f"store-{name}", batch_size=len(api_q))
            res = run_predictions(api_q, b, job, progress=False)
            out[f"api_{name}_qps"] = len(api_q) / res.elapsed_s
            b.close()
        before = server_requests(base_url)
        b = build_backend(api_models, "c16")
        job = PredictJob.in_folders(VANILLA, PROMPTS, data, tmp / "store-c16")
        res = run_predictions(api_q, b, job, progress=False)
        b.close()
        out["cached_rerun_requests"] = server_requests(base_url) - before
        out["cached_rerun_cached"] = res.n_cached
        out["cached_rerun_s"] = res.elapsed_s
    out["api_questions"] = len(api_q)
    out["api_c16_vs_sequential"] = out["api_c16_qps"] / out["api_seq_qps"]
    return out


def gpu_estimate(accounting: dict[str, float]) -> float:
    """Questions/s of LLaVA-1.5-7B on one A100 (40% of its bf16 peak, as benchmarks/family_estimates.py) at a
    path's measured accounting: the vision tower's FLOPs times image encodes per question, plus two FLOPs
    per language-model parameter per prefill token per question (logit mode: no decoding)."""
    from family_estimates import EFFECTIVE_FLOPS, SPECS, vision_positions

    llava = next(spec for spec in SPECS if spec.family == "llava")
    vision = 2 * llava.vision_params * vision_positions(llava, REALISTIC.image_tokens)
    flops = (accounting["image_encodes_per_question"] * vision
             + 2 * llava.lm_params * accounting["prefill_tokens_per_question"])
    return EFFECTIVE_FLOPS / flops


def path_rows(title: str, res: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [(title, "")]
    base, batch = res["per question"]["cpu_qps"], res["per-image batch"]["cpu_qps"]
    for name in PATHS:
        r = res[name]
        check = ""
        if "max_p_yes_diff" in r:
            check = f"; max |dP(yes)| {r['max_p_yes_diff']:.1e}"
        elif "same_text" in r:
            check = f"; same text {100 * r['same_text']:.0f}%"
        rows.append((f"  {name}",
                     f"{r['qps']:7.1f} q/s wall, {r['cpu_qps']:7.1f} q/s CPU: x{r['cpu_qps'] / base:5.1f} vs per "
                     f"question, x{r['cpu_qps'] / batch:4.1f} vs per-image batch; per question "
                     f"{r['image_encodes_per_question']:.2f} image encodes, "
                     f"{r['prefill_tokens_per_question']:.0f} prefill tokens{check}"))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    p.add_argument("--realistic-images", type=int, default=6, help="images for the LLaVA-1.5-geometry model")
    p.add_argument("--images", type=int, default=12, help="images for the default tiny model")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--api-questions", type=int, default=96)
    p.add_argument("--max-side", type=int, default=512, help="API: longest image side sent (max_image_side)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (1: stable numbers on a shared machine; oversubscribed threads stall)")
    p.add_argument("--max-questions", type=int, default=0, help="the first N questions of each model's set (0: all)")
    p.add_argument("--new-tokens", type=int, default=16, help="tokens generated per answer in generation mode")
    p.add_argument("--skip-api", action="store_true")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--quick", action="store_true", help="one image per model, one run per path; targets not judged")
    args = p.parse_args()
    if args.quick:
        vars(args).update(QUICK)
    import torch

    torch.set_num_threads(args.threads)
    data = Path(args.data)
    q_real = chestxray_questions(data, args.realistic_images, seed=0)
    q_tiny = chestxray_questions(data, args.images, seed=1)
    if args.max_questions:
        q_real, q_tiny = q_real.head(args.max_questions), q_tiny.head(args.max_questions)
    out: dict[str, Any] = {"realistic": {"images": args.realistic_images, "questions": len(q_real)},
                           "tiny": {"images": args.images, "questions": len(q_tiny)}}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        real_dir = build_tiny_llava(tmp / "realistic", geometry=REALISTIC)
        tiny_dir = build_tiny_llava(tmp / "tiny")
        for mode in ("logits", "generate"):
            out["realistic"][mode] = compare_paths(real_dir, items(q_real, data), mode, args.repeats, args.new_tokens)
            out["tiny"][mode] = compare_paths(tiny_dir, items(q_tiny, data), mode, args.repeats, args.new_tokens)
        out["tiny"]["predict_run_qps"], out["tiny"]["predict_run_cpu_qps"] = predict_run(tiny_dir, q_tiny, data,
                                                                                          tmp / "store-tiny")
        if not args.skip_api:
            out["api"] = api_section(q_tiny, items(q_tiny, data), data, tmp, args.api_questions, args.max_side)
    real, tiny = out["realistic"], out["tiny"]
    def ratio(res: dict[str, Any], path: str, base: str, key: str) -> float:
        return res[path][key] / res[base][key]

    targets = {  # judged on CPU time, printed for wall time too
        "realistic logit: shared prefix / per-image batch >= 5": (real["logits"], "per-image batch", 5),
        "realistic generation: shared prefix / per-image batch >= 2": (real["generate"], "per-image batch", 2),
        "tiny logit, end to end: shared prefix / per question >= 5": (tiny["logits"], "per question", 5),
    }
    rows = path_rows(f"LLaVA-1.5 geometry (576 image tokens), logit mode, {real['questions']} questions on "
                     f"{real['images']} ChestX-ray14 images", real["logits"])
    real["gpu_estimate_qps"] = {name: gpu_estimate(real["logits"][name]) for name in PATHS}
    rows.append(("  GPU estimate from this accounting: LLaVA-1.5-7B, one A100 at 40% of bf16 peak, logit mode",
                 ", ".join(f"{name} {qps:.0f} q/s ({57_132 / qps / 3600:.2f} h for the release)"
                           for name, qps in real["gpu_estimate_qps"].items())))
    rows += path_rows(f"LLaVA-1.5 geometry, generation ({args.new_tokens} new tokens)", real["generate"])
    rows += path_rows(f"default tiny model (16 image tokens), end to end, logit mode, {tiny['questions']} questions "
                      f"on {tiny['images']} images", tiny["logits"])
    rows += path_rows(f"default tiny model, generation ({args.new_tokens} new tokens)", tiny["generate"])
    rows.append(("  predict run (answer store, one append per image), logit mode",
                 f"{tiny['predict_run_qps']:7.1f} q/s wall, {tiny['predict_run_cpu_qps']:7.1f} q/s CPU"))
    if "api" in out:
        api = out["api"]
        rows += [("API, sequential, 50 ms server", f"{api['api_seq_qps']:.1f} q/s"),
                 ("API, 16-way concurrency, 50 ms server",
                  f"{api['api_c16_qps']:.1f} q/s  ({api['api_c16_vs_sequential']:.1f}x, target >= 10x)"),
                 ("fully cached re-run", f"{api['cached_rerun_requests']} requests, {api['cached_rerun_cached']} "
                                         f"cached, {api['cached_rerun_s']:.2f} s")]
    width = max(len(r[0]) for r in rows if r[1])
    for name, value in rows:
        print(f"{name:<{width}}  {value}" if value else name)
    for name, (res, base, target) in targets.items():
        cpu, wall = ratio(res, "shared prefix", base, "cpu_qps"), ratio(res, "shared prefix", base, "qps")
        verdict = "quick " if args.quick else "PASS " if cpu >= target else "FAIL "
        print(verdict + f"{name}: {cpu:.1f} (CPU), {wall:.1f} (wall)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
