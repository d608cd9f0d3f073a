"""The blind ceiling on small tables whose best fixed answer per text can be worked out by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from probmed.benchmark.audit.blind_ceiling import blind_ceiling, ceiling_failures
from probmed.benchmark.audit.oracle import image_fold

XRAY, CT, MRI = "Is this an X-ray image?", "Is this a CT image?", "Is this an MRI image?"


def _pair_rows(image_id: str, image_type: str, yes_text: str, no_text: str) -> list[dict]:
    base = {"image_id": image_id, "image_type": image_type, "category": "modality", "qa_type": "modality",
            "pair_id": f"{image_id}:modality", "image_path": f"{image_id}.png"}
    return [{**base, "qid": f"{image_id}-gt", "question": yes_text, "answer": "yes", "polarity": "gt"},
            {**base, "qid": f"{image_id}-adv", "question": no_text, "answer": "no", "polarity": "adv"}]


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
