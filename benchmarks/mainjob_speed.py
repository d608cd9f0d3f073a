"""Speed-ups of the main job's training and audit stages, each measured beside the code it replaced, in one run.

1. Fine-tuning data (`finetune.data.encode_examples`, stages finetune-pretrain / -adapt / -transfer): the
   image preprocessed once per image, its questions tokenised without it, vs the processor run over one
   copy of the image per question (the previous code, kept here as the baseline). Real ChestX-ray14
   radiographs, several prompts per image, the default tiny LLaVA's processor; the encoded tensors of both
   are compared (identical, or the script fails).
2. The blind baseline's fit (`inference.models.baselines.unique_rows`, stages audit and
   predict@probmed-blind-vanilla): distinct (embedding, answer) rows by bytes, then np.unique on the few
   hundred left, vs np.unique(axis=0) on every row; rows and counts compared (identical).
3. The audit's pixel statistics (`benchmark.audit.pixels.image_features`): percentiles of the uint8 grey
   levels vs of their float64 copy; compared bit for bit.
4. Stages merged (dvc.yaml): what a stage of its own costs beyond DVC's own 3-5 s, the `probmed` process.
   `probmed curate A` then `probmed curate B` (two processes, the old two stages) vs `probmed curate A B`
   (one, the one curate stage), on VQA-RAD and MedICaT; and `probmed predict` then `probmed score` vs
   `probmed predict --score-dir` (the predict stage that scores), the random model on the VQA-RAD
   adversarial set. Outputs compared byte for byte (identical, or the script fails).

    python benchmarks/mainjob_speed.py [--data ../shared/data] [--images 40] [--rows 60000] [--quick]

--quick: 6 images, 6000 rows: every section and check, in seconds (section 4 is the same in both modes). Times are CPU seconds (process time),
which a shared machine does not inflate, and wall seconds; ratios are old / new.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from probmed.finetune import data  # noqa: E402
from probmed.inference.models.baselines import unique_rows  # noqa: E402
from probmed.inference.models.tiny import build_tiny_llava  # noqa: E402
from probmed.inference.prompting import PromptSet  # noqa: E402

QUESTIONS = (
    "Is this a chest x-ray?", "Is there a nodule in the left lung?", "Is there an effusion in the right lung?",
    "Is this a ct scan?", "Does the image show the heart?",
)


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, CPU seconds, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - cpu, time.perf_counter() - wall


def encode_per_question(examples: list[data.Example], processor: Any, root: Path) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The previous encoding: the processor over one copy of the image per question (the baseline)."""
    by_image: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        by_image.setdefault(ex.image_path, []).append(i)
    out: list[Any] = [None] * len(examples)
    for idx in by_image.values():
        image = data.load_image(root, examples[idx[0]])
        texts = [data.chat_text(processor, examples[i].prompt) for i in idx]
        batch = processor(images=[image] * len(idx), text=texts, return_tensors="pt", padding=True)
        for row, i in enumerate(idx):
            out[i] = (batch["input_ids"][row][batch["attention_mask"][row].bool()], batch["pixel_values"][0])
    return out


def bench_encoding(images: list[Path], work: Path) -> None:
    from transformers import AutoProcessor

    prompts = PromptSet.from_params({})
    corpus = [prompts.question_prompt("vanilla", q) for q in QUESTIONS]
    processor = AutoProcessor.from_pretrained(build_tiny_llava(work / "tiny", corpus=corpus))
    root = images[0].parent
    examples = [data.Example(f"{p.stem}:{k}", p.stem, p.name, data.render_prompt(q, prompts), "yes")
                for p in images for k, q in enumerate(QUESTIONS)]
    old, old_cpu, old_wall = timed(lambda: encode_per_question(examples, processor, root))
    new, new_cpu, new_wall = timed(lambda: data.encode_examples(examples, processor, root))
    same = all(torch.equal(a[0], b.input_ids) and torch.equal(a[1], b.pixel_values) for a, b in zip(old, new))
    if not same or len(old) != len(new):
        sys.exit("encode_examples: the encoded tensors differ from the per-question processor's")
    print(f"fine-tuning encoding, {len(examples)} questions on {len(images)} images: identical tensors")
    print(f"  processor per question   {old_cpu:8.2f} s CPU {old_wall:8.2f} s wall")
    print(f"  image once               {new_cpu:8.2f} s CPU {new_wall:8.2f} s wall")
    print(f"  ratio old / new: CPU {old_cpu / max(new_cpu, 1e-9):.2f}, wall {old_wall / max(new_wall, 1e-9):.2f}")


def bench_unique_rows(n_rows: int, n_texts: int = 300) -> None:
    rng = np.random.default_rng(0)
    texts = rng.standard_normal((n_texts, 384)).astype(np.float32)
    pick = rng.integers(0, n_texts, n_rows)
    rows = np.concatenate([texts[pick], (pick % 2)[:, None].astype(np.float32)], axis=1)
    (u0, c0), old_cpu, old_wall = timed(lambda: np.unique(rows, axis=0, return_counts=True))
    (u1, c1), new_cpu, new_wall = timed(lambda: unique_rows(rows))
    if u0.tobytes() != u1.tobytes() or not np.array_equal(c0, c1):
        sys.exit("unique_rows: rows or counts differ from np.unique(axis=0)")
    print(f"blind fit rows, {n_rows} rows of 385 floats, {len(u0)} distinct: identical rows and counts")
    print(f"  np.unique(axis=0)        {old_cpu:8.3f} s CPU {old_wall:8.3f} s wall")
    print(f"  unique_rows              {new_cpu:8.3f} s CPU {new_wall:8.3f} s wall")
    print(f"  ratio old / new: CPU {old_cpu / max(new_cpu, 1e-9):.1f}, wall {old_wall / max(new_wall, 1e-9):.1f}")


