"""`probmed audit` on generated and imported sets: text-only baselines, truth, lint, leaks, the gate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probmed.benchmark.audit import gate, run_audit
from probmed.benchmark.audit.oracle import OracleSettings, normalise_text, oracle_votes
from probmed.benchmark.audit.pixels import pixel_leak
from probmed.benchmark.audit.report import audit_markdown, headline_metrics
from probmed.benchmark.audit.scores import blind_scores, fixed_policies, oracle_scores
from probmed.benchmark.questions import generate_questions
from probmed.benchmark.sources.vqarad import load_vqarad
from probmed.cli import main
from probmed.core.params_schema import Audit
from probmed.core.records import (
    PREDICTION_COLUMNS,
    write_image_records,
    write_predictions,
)
from probmed.core.release_format import write_question_file


@pytest.fixture(scope="module")
def vqarad_records(shared_data: Path, repo_root: Path):
    return load_vqarad(shared_data / "vqa-rad", shared_data).records


@pytest.fixture(scope="module")
def popular(vqarad_records) -> pd.DataFrame:
    """POPE's popular strategy: every image asked about the most common values, texts unbalanced."""
    return generate_questions(vqarad_records, seed=0, strategy="popular")[0]


def test_normalised_text() -> None:
    assert normalise_text("Is this an X-ray image?") == "is this an x ray image"
    assert normalise_text("  is THIS an x-ray   image") == "is this an x ray image"


def test_oracle_learns_leaks_only_from_other_images(popular) -> None:
    votes = oracle_votes(popular, OracleSettings())
    organ = (popular.category == "organ").to_numpy()
    assert (votes[organ] == -1).mean() > 0.45  # the adversary texts (brain, always "no") are read from the text alone
    scores = oracle_scores(popular, OracleSettings())
    assert scores["by_category"]["organ"]["accuracy"] > 45 > 25 == scores["by_category"]["organ"]["random"]
    # a text seen on one image only is guessed: the oracle never reads the held-out image's own answers
    one = pd.DataFrame({"qid": ["a", "b"], "image_id": ["i1", "i1"], "question": ["Is x?", "Is y?"], "answer": ["yes", "no"],
                        "category": "modality", "polarity": ["gt", "adversarial"], "pair_id": "i1:m", "qa_type": ["modality_gt", "modality_hallu"],
                        "image_type": "X-ray - Chest"})
    assert list(oracle_votes(one, OracleSettings())) == [0, 0]
    assert oracle_scores(one, OracleSettings())["by_category"]["modality"]["accuracy"] == 25.0


def test_blind_scored_by_its_probabilities(popular) -> None:
    certain = np.where(popular["answer"] == "yes", 1.0, 0.0)
    assert blind_scores(popular, certain)["overall"]["accuracy"] == pytest.approx(100.0)
    coin = blind_scores(popular, np.full(len(popular), 0.5))
    for cat, m in coin["by_category"].items():
        assert m["accuracy"] == pytest.approx(m["random"]), cat  # a coin is exactly the random baseline
    assert coin["argmax"]["by_category"]["modality"] == 0.0  # p = 0.5 thresholded is always-yes: 0 strict



def _modality_pairs(n_xray: int, n_ct: int) -> pd.DataFrame:
    """Modality pairs only: each X-ray image asked 'CT?' as its twin and each CT image 'X-ray?'."""
    rows = []
    for k in range(n_xray + n_ct):
        true, other = ("an X-ray", "a CT scan") if k < n_xray else ("a CT scan", "an X-ray")
        for pol, text, ans in (("gt", true, "yes"), ("adversarial", other, "no")):
            rows.append({"qid": f"q{k}{pol[0]}", "image_id": f"i{k}", "question": f"Is this {text} image?", "answer": ans,
                         "category": "modality", "polarity": pol, "pair_id": f"i{k}:m", "qa_type": f"modality_{pol}",
                         "image_type": "X-ray - Chest" if k < n_xray else "CT Scan - Chest"})
    return pd.DataFrame(rows)


