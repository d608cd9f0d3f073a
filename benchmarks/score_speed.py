"""How fast do both scorers run on a set the size of the full ProbMed release?

Generates 6,303 images / 57,132 questions (probmed.scoring.synthetic), model-like
labels and free-text responses, then times:

* the project's scorer (vectorised; per category, per image type, exact random
  baseline, 1,000-resample bootstrap over images) and the whole `probmed score`
  computation (plus procedural diagnosis and subset robustness);
* the official-compatible scorer (one pass) on the original response format;
* a straightforward per-record Python loop for each, over the same data, which
  must give the same numbers; the ratio says what the vectorised/one-pass code buys.

Usage: python benchmarks/score_speed.py [--images N --questions N --repeat K --resamples B] [--quick]
Exit status 1 if either scorer takes 2 s or more (the target on a 2-core machine); --quick runs a small
set once (the same code paths and checks, figures printed, the target not judged).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any, Callable

import pandas as pd

from probmed.core.categories import CATEGORIES
from probmed.core.params_schema import Score
from probmed.scoring.metrics import score
from probmed.scoring.official import score_official, score_official_naive
from probmed.scoring.run import evaluate
from probmed.scoring.synthetic import (
    PROBMED_IMAGES,
    PROBMED_QUESTIONS,
    synthetic_labels,
    synthetic_questions,
    synthetic_responses,
)

TARGET_S = 2.0
QUICK = {"images": 300, "questions": 2700, "repeat": 1, "resamples": 50}  # a few seconds, every path


def naive_project(records: list[dict[str, Any]], label_by_qid: dict[str, str]) -> dict[str, Any]:
    """The straightforward reference: record by record with dictionaries, the same core
    numbers as the vectorised scorer without bootstrap (accuracy with adversarial pairs,
    averaged and ground-truth-only accuracy, refusal / unparsed / missing counts, per
    category overall and per image type)."""
    # group -> category -> accumulators; group "" is the whole set
    acc: dict[str, dict[str, dict[str, Any]]] = {}
    for r in records:
        label = label_by_qid.get(r["qid"], "missing")
        ok = label == r["answer"]
        cat = r["category"]
        if cat in ("condition", "position") and not r["qa_type"].startswith("vqarad"):
            key = r["image_id"]
        else:
            key = r["pair_id"]
        for group in ("", r["image_type"]):
            a = acc.setdefault(group, {}).setdefault(
                cat, {"units": {}, "gt": {}, "paired": [0, 0], "single": [0, 0], "refusal": 0, "unparsed": 0,
                      "missing": 0, "n": 0}
            )
            a["n"] += 1
            if label in ("refusal", "unparsed", "missing"):
                a[label] += 1
            if r["polarity"] == "single":
                a["single"][0] += ok
                a["single"][1] += 1
                continue
            a["paired"][0] += ok
            a["paired"][1] += 1
            a["units"][key] = a["units"].get(key, True) and ok
            if r["polarity"] == "gt":
                a["gt"][key] = a["gt"].get(key, True) and ok
    out: dict[str, Any] = {}
    for group, cats in acc.items():
        out[group] = {}
        for cat, a in cats.items():
            units = list(a["units"].values())
            strict = 100.0 * sum(units) / len(units) if units else (
                100.0 * a["single"][0] / a["single"][1] if a["single"][1] else None)
            out[group][cat] = {
                "accuracy_adv_pairs": strict,
                "averaged_accuracy": 100.0 * a["paired"][0] / a["paired"][1] if a["paired"][1] else None,
                "gt_only_accuracy": 100.0 * sum(a["gt"].values()) / len(units) if units else None,
                "refusal_rate": 100.0 * a["refusal"] / a["n"],
                "missing": a["missing"],
            }
    return out


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best, result = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=PROBMED_IMAGES)
    parser.add_argument("--questions", type=int, default=PROBMED_QUESTIONS)
    parser.add_argument("--repeat", type=int, default=3, help="report the best of this many runs")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the project scorer")
    parser.add_argument("--quick", action="store_true", help="a small set, run once; the target is not judged")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)

    questions = synthetic_questions(args.images, args.questions, seed=0)
    labels = synthetic_labels(questions, seed=1)
    predictions = pd.DataFrame({"qid": questions["qid"], "model": "synthetic", "setting": "vanilla", "label": labels})
    responses = [
        {"id": r.image_id, "image_type": r.image_type, "qa_type": r.qa_type, "question": r.question,
         "gt_ans": r.answer, "response": text}
        for r, text in zip(questions.itertuples(index=False), synthetic_responses(labels, seed=2))
    ]
    records = questions.to_dict("records")
    label_by_qid = dict(zip(predictions["qid"], predictions["label"]))
    print(f"set: {questions['image_id'].nunique():,} images, {len(questions):,} questions, "
          f"{questions['image_type'].nunique()} image types")

    t_proj, proj = best_of(args.repeat, lambda: score(questions, predictions, resamples=args.resamples))
    t_eval, _ = best_of(1, lambda: evaluate(questions, predictions, Score(bootstrap_resamples=args.resamples)))
    t_core, core = best_of(args.repeat, lambda: score(questions, predictions, resamples=0))
    t_proj_naive, naive = best_of(1, lambda: naive_project(records, label_by_qid))
    blocks = [(core["by_category"], naive[""])] + [(core["by_image_type"][t], naive[t]) for t in core["by_image_type"]]
    for ours, ref in blocks:
        for cat, m in ref.items():
            for key, value in m.items():
                a = ours[cat][key]
                assert (a is None and value is None) or math.isclose(a, value), (cat, key, a, value)

    t_off, off = best_of(args.repeat, lambda: score_official(responses))
    t_off_naive, off_naive = best_of(1, lambda: score_official_naive(responses))
    for cat in CATEGORIES:
        a, b = off["by_category"][cat]["acc"], off_naive[cat]["acc"]
        assert (a is None and b is None) or math.isclose(a, b), (cat, a, b)

    print(f"project scorer, all metrics + {args.resamples}-resample bootstrap per category and type: {t_proj:.3f} s")
    print(f"project scorer without the bootstrap:                                    {t_core:.3f} s")
    print(f"`probmed score` computation (+ procedural + subset robustness):          {t_eval:.3f} s")
    print(f"per-record Python loop, same numbers without the bootstrap:              {t_proj_naive:.3f} s"
          f"  (vectorised is {t_proj_naive / t_core:.1f}x faster)")
    print(f"  (the same loop repeated for a {args.resamples}-resample bootstrap would take ~"
          f"{t_proj_naive * (args.resamples + 1):.0f} s; the vectorised bootstrap costs {t_proj - t_core:.2f} s)")
    print(f"official-compatible scorer (one pass):                                   {t_off:.3f} s")
    print(f"per-record loop in the original's shape (one scan per image type):       {t_off_naive:.3f} s"
          f"  (one pass is {t_off_naive / t_off:.1f}x faster)")
    print(f"overall: project {proj['overall']['accuracy_adv_pairs_original_weighting']:.2f}% "
          f"(original weighting), official {off['overall']['acc']:.2f}%")
    if args.quick:
        print(f"quick run: the target (both scorers under {TARGET_S:.0f} s on the release's size) is judged in full mode")
        return 0
    ok = t_proj < TARGET_S and t_off < TARGET_S
    print(("PASS" if ok else "FAIL") + f": both scorers under {TARGET_S:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