def bench_percentiles(images: list[Path]) -> None:
    from probmed.inference.images import open_image

    greys = [np.asarray(open_image(p, p.stem).convert("L")) for p in images]
    floats = [g.astype(np.float64) for g in greys]
    old, old_cpu, _ = timed(lambda: [np.percentile(g, [1, 50, 99]) for g in floats])
    new, new_cpu, _ = timed(lambda: [np.percentile(g, [1, 50, 99]) for g in greys])
    if any(a.tobytes() != b.tobytes() for a, b in zip(old, new)):
        sys.exit("pixel percentiles: uint8 and float64 percentiles differ")
    print(f"audit grey-level percentiles, {len(images)} images: identical")
    print(f"  float64 {old_cpu:.3f} s CPU, uint8 {new_cpu:.3f} s CPU; ratio old / new: CPU {old_cpu / max(new_cpu, 1e-9):.2f}")


def child_cpu() -> float:
    """CPU seconds (user + sys) of the waited-for child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_commands(commands: list[list[str]]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of `probmed` command lines run one after another, as DVC runs stages."""
    exe = str(Path(sys.executable).with_name("probmed"))
    cpu, wall = child_cpu(), time.perf_counter()
    for argv in commands:
        proc = subprocess.run([exe, *argv], capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"probmed {' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return child_cpu() - cpu, time.perf_counter() - wall


def same_files(a: Path, b: Path) -> bool:
    """Whether two folders hold the same file names with the same bytes."""
    names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    return names == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and all(
        (a / n).read_bytes() == (b / n).read_bytes() for n in names)


def report_merge(what: str, old: tuple[float, float], new: tuple[float, float]) -> None:
    print(f"  separate processes       {old[0]:8.2f} s CPU {old[1]:8.2f} s wall")
    print(f"  one process              {new[0]:8.2f} s CPU {new[1]:8.2f} s wall")
    print(f"  {what} saved per merged stage: {old[0] - new[0]:.2f} s CPU, {old[1] - new[1]:.2f} s wall "
          "(plus DVC's own 3-5 s per stage)")
    print(f"  ratio old / new: CPU {old[0] / max(new[0], 1e-9):.2f}, wall {old[1] / max(new[1], 1e-9):.2f}")


def bench_curate_in_one(data: Path, work: Path) -> None:
    folders = {"vqarad": "vqa-rad", "medicat": "medicat-sample"}
    root = ["--image-root", str(data)]
    old = run_commands([["curate", s, "--data", str(data / f), "--out", str(work / "apart" / f"{s}.parquet"), *root]
                        for s, f in folders.items()])
    new = run_commands([["curate", *folders, f"curate.records_dir={work / 'together'}", *root,
                         *(f"curate.{s}.data={data / f}" for s, f in folders.items())]])
    if not same_files(work / "apart", work / "together"):
        sys.exit("probmed curate A B: its record tables or reports differ from those of one run per source")
    print(f"curate {' + '.join(folders)} in one process: identical record tables and reports")
    report_merge("start-up", old, new)


def bench_score_in_predict(data: Path, work: Path) -> None:
    q = work / "q" / "vqarad-adv.parquet"
    run_commands([["vqarad-adversarial", "--data", str(data / "vqa-rad"), "--image-root", str(data), "--out", str(q)]])
    predict = ["predict", "--questions", str(q), "--no-progress", "model=random", "setting=vanilla",
               f"predict.store_dir={work / 'answers'}"]
    name = ["random (vanilla)"]
    old = run_commands([[*predict, "--out", str(work / "apart.parquet")],
                        ["score", str(q), str(work / "apart.parquet"), "--out-dir", str(work / "apart"), "--name", *name]])
    new = run_commands([[*predict, "--out", str(work / "in.parquet"), "--score-dir", str(work / "in"), "--score-name", *name]])
    if not same_files(work / "apart", work / "in") or not (work / "in" / "metrics.json").is_file():
        sys.exit("probmed predict --score-dir: its score files differ from `probmed score`'s")
    print("predict + score in one process (random model, VQA-RAD adversarial set): identical score files")
    report_merge("start-up", old, new)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))
    ap.add_argument("--images", type=int, default=40)
    ap.add_argument("--rows", type=int, default=60000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n_images, n_rows = (6, 6000) if args.quick else (args.images, args.rows)
    images = sorted((Path(args.data) / "chestxray14" / "images").glob("*.png"))[:n_images]
    if not images:
        sys.exit(f"no ChestX-ray14 images under {args.data}/chestxray14/images")
    with tempfile.TemporaryDirectory() as tmp:
        bench_encoding(images, Path(tmp))
    bench_unique_rows(n_rows)
    bench_percentiles(images)
    with tempfile.TemporaryDirectory() as tmp:
        bench_curate_in_one(Path(args.data), Path(tmp))
    with tempfile.TemporaryDirectory() as tmp:
        bench_score_in_predict(Path(args.data), Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
