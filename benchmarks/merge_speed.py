"""Merging shard prediction tables: time against table size (it must grow linearly).

Prints, for question sets up to 200k questions (the ProbMed release has 57k) in
4 shards, the merge time and microseconds per question (flat when linear), and,
on the sizes where it finishes in seconds, the implementation it replaced
(which rebuilt the set of predicted qids once per question), measured in the
same run, as a ratio.

    python benchmarks/merge_speed.py [--quick]

--quick: two small sizes, each once (both implementations, the same figures).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from probmed.core.records import PREDICTION_COLUMNS
from probmed.inference.predict import merge_shards


def shards_for(n: int, count: int = 4, seed: int = 0) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    qids = np.array([f"q{i:07d}" for i in range(n)], dtype=object)
    frame = pd.DataFrame({c: qids if c == "qid" else "x" for c in PREDICTION_COLUMNS})
    order = np.random.default_rng(seed).permutation(n)
    return pd.DataFrame({"qid": qids}), [frame.iloc[part] for part in np.array_split(order, count)]


def replaced_merge(questions: pd.DataFrame, shard_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The merge as it was (checks of coverage rebuilt `set(frame["qid"])` per question)."""
    frame = pd.concat(shard_tables, ignore_index=True)
    known = set(questions["qid"])
    assert not [q for q in frame["qid"] if q not in known]
    assert not [q for q in questions["qid"] if q not in set(frame["qid"])]
    order = {q: i for i, q in enumerate(questions["qid"])}
    frame = frame.assign(_o=frame["qid"].map(order)).sort_values("_o").drop(columns="_o")
    return frame.reset_index(drop=True)[list(PREDICTION_COLUMNS)]


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


SIZES = (1_000, 2_000, 20_000, 57_000, 200_000)
QUICK_SIZES = (250, 500)  # the replaced merge is quadratic: 2,000 questions already take seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two small sizes, each timed once")
    args = ap.parse_args()
    repeats = 1 if args.quick else 3
    print(f"{'questions':>10} {'merge s':>9} {'us/question':>12} {'replaced s':>11} {'replaced/merge':>15}")
    for n in QUICK_SIZES if args.quick else SIZES:
        questions, shards = shards_for(n)
        merge = best_of(lambda: merge_shards(questions, shards), repeats)
        replaced = best_of(lambda: replaced_merge(questions, shards), 1) if n <= 2_000 else None
        old = f"{replaced:>11.3f} {replaced / merge:>15.0f}" if replaced is not None else f"{'-':>11} {'-':>15}"
        print(f"{n:>10} {merge:>9.3f} {merge / n * 1e6:>12.2f} {old}")


if __name__ == "__main__":
    main()
