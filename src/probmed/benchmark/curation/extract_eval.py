"""Precision and recall of a caption extractor against hand labels, per field.

* modality, organ: a prediction of ``unknown`` counts as no prediction;
  precision = correct / predicted, recall = correct / labelled (not unknown).
* conditions: micro-averaged over (caption id, condition) pairs.
* positions: micro-averaged over (caption id, condition, position) triples
  where the position is not null.
"""

from __future__ import annotations

from typing import Any, Iterable


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
        tp = pred = gold = 0
        for lab in labels:
            guess = predictions.get(lab["id"], {}).get(fld, "unknown")
            pred += guess != "unknown"
            gold += lab[fld] != "unknown"
            tp += guess != "unknown" and guess == lab[fld]
        out[fld] = _pr(tp, pred, gold)
    gold_c = {(l["id"], f["condition"]) for l in labels for f in l["findings"]}
    pred_c = {(l["id"], f["condition"]) for l in labels for f in predictions.get(l["id"], {}).get("findings", [])}
    out["condition"] = _pr(len(gold_c & pred_c), len(pred_c), len(gold_c))
    gold_p = {(l["id"], f["condition"], f["position"]) for l in labels for f in l["findings"] if f["position"]}
    pred_p = {(l["id"], f["condition"], f["position"]) for l in labels for f in predictions.get(l["id"], {}).get("findings", []) if f.get("position")}
    out["position"] = _pr(len(gold_p & pred_p), len(pred_p), len(gold_p))
    out["captions"] = len(labels)
    return out
