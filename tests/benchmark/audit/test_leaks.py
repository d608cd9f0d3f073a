"""Context leaks on a hand-built set: answers implied by the other questions of the same image."""

from __future__ import annotations

import pandas as pd
import pytest

from probmed.benchmark.audit.leaks import context_leaks


def _q(image_id: str, category: str, polarity: str, question: str, answer: str, entity: str, pair: str) -> dict:
    return {"qid": f"{image_id}-{category}-{polarity}-{entity}", "image_id": image_id, "image_type": "X-ray - Chest",
            "category": category, "polarity": polarity, "question": question, "answer": answer, "entity": entity,
            "pair_id": f"{image_id}:{pair}", "qa_type": pair if polarity == "single" else f"{pair}_{polarity}",
            "image_path": f"{image_id}.png"}


def _abnormal(image_id: str) -> list[dict]:
    """An effusion (with its position pair) and a second finding without a position; abnormality yes."""
    return [
        _q(image_id, "abnormality", "single", "Is there any abnormality in this image?", "yes", "abnormality", "abnormality"),
        _q(image_id, "condition", "gt", "Is there evidence of an effusion in this image?", "yes", "effusion", "entity_0"),
        _q(image_id, "condition", "adversarial", "Is there evidence of a mass in this image?", "no", "mass", "entity_0"),
        _q(image_id, "condition", "gt", "Is there evidence of edema in this image?", "yes", "edema", "entity_1"),
        _q(image_id, "condition", "adversarial", "Is there evidence of pneumonia in this image?", "no", "pneumonia", "entity_1"),
        _q(image_id, "position", "gt", "Is the effusion located in the left pleural space?", "yes", "left", "grounding_0"),
        _q(image_id, "position", "adversarial", "Is the effusion located in the right pleural space?", "no", "right", "grounding_0"),
    ]


def _normal(image_id: str) -> list[dict]:
    return [_q(image_id, "abnormality", "single", "Is there any abnormality in this image?", "no", "abnormality", "abnormality"),
            _q(image_id, "condition", "single", "Is there evidence of a mass in this image?", "no", "mass", "entity_hallu")]


def test_each_leak_counts_the_answers_it_implies_and_what_exploiting_it_gains():
    questions = pd.DataFrame(_abnormal("a1") + _abnormal("a2") + _normal("n1") + _normal("n2"))
    leaks = context_leaks(questions)["leaks"]
    named = leaks["position_names_condition"]
    assert (named["implied"], named["right"], named["by_category"]) == (2, 2, {"condition": 2})  # the effusion, not edema
    assert named["share_of_questions"] == pytest.approx(2 / 18)
    # condition is one all-or-nothing unit per image (2 pairs, random 1/16); knowing the effusion pair's yes leaves
    # the effusion's twin and the edema pair to guess: 1/8
    assert named["strict_gain"]["by_category"]["condition"] == pytest.approx(100 / 8 - 100 / 16, abs=1e-3)
    abnormal = leaks["condition_pair_implies_abnormal"]
    assert (abnormal["implied"], abnormal["right"]) == (2, 2)
    normal = leaks["no_condition_pair_implies_normal"]
    assert (normal["implied"], normal["right"], normal["by_category"]) == (4, 4, {"abnormality": 2, "condition": 2})
    every = context_leaks(questions)["all"]
    assert every["implied"] == 8 and every["strict_gain"]["by_category"]["abnormality"] == pytest.approx(50.0)
