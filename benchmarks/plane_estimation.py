"""How reliably the brain-slice plane estimate (curation.brain_positions) tells sagittal from axial/coronal.

Prints, for the hand-labelled figshare slices (tests/fixtures/brain_planes.json, its calibration and test
parts) and for the BraTS sample (all axial by construction): how many slices of each true plane are
taken as axial/coronal (a side may be asserted) and how many stay unknown, the range of their interior
symmetry, by how much the nearest sagittal slice misses the cuts, and the time per slice. A sagittal
slice taken as axial/coronal would get a wrong hemisphere; it must not happen.

    python benchmarks/plane_estimation.py [--data ../shared/data] [--quick]

--quick: the first slices of each part only (the same estimate and table, on fewer slices).
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from collections import Counter
from pathlib import Path

from PIL import Image

from probmed.benchmark.curation.brain_positions import (
    MIRRORED,
    SYMMETRIC,
    estimate_plane,
    interior_symmetry,
    outline_symmetry,
    plane_shortfall,
)
from probmed.benchmark.curation.positions import Box

ROOT = Path(__file__).resolve().parents[1]
QUICK_SLICES = 6  # per part


def boxes(folder: Path) -> dict[Path, Box]:
    """The tumour box of every slice of a brain MRI folder (its metadata.csv), by image path."""
    with open(folder / "metadata.csv", newline="") as f:
        return {folder / row["file"]: Box(*(float(v) for v in row["finding_boxes"].split(","))) for row in csv.DictReader(f)}


def symmetries(path: Path, box: Box) -> tuple[float, float]:
    """(outline, interior) symmetry of a slice."""
    with Image.open(path) as im:
        outline = outline_symmetry(im)
        return outline.symmetry, interior_symmetry(im, outline, box)


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
    figshare, brats = Path(args.data) / "figshare-brain-tumor", Path(args.data) / "brats2015-deepmedic-sample"
    labels = json.loads((ROOT / "tests" / "fixtures" / "brain_planes.json").read_text())["labels"]
    files = [(figshare / lab["file"], lab["plane"], f"figshare {lab['part']}") for lab in labels]
    files += [(p, "axial", "BraTS (axial)") for p in sorted((brats / "images").glob("*.png"))]
    if args.quick:
        files = first_of_each_part(files, QUICK_SLICES)
    box = boxes(figshare) | boxes(brats)
    t0 = time.perf_counter()
    measured = [(part, plane, *symmetries(path, box[path])) for path, plane, part in files]
    per_slice = (time.perf_counter() - t0) / len(files)
    print(f"cuts SYMMETRIC = {SYMMETRIC} (outline), MIRRORED = {MIRRORED} (interior); {per_slice * 1000:.1f} ms per slice")
    print("| slices | true plane | taken as axial/coronal | unknown (no side) | interior symmetry |")
    print("|---|---|---|---|---|")
    for part in dict.fromkeys(m[0] for m in measured):
        for plane in ("axial", "coronal", "sagittal"):
            values = [(o, i) for p, pl, o, i in measured if p == part and pl == plane]
            if values:
                yes = sum(estimate_plane(o, i) == "axial/coronal" for o, i in values)
                n, lo, hi = len(values), min(i for _, i in values), max(i for _, i in values)
                print(f"| {part} | {plane} | {yes}/{n} ({100 * yes / n:.0f}%) | {n - yes} | {lo:.2f}-{hi:.2f} |")
    sagittal = [(o, i) for _, pl, o, i in measured if pl == "sagittal"]
    sided = sum(estimate_plane(o, i) == "axial/coronal" for o, i in sagittal)
    nearest = min(plane_shortfall(o, i) for o, i in sagittal)
    print(f"sagittal slices given a side: {sided}/{len(sagittal)}; the nearest one misses a cut by {nearest:.3f}")


if __name__ == "__main__":
    main()