def test_fixed_policy_bounds_text_only_models_by_the_pair_structure(vqarad_records) -> None:
    # every text answered yes exactly as often as no: the oracle has nothing, yet "CT? yes, X-ray? no" gets every CT image
    balanced = _modality_pairs(20, 20)
    assert oracle_scores(balanced, OracleSettings())["by_category"]["modality"]["accuracy"] == pytest.approx(25.0)
    fixed = fixed_policies(balanced)["by_category"]["modality"]
    assert fixed["accuracy"] == pytest.approx(50.0) and fixed["random"] == 25.0
    assert sorted(fixed["policy"].values()) == ["no", "yes"]
    # a leaking set: X-ray on 30 of 40 images, "X-ray? yes, CT? no" gets those 30
    assert fixed_policies(_modality_pairs(30, 10))["by_category"]["modality"]["accuracy"] == pytest.approx(75.0)
    # too many texts for every choice: not computed rather than fitted to the set's noise
    audit = run_audit(generate_questions(vqarad_records, seed=0)[0], vqarad_records, None, Audit())
    condition = audit["fixed_policy"]["by_category"]["condition"]
    assert condition["texts"] > 8 and condition["accuracy"] is None
    organ = audit["fixed_policy"]["by_category"]["organ"]
    assert organ["accuracy"] >= organ["random"]  # the best of all choices is never below their average
    assert "Upper bound on a text-only model" in audit_markdown(audit)
    cell = next(c for c in audit["blind_ceiling"]["cells"] if c["category"] == "organ" and c["unit"] == "pair")
    assert headline_metrics(audit)["audit_ceiling_pair_organ"] == pytest.approx(cell["ceiling"], abs=1e-3)

def test_gate_fails_on_a_deliberately_unbalanced_set(popular, vqarad_records) -> None:
    audit = run_audit(popular, vqarad_records, None, Audit())
    result = gate(audit, 5.0, True)
    assert not result.passed and result.enforced
    assert any(f.startswith("organ: the text-only oracle scores") for f in result.failures)
    balanced = generate_questions(vqarad_records, seed=0)[0]
    ok = gate(run_audit(balanced, vqarad_records, None, Audit()), 5.0, True)
    assert ok.passed, ok.failures


def test_audit_of_an_imported_original_format_file(popular, vqarad_records, tmp_path: Path, repo_root: Path) -> None:
    path = tmp_path / "test.json"
    write_question_file(popular, path)  # the original release's question-file format
    out = tmp_path / "audit"
    assert main(["audit", str(path), "--out-dir", str(out), "--no-pixels", "--params", str(repo_root / "params.yaml")]) == 0
    audit = json.loads((out / "audit.json").read_text())
    assert audit["meta"]["questions"] == len(popular)  # audited as it is, never rebalanced
    assert audit["contradictions"]["checked"] is False  # no records given
    assert audit["gate"]["passed"] is False
    assert audit["oracle"]["overall"]["accuracy"] - audit["oracle"]["overall"]["random"] > 5
    assert {"texts", "duplicates", "evidence", "lint", "image_mix"} <= set(audit)
    md = (out / "audit.md").read_text()
    assert "## Text-only baselines" in md and "Not checked: no image records" in md and "Gate: FAILED" in md
    headline = json.loads((out / "metrics.json").read_text())
    assert headline["audit_oracle_margin_overall"] > 5 and "audit_lint_findings" in headline
    # with the records the same file's "no" answers are checked too; --strict turns the failed gate into exit 1
    write_image_records(vqarad_records, tmp_path / "v.parquet")
    rc = main(["audit", str(path), "--records", str(tmp_path / "v.parquet"), "--out-dir", str(out), "--no-pixels",
               "--strict", "--params", str(repo_root / "params.yaml")])
    assert rc == 1
    checked = json.loads((out / "audit.json").read_text())["contradictions"]
    assert checked["checked"] and checked["count"] == 0 and checked["unmatched_images"] == 0


