"""Extraction quality against hand labels, per field, and the goals a caption extractor must meet.

* modality, organ: **accuracy** over every labelled caption (``unknown`` is a value: a caption
  whose technique is not stated or ambiguous must come out ``unknown``), plus precision/recall
  where ``unknown`` counts as no prediction;
* conditions: micro-averaged over (caption id, condition) pairs;
* positions: micro-averaged over (caption id, condition, position) triples with a position.

The labelled set of ``roco-images`` captions (tests/fixtures/roco_images_caption_labels.json) has a
``dev`` part (rules may be improved by looking at its errors) and a ``heldout`` part (measured only);
both are reported.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Callable, Iterable

from probmed.core.markdown import markdown_table

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
    gold_c = {(l["id"], f["condition"]) for l in labels for f in l["findings"]}
    pred_c = {(l["id"], f["condition"]) for l in labels for f in predictions.get(l["id"], {}).get("findings", [])}
    out["condition"] = _pr(len(gold_c & pred_c), len(pred_c), len(gold_c))
    gold_p = {(l["id"], f["condition"], f["position"]) for l in labels for f in l["findings"] if f["position"]}
    pred_p = {(l["id"], f["condition"], f["position"]) for l in labels for f in predictions.get(l["id"], {}).get("findings", []) if f.get("position")}
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


def score_labelled_set(
    labels_path: str | Path, captions: dict[str, str], extractor: Callable[[str, str], Any]
) -> dict[str, dict[str, Any]]:
    """Scores of an extractor on each part of a labelled set ("dev", "heldout") and on all of it."""
    labels = json.loads(Path(labels_path).read_text(encoding="utf-8"))["labels"]
    missing = [l["id"] for l in labels if l["id"] not in captions]
    if missing:
        raise KeyError(f"{labels_path}: {len(missing)} labelled caption(s) not in the caption table, e.g. {missing[:3]}")
    preds = {l["id"]: extractor(l["id"], captions[l["id"]]).to_json() for l in labels}
    parts = {part: [l for l in labels if l.get("part") == part] for part in ("dev", "heldout")}
    parts["all"] = labels
    return {part: evaluate(rows, preds) for part, rows in parts.items() if rows}


def scores_markdown(scores: dict[str, dict[str, Any]]) -> str:
    """The README table: one row per part, the goals in the header."""
    head = ["part", "captions", "modality acc (>= 0.95)", "organ acc (>= 0.90)", "condition P (>= 0.90)",
            "condition R (>= 0.70)", "position P (>= 0.80)", "position R (>= 0.50)"]
    rows = []
    for part, s in scores.items():
        rows.append([part, s["captions"], s["modality"]["accuracy"], s["organ"]["accuracy"],
                     s["condition"]["precision"], s["condition"]["recall"],
                     s["position"]["precision"], s["position"]["recall"]])
    import pandas as pd

    return markdown_table(pd.DataFrame(rows, columns=head), cell=lambda v: f"{v:.3f}" if isinstance(v, float) else str(v))
