"""`probmed export-responses --format lmms-eval`: lmms-eval's per-sample JSONL, in the release's doc order."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from probmed.cli import main
from probmed.core.params_schema import Release
from probmed.core.records import PREDICTION_COLUMNS, write_predictions
from probmed.release.harness.strict_pairs import strict_scores
from probmed.scoring.metrics import score

VERSION = Release().version  # the configured release version (params.yaml release.version)


def test_export_follows_the_release_order_and_scores_like_probmed(small_set, repo_root, tmp_path):
    import datasets

    q = small_set["frame"]
    rng = np.random.default_rng(0)
    responses = rng.choice(["Yes.", "No, there is none.", "I cannot determine this."], size=len(q))
    preds = pd.DataFrame({c: "" for c in PREDICTION_COLUMNS}, index=range(len(q))).assign(
        qid=q["qid"], model="m", setting="vanilla", response=responses, label="unparsed", p_yes=np.nan)
    write_predictions(preds, tmp_path / "p.parquet")
    out_dir, log = tmp_path / "rel", tmp_path / "samples.jsonl"
    params = ["--params", str(repo_root / "params.yaml")]
    assert main(["release", str(small_set["questions"]), "--out-dir", str(out_dir), "--image-root",
                 str(small_set["image_root"]), "--audit", str(small_set["passing_audit"]), *params]) == 0
    assert main(["export-responses", str(small_set["questions"]), str(tmp_path / "p.parquet"), "--out", str(log),
                 "--format", "lmms-eval", *params]) == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    ds = datasets.load_dataset(str(out_dir / "small" / VERSION), split="test", cache_dir=str(tmp_path / "hf"))
    assert [r["doc"]["qid"] for r in records] == ds["qid"] and [r["doc_id"] for r in records] == list(range(len(q)))
    first = records[0]
    assert set(first) >= {"doc_id", "doc", "target", "resps", "filtered_resps", "doc_hash", "strict_overall"}
    assert first["doc_hash"] == hashlib.sha256(json.dumps(first["doc"], indent=2, ensure_ascii=False).encode()).hexdigest()
    assert first["target"] == first["doc"]["answer"] and first["resps"] == [first["filtered_resps"]]
    assert first["arguments"][0].startswith(first["doc"]["question"] + " ")
    from probmed.core.answer_parser import parse_answer

    labels = pd.DataFrame({"qid": q["qid"], "label": [parse_answer(r) for r in responses]})
    expected = score(q, labels, resamples=0, by_image_type=False)
    got = strict_scores([r["strict_overall"] for r in records])
    assert got["overall"] == expected["overall"]["accuracy_adv_pairs_original_weighting"]
