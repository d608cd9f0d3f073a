"""How reliably the brain-slice plane estimate (curation.brain_positions) tells sagittal from axial/coronal.

Prints, for the hand-labelled figshare slices (tests/fixtures/brain_planes.json, calibration and test
parts) and for the BraTS sample (all axial by construction): how many slices of each true plane are
taken as axial/coronal (a side may be asserted) and how many stay unknown, and the time per slice.
A sagittal slice taken as axial/coronal would get a wrong hemisphere; it must not happen.

    python benchmarks/plane_estimation.py [--data ../shared/data] [--quick]

--quick: the first slices of each part only (the same estimate and table, on fewer slices).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from PIL import Image

from probmed.benchmark.curation.brain_positions import (
    SYMMETRIC,
    estimate_plane,
    outline_symmetry,
)

ROOT = Path(__file__).resolve().parents[1]
QUICK_SLICES = 6  # per part


def measure(files: list[tuple[Path, str, str]]) -> dict[str, Counter]:
    out: dict[str, Counter] = {}
    for path, plane, part in files:
        with Image.open(path) as im:
            guess = estimate_plane(outline_symmetry(im))
        out.setdefault(part, Counter())[(plane, guess)] += 1
    return out


def first_of_each_part(files: list[tuple[Path, str, str]], n: int) -> list[tuple[Path, str, str]]:
    """The first ``n`` slices of each part, in order."""
    seen: Counter = Counter()
    out = []
    for f in files:
        seen[f[2]] += 1
        if seen[f[2]] <= n:
            out.append(f)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--quick", action="store_true", help=f"the first {QUICK_SLICES} slices of each part")
    args = ap.parse_args()
    data = Path(args.data)
    labels = json.loads((ROOT / "tests" / "fixtures" / "brain_planes.json").read_text())["labels"]
    files = [(data / "figshare-brain-tumor" / lab["file"], lab["plane"], f"figshare {lab['part']}") for lab in labels]
    files += [(p, "axial", "BraTS (axial)") for p in sorted((data / "brats2015-deepmedic-sample" / "images").glob("*.png"))]
    if args.quick:
        files = first_of_each_part(files, QUICK_SLICES)
    t0 = time.perf_counter()
    result = measure(files)
    per_slice = (time.perf_counter() - t0) / len(files)
    print(f"threshold SYMMETRIC = {SYMMETRIC}; {per_slice * 1000:.1f} ms per slice")
    print("| slices | true plane | taken as axial/coronal | unknown (no side) |")
    print("|---|---|---|---|")
    for part, counts in result.items():
        for plane in ("axial", "coronal", "sagittal"):
            n = sum(v for (p, _), v in counts.items() if p == plane)
            if n:
                yes = counts[(plane, "axial/coronal")]
                print(f"| {part} | {plane} | {yes}/{n} ({100 * yes / n:.0f}%) | {n - yes} |")


if __name__ == "__main__":
    main()