def test_blind_predictions_file(popular, tmp_path: Path, repo_root: Path) -> None:
    preds = pd.DataFrame({c: [""] * len(popular) for c in PREDICTION_COLUMNS})
    preds["qid"] = popular["qid"].to_numpy()
    preds["label"] = "yes"
    preds["p_yes"] = 0.5
    for c in ("latency_s", "cost_usd"):
        preds[c] = 0.0
    for c in ("prompt_tokens", "completion_tokens"):
        preds[c] = 0
    write_predictions(preds, tmp_path / "blind.parquet")
    q = tmp_path / "q.parquet"
    popular.to_parquet(q)
    out = tmp_path / "a"
    assert main(["audit", str(q), "--blind-predictions", str(tmp_path / "blind.parquet"), "--out-dir", str(out), "--no-pixels",
                 "--params", str(repo_root / "params.yaml")]) == 0
    audit = json.loads((out / "audit.json").read_text())
    assert audit["blind"]["overall"]["accuracy"] == pytest.approx(audit["blind"]["overall"]["random"])
    preds.iloc[:3].to_parquet(tmp_path / "few.parquet")
    assert main(["audit", str(q), "--blind-predictions", str(tmp_path / "few.parquet"), "--out-dir", str(out), "--no-pixels",
                 "--params", str(repo_root / "params.yaml")]) == 2  # missing predictions: a clear error


def test_pixel_statistics_find_the_chestxray14_format_leak(shared_data: Path) -> None:
    """Raw ChestX-ray14 copies: normals are 1024 px JPEG re-encodes, abnormal images 256 px PNG thumbnails."""
    d = shared_data / "chestxray14"
    normal = sorted((d / "images_no_finding").glob("*.jpg"))[:20]
    abnormal = sorted((d / "thumbnails_256").glob("*.png"))[:20]
    items = [(p.stem, "X-ray - Chest", p, False) for p in normal] + [(p.stem, "X-ray - Chest", p, True) for p in abnormal]
    leak = pixel_leak(items, folds=5)["X-ray - Chest"]
    assert leak["normal"] == leak["abnormal"] == 20
    assert leak["auc"] > 0.95 and leak["storage_auc"] > 0.95 and leak["top_feature_auc"] == pytest.approx(1.0)
    few = pixel_leak(items[:25])["X-ray - Chest"]
    assert few["auc"] is None and "fewer than" in few["note"]


def test_audit_command_never_imports_torch(popular, tmp_path: Path, repo_root: Path) -> None:
    q = tmp_path / "q.parquet"
    popular.to_parquet(q)
    code = (
        "import sys; from probmed.cli import main; "
        f"rc = main(['audit', {str(q)!r}, '--no-pixels', '--out-dir', {str(tmp_path / 'o')!r}, '--params', {str(repo_root / 'params.yaml')!r}]); "
        "assert rc == 0; bad = [m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root)
    assert res.returncode == 0, res.stdout + res.stderr


def test_curated_images_carry_no_storage_leak(shared_data: Path, tmp_path: Path) -> None:
    """The same raw files after curation (grayscale, 256 px, one filter, PNG): storage statistics separate nothing."""
    from probmed.benchmark.curation.images import normalise_many

    d = shared_data / "chestxray14"
    raw = [(p, False) for p in sorted((d / "images_no_finding").glob("*.jpg"))[:12]]
    raw += [(p, True) for p in sorted((d / "thumbnails_256").glob("*.png"))[:12]]
    pairs = [(p, tmp_path / f"{k}.png") for k, (p, _) in enumerate(raw)]
    assert not normalise_many(pairs, tmp_path, size=256, resample="lanczos", workers=1)
    items = [(str(k), "X-ray - Chest", dst, label) for k, ((_, label), (_, dst)) in enumerate(zip(raw, pairs))]
    assert pixel_leak(items, folds=4)["X-ray - Chest"]["storage_auc"] == 0.5
