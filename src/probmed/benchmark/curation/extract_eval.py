"""Extraction quality against hand labels, per field, and the goals a caption extractor must meet.

* modality, organ: **accuracy** over every labelled caption (``unknown`` is a value: a caption
  whose technique is not stated or ambiguous must come out ``unknown``), plus precision/recall
  where ``unknown`` counts as no prediction;
* conditions: micro-averaged over (caption id, condition) pairs;
* positions: micro-averaged over (caption id, condition, position) triples with a position.

Precision of modality and organ is the rules' precision when they claim one (``unknown`` is an
abstention): a wrong organ makes a false "no", an abstention only a left-out figure.

Two labelled sets (``LABELLED_SETS``), each with a ``dev`` part (rules may be improved by looking at its
errors) and a ``heldout`` part (measured only), both reported (the roco-extended set also has a ``dev2`` part, a
second development sample): the ``roco-images`` captions
(tests/fixtures/roco_images_caption_labels.json, read in the paper's profile) and the ``roco-extended``
captions (tests/fixtures/roco_extended_caption_labels.json, read in the extended profile; their labels
name a fine body region, mapped to the organ by curation/tables/organ_regions.csv, and a region the
labeller marks as not claimable from the caption alone is ``unknown``: the rules should abstain).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from probmed.benchmark.curation.profiles import EXTENDED, PAPER, Profile
from probmed.benchmark.curation.tables import organ_regions
from probmed.core.markdown import markdown_table


@dataclass(frozen=True)
class LabelledSet:
    """Hand labels, the caption table they label (relative to the data folder) and the profile they are read in."""

    labels: str
    captions: str
    profile: Profile


LABELLED_SETS: dict[str, LabelledSet] = {
    "roco-images": LabelledSet("tests/fixtures/roco_images_caption_labels.json", "roco-images/metadata.csv", PAPER),
    "roco-extended": LabelledSet("tests/fixtures/roco_extended_caption_labels.json", "roco-extended/metadata.csv",
                                 EXTENDED),
}

# The parts of a labelled set: "dev" and "dev2" (a second development sample, labelled after the rules were
# tuned on "dev", so that its first score estimates generalisation) may be studied; "heldout" is only measured.
PARTS: tuple[str, ...] = ("dev", "dev2", "heldout")

# The goals: every part of the labelled set must meet them.
GOALS: dict[tuple[str, str], float] = {
    ("modality", "accuracy"): 0.95,
    ("organ", "accuracy"): 0.90,
    ("condition", "precision"): 0.90,
    ("condition", "recall"): 0.70,
    ("position", "precision"): 0.80,
    ("position", "recall"): 0.50,
}


def _pr(tp: int, pred: int, gold: int) -> dict[str, Any]:
    p = tp / pred if pred else None
    r = tp / gold if gold else None
    f1 = 2 * p * r / (p + r) if p and r else 0.0 if p is not None and r is not None else None
    return {"precision": None if p is None else round(p, 4), "recall": None if r is None else round(r, 4),
            "f1": None if f1 is None else round(f1, 4), "tp": tp, "predicted": pred, "labelled": gold}


def evaluate(labels: Iterable[dict[str, Any]], predictions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per-field scores; a label id without a prediction counts as predicting nothing."""
    out: dict[str, Any] = {}
    labels = list(labels)
    for fld in ("modality", "organ"):
        tp = pred = gold = right = 0
        for lab in labels:
            guess = predictions.get(lab["id"], {}).get(fld, "unknown")
            pred += guess != "unknown"
            gold += lab[fld] != "unknown"
            tp += guess != "unknown" and guess == lab[fld]
            right += guess == lab[fld]
        out[fld] = {**_pr(tp, pred, gold), "accuracy": round(right / len(labels), 4) if labels else None}
    gold_c = {(lab["id"], f["condition"]) for lab in labels for f in lab["findings"]}
    pred_c = {(lab["id"], f["condition"]) for lab in labels for f in predictions.get(lab["id"], {}).get("findings", [])}
    out["condition"] = _pr(len(gold_c & pred_c), len(pred_c), len(gold_c))
    gold_p = {(lab["id"], f["condition"], f["position"]) for lab in labels for f in lab["findings"] if f["position"]}
    pred_p = {(lab["id"], f["condition"], f["position"]) for lab in labels for f in predictions.get(lab["id"], {}).get("findings", []) if f.get("position")}
    out["position"] = _pr(len(gold_p & pred_p), len(pred_p), len(gold_p))
    out["captions"] = len(labels)
    return out


def missed_goals(scores: dict[str, Any]) -> list[str]:
    """The goals a part's scores miss, as readable lines (empty when all are met)."""
    misses = []
    for (fld, metric), goal in GOALS.items():
        value = scores[fld].get(metric)
        if value is None or value < goal:
            misses.append(f"{fld} {metric} {value} < {goal}")
    return misses


def read_roco_captions(metadata_csv: str | Path) -> dict[str, str]:
    """roco_id -> caption from roco-images/metadata.csv."""
    with open(metadata_csv, newline="", encoding="utf-8") as fh:
        return {row["roco_id"]: row["caption"] for row in csv.DictReader(fh)}


def label_organ(label: dict[str, Any]) -> str:
    """The organ a label expects: its ``organ``, or its fine ``region``'s organ (``unknown`` when not claimable)."""
    if "organ" in label:
        return str(label["organ"])
    return organ_regions().get(label["region"], "other") if label.get("organ_claimable", True) else "unknown"


def read_labels(labels_path: str | Path) -> list[dict[str, Any]]:
    """The labels of a labelled set, each with the organ it expects."""
    labels = json.loads(Path(labels_path).read_text(encoding="utf-8"))["labels"]
    return [{**label, "organ": label_organ(label)} for label in labels]


def score_labelled_set(
    labels_path: str | Path, captions: dict[str, str], extractor: Callable[[str, str], Any]
) -> dict[str, dict[str, Any]]:
    """Scores of an extractor on each part of a labelled set (``PARTS``) and on all of it."""
    labels = read_labels(labels_path)
    missing = [lab["id"] for lab in labels if lab["id"] not in captions]
    if missing:
        raise KeyError(f"{labels_path}: {len(missing)} labelled caption(s) not in the caption table, e.g. {missing[:3]}")
    preds = {lab["id"]: extractor(lab["id"], captions[lab["id"]]).to_json() for lab in labels}
    parts = {part: [lab for lab in labels if lab.get("part") == part] for part in PARTS}
    parts["all"] = labels
    return {part: evaluate(rows, preds) for part, rows in parts.items() if rows}


def scores_markdown(scores: dict[str, dict[str, Any]]) -> str:
    """The extraction-quality table (docs/benchmark/extraction.md): one row per part, the goals in the header."""
    head = ["part", "captions", "modality acc (>= 0.95)", "organ acc (>= 0.90)", "condition P (>= 0.90)",
            "condition R (>= 0.70)", "position P (>= 0.80)", "position R (>= 0.50)",
            "modality P when claimed", "organ P when claimed"]
    rows = []
    for part, s in scores.items():
        rows.append([part, s["captions"], s["modality"]["accuracy"], s["organ"]["accuracy"],
                     s["condition"]["precision"], s["condition"]["recall"],
                     s["position"]["precision"], s["position"]["recall"],
                     s["modality"]["precision"], s["organ"]["precision"]])
    import pandas as pd

    return markdown_table(pd.DataFrame(rows, columns=head), cell=lambda v: f"{v:.3f}" if isinstance(v, float) else str(v))
