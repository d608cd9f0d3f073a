"""Question generation speed for 100,000 image records (target: under 30 s).

Records are synthetic but shaped like the real ones: ChestX-ray14-like chest
X-rays (70 %: 1-3 boxed findings with positions, known-absent labels; or
normal) and CT/MRI brain/abdomen/spine records with caption-like findings.
Usage: python benchmarks/generate_speed.py [N] [--strategy random|popular|adversarial]
"""

from __future__ import annotations

import argparse
import random
import time

from probmed.benchmark.curation.vocabularies import CONDITIONS_BY_ORGAN, CXR14_CONDITIONS, CXR_POSITIONS, POSITIONS_BY_ORGAN
from probmed.benchmark.questions import generate_questions
from probmed.core.records import Finding, ImageRecord, validate_question_frame


def synthetic_records(n: int, seed: int = 0) -> list[ImageRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if rng.random() < 0.7:
            abnormal = rng.random() < 0.85
            conds = rng.sample(CXR14_CONDITIONS, rng.randint(1, 3)) if abnormal else []
            findings = [Finding(c, rng.choice(CXR_POSITIONS) if rng.random() < 0.7 else None) for c in conds]
            absent = [c for c in CXR14_CONDITIONS if c not in conds]
            out.append(ImageRecord(f"syn-{i}", "ChestX-ray14", "x-ray", "chest", abnormal, findings, absent, f"img/{i}.png"))
        else:
            organ = rng.choice(["brain", "abdomen", "spine"])
            conds = rng.sample(CONDITIONS_BY_ORGAN[organ], rng.randint(0, 2))
            findings = [Finding(c, rng.choice(POSITIONS_BY_ORGAN[organ]) if rng.random() < 0.5 else None) for c in conds]
            out.append(ImageRecord(f"syn-{i}", "MedICaT", rng.choice(["ct", "mri"]), organ, bool(conds) or None, findings, [], f"img/{i}.png"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=100_000)
    ap.add_argument("--strategy", default="random")
    args = ap.parse_args()
    records = synthetic_records(args.n)
    t0 = time.perf_counter()
    frame, report = generate_questions(records, seed=0, strategy=args.strategy)
    gen = time.perf_counter() - t0
    validate_question_frame(frame)
    print(f"{args.n} image records -> {len(frame)} questions ({args.strategy}) in {gen:.2f} s "
          f"({len(frame) / gen:,.0f} questions/s); target < 30 s: {'OK' if gen < 30 else 'TOO SLOW'}")


if __name__ == "__main__":
    main()
