"""The blind ceiling on small tables whose best fixed answer per text can be worked out by hand, and the gate on it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from probmed.benchmark.audit import gate, run_audit
from probmed.benchmark.audit.blind_ceiling import blind_ceiling, blind_ceilings, ceiling_failures, pair_floor
from probmed.benchmark.audit.oracle import image_fold
from probmed.benchmark.audit.report import audit_markdown, headline_metrics
from probmed.core.params_schema import Audit

XRAY, CT, MRI = "Is this an X-ray image?", "Is this a CT image?", "Is this an MRI image?"


def _pair_rows(image_id: str, image_type: str, yes_text: str, no_text: str) -> list[dict]:
    base = {"image_id": image_id, "image_type": image_type, "category": "modality", "qa_type": "modality",
            "pair_id": f"{image_id}:modality", "image_path": f"{image_id}.png", "source": "test", "strategy": "balanced",
            "licence": "CC0"}
    return [{**base, "qid": f"{image_id}-gt", "question": yes_text, "answer": "yes", "polarity": "gt", "evidence": "gt",
             "entity": yes_text.split()[3]},
            {**base, "qid": f"{image_id}-adv", "question": no_text, "answer": "no", "polarity": "adv",
             "evidence": "known_absent", "entity": no_text.split()[3]}]


def _modality_set(copies: dict[tuple[str, str, str], int]) -> pd.DataFrame:
    rows = []
    for (itype, yes_text, no_text), n in copies.items():
        for i in range(n):
            rows += _pair_rows(f"{itype}-{yes_text[8:11]}-{no_text[8:11]}-{i}", itype, yes_text, no_text)
    return pd.DataFrame(rows)


# Four pair patterns; every text is answered yes exactly as often as no when each pattern has the same count.
A, B, C, D = ("x-ray", XRAY, CT), ("x-ray", XRAY, MRI), ("ct", CT, XRAY), ("mri", MRI, XRAY)


def test_a_balanced_set_with_a_fixed_winner_has_a_ceiling_of_half_its_pairs():
    """"X-ray? yes, others no" wins patterns A and B (half the pairs); no policy wins more; random wins a quarter."""
    ceiling = blind_ceiling(_modality_set({A: 1, B: 1, C: 1, D: 1}))
    entry = ceiling["by_category"]["modality"]
    assert (entry["units"], entry["keys"], entry["random"], entry["in_sample"]) == (4, 3, 25.0, 50.0)


def test_the_cross_fitted_ceiling_is_what_a_policy_learnt_on_other_images_scores():
    """30 copies of A make "X-ray? yes, CT? no, MRI? no" the only best policy in every training fold: it is right on
    A and B (40 of 60 pairs) and wrong on C and D, so held out it scores 66.7% against 25% random."""
    ceiling = blind_ceiling(_modality_set({A: 30, B: 10, C: 10, D: 10}))
    entry = ceiling["by_category"]["modality"]
    assert entry["cross_fitted"] == pytest.approx(200 / 3) and entry["in_sample"] == pytest.approx(200 / 3)
    assert entry["random"] == 25.0
    assert ceiling["by_image_type"]["x-ray"]["modality"]["cross_fitted"] == 100.0
    assert ceiling["by_image_type"]["ct"]["modality"]["cross_fitted"] == 0.0
    failures = ceiling_failures(ceiling, max_margin=5.0)
    assert any(f.startswith("modality: a blind fixed answer per text") and "66.7% strict" in f for f in failures)
    assert any(f.startswith("overall:") for f in failures)


def _balanced_abnormality_set(per_fold: int = 2, folds: int = 5) -> pd.DataFrame:
    """Single abnormality questions, each text yes and no equally often in every fold: no fixed answer wins."""
    rows, wanted = [], {(k, a): per_fold for k in range(folds) for a in ("yes", "no")}
    i = 0
    while any(wanted.values()):
        image_id = f"img{i:04d}"
        i += 1
        fold = image_fold(image_id, folds)
        answer = "yes" if wanted[(fold, "yes")] else "no"
        if not wanted[(fold, answer)]:
            continue
        wanted[(fold, answer)] -= 1
        rows.append({"image_id": image_id, "image_type": "ct/abdomen", "category": "abnormality", "qa_type": "abnormality",
                     "pair_id": f"{image_id}:abnormality", "image_path": f"{image_id}.png", "qid": image_id,
                     "question": "Is there any abnormality in this image?", "answer": answer, "polarity": "single"})
    return pd.DataFrame(rows)


def test_a_set_without_a_fixed_winner_sits_at_random_and_passes_the_gate():
    ceiling = blind_ceiling(_balanced_abnormality_set())
    entry = ceiling["by_category"]["abnormality"]
    assert (entry["units"], entry["random"], entry["cross_fitted"], entry["in_sample"]) == (20, 50.0, 50.0, 50.0)
    assert ceiling_failures(ceiling, max_margin=5.0) == []


def test_the_type_keyed_ceiling_gates_condition_and_position_only():
    ceiling = {"folds": 5, "overall": {"random": 30.0, "cross_fitted": 31.0, "type_keyed": 60.0},
               "by_category": {"organ": {"random": 25.0, "cross_fitted": 26.0, "type_keyed": 70.0},
                               "condition": {"random": 26.1, "cross_fitted": 28.0, "type_keyed": 47.0}}}
    failures = ceiling_failures(ceiling, max_margin=5.0)
    assert len(failures) == 1 and failures[0].startswith("condition: a blind fixed answer per (image type, text)")
    assert "20.9 points above exact random (26.1%" in failures[0]


def test_the_pair_floor_is_what_any_design_of_n_values_leaves_to_a_fixed_policy():
    assert [round(pair_floor(n), 2) for n in (2, 3, 4, 5)] == [50.0, 33.33, 33.33, 30.0]
    assert pair_floor(1) is None
    entry = blind_ceiling(_modality_set({A: 1, B: 1, C: 1, D: 1}))["by_category"]["modality"]
    assert entry["floor"] == pytest.approx(100 / 3) and entry["in_sample"] >= entry["floor"]


def _condition_row(image_id: str, image_type: str, text: str, answer: str, contrast_id: str | None) -> dict:
    return {"qid": f"{image_id}-{answer}", "image_id": image_id, "image_type": image_type, "category": "condition",
            "qa_type": "entity_gt_0" if answer == "yes" else "entity_hallu_0", "pair_id": f"{image_id}:entity_0",
            "polarity": "gt" if answer == "yes" else "adversarial", "question": text, "answer": answer,
            "entity": text.split()[3].rstrip("?"), "image_path": f"{image_id}.png", "source": "test",
            "strategy": "balanced", "evidence": "known_absent" if answer == "no" else "gt", "licence": "CC0",
            "contrast_id": contrast_id}


MASS, EDEMA = "Is there a mass in this image?", "Is there edema in this image?"


def contrast_set(mixed: int, same: int) -> pd.DataFrame:
    """Contrast pairs of one condition text: `mixed` across two image types (CT abdomen yes, MRI brain no), `same`
    within MRI brain. A policy per text is wrong on one side of every pair; one per (image type, text) wins every
    mixed pair and none of the others."""
    rows = []
    for i in range(mixed):
        rows += [_condition_row(f"ct{i:02d}", "CT Scan - Abdomen", MASS, "yes", f"m{i}"),
                 _condition_row(f"mb{i:02d}", "MRI - Brain", MASS, "no", f"m{i}")]
    for i in range(same):
        rows += [_condition_row(f"sy{i:02d}", "MRI - Brain", EDEMA, "yes", f"s{i}"),
                 _condition_row(f"sn{i:02d}", "MRI - Brain", EDEMA, "no", f"s{i}")]
    return pd.DataFrame(rows)


def test_on_contrast_pairs_a_policy_per_text_scores_zero_and_one_per_image_type_wins_the_mixed_pairs():
    ceilings = blind_ceilings(contrast_set(mixed=10, same=10))
    entry = ceilings["contrast"]["by_category"]["condition"]
    assert (entry["units"], entry["keys"], entry["random"]) == (20, 2, 25.0)
    assert (entry["cross_fitted"], entry["in_sample"]) == (0.0, 0.0)
    assert (entry["type_keyed"], entry["type_keyed_in_sample"]) == (50.0, 50.0)
    assert "floor" not in entry
    assert ceilings["contrast"]["by_image_type"]["CT Scan - Abdomen"]["condition"]["type_keyed"] == 100.0
    failures = ceiling_failures(ceilings["contrast"], max_margin=5.0)
    assert len(failures) == 1 and failures[0].startswith("condition: a blind fixed answer per (image type, text)")
    assert "unit: contrast pairs" in failures[0]
    assert ceilings["pair"]["unit"] == "pair" and blind_ceilings(contrast_set(2, 2).drop(columns="contrast_id"))["contrast"] is None


def test_the_gate_stops_a_set_whose_contrast_pairs_a_type_keyed_policy_wins():
    audit = run_audit(contrast_set(mixed=10, same=10), settings=Audit())
    result = gate(audit, 5.0)
    assert not result.passed and result.unchecked == []
    assert [f for f in result.failures if "blind fixed answer" in f] == [
        f for f in result.failures if f.startswith("condition: a blind fixed answer per (image type, text)")]
    assert result.failures and all("text-only oracle" not in f for f in result.failures)  # each text is 50% yes
    headline = headline_metrics(audit)
    assert headline["audit_type_keyed_margin_contrast_condition"] == 25.0
    assert headline["audit_ceiling_margin_contrast_condition"] == -25.0
    text = audit_markdown(audit, result.to_json())
    assert "### On contrast pairs (one text, two images) (the gate: audit.ceiling_unit)" in text
    assert "### On within-image pairs (the paper's unit) (reported, not the gate)" in text
    json.dumps(audit)  # JSON-ready


def test_the_gate_passes_contrast_pairs_without_a_fixed_winner():
    result = gate(run_audit(contrast_set(mixed=0, same=20), settings=Audit()), 5.0)
    assert result.passed, result.failures


def test_on_the_pair_unit_the_gate_stops_a_balanced_set_with_a_fixed_winner():
    """Every text is yes as often as no (the oracle sits at random), yet "X-ray? yes, others no" wins half the pairs."""
    questions = _modality_set({A: 20, B: 20, C: 20, D: 20})
    result = gate(run_audit(questions, settings=Audit(ceiling_unit="pair")), 5.0)
    assert [f.split(",")[0] for f in result.failures] == [
        "modality: a blind fixed answer per text", "overall: a blind fixed answer per text"]
    assert "45.0% strict" in result.failures[0] and "within-image pairs" in result.failures[0]
    # gated on contrast pairs, a set without them is unchecked, not failed; its pair-unit ceilings stay in the audit
    audit = run_audit(questions, settings=Audit())
    unchecked = gate(audit, 5.0)
    assert unchecked.passed and "no contrast_id column" in unchecked.unchecked[0]
    assert audit["blind_ceiling"]["contrast"] is None and audit["blind_ceiling"]["pair"]["by_category"]["modality"]
    assert "unchecked: blind ceiling on contrast pairs" in audit_markdown(audit, unchecked.to_json())


def test_an_audit_without_a_blind_ceiling_fails_the_gate():
    audit = run_audit(_modality_set({A: 1, B: 1, C: 1, D: 1}), settings=Audit())
    del audit["blind_ceiling"]
    assert any("predates it" in f for f in gate(audit, 5.0).failures)
