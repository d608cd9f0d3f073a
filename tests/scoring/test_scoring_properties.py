"""Property tests of the project's scorer on random question sets (hypothesis)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from scoring_helpers import MISSING, build, pair

from probmed.scoring.baselines import always_no, always_yes
from probmed.scoring.metrics import score

PAIRED = ("modality", "organ", "condition", "position")
LABEL = st.sampled_from(["yes", "no", "refusal", "unparsed", MISSING])


@st.composite
def image(draw: Any, index: int) -> tuple[str, str, list[tuple[str, str, str]]]:
    items: list[tuple[str, str, str]] = []
    if draw(st.booleans()):
        items += pair("modality", draw(LABEL), draw(LABEL))
    if draw(st.booleans()):
        items += pair("body_part", draw(LABEL), draw(LABEL))
    if draw(st.booleans()):
        items.append(("abnormality", draw(st.sampled_from(["yes", "no"])), draw(LABEL)))
    n_cond = draw(st.integers(0, 3))
    if n_cond == 0 and draw(st.booleans()):
        items.append(("entity_hallu", "no", draw(LABEL)))
    for k in range(1, n_cond + 1):
        items += pair("entity", draw(LABEL), draw(LABEL), k)
    for k in range(1, draw(st.integers(0, n_cond)) + 1):
        items += pair("grounding", draw(LABEL), draw(LABEL), k)
    if not items:
        items.append(("abnormality", "no", draw(LABEL)))
    itype = draw(st.sampled_from(["X-ray - Chest", "CT Scan - Brain", "MRI - Spine"]))
    return (f"img{index}", itype, items)


@st.composite
def question_sets(draw: Any) -> list[tuple[str, str, list[tuple[str, str, str]]]]:
    n = draw(st.integers(1, 12))
    return [draw(image(i)) for i in range(n)]


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
    return a == b


def _equal_units(questions: pd.DataFrame, cat: str) -> bool:
    """Every image has the same number of pairs of ``cat`` (then per-image units are equal-sized)."""
    sub = questions[(questions["category"] == cat) & (questions["polarity"] != "single")]
    return sub.groupby("image_id").size().nunique() <= 1


@settings(max_examples=40, deadline=None)
@given(question_sets())
def test_strict_never_exceeds_averaged(spec: list) -> None:
    """Holds for pairs: a right pair means two right questions. Modality and organ units are
    single pairs; condition/position units are images, equal-sized when every image has the
    same number of pairs (with unequal images a small all-right image can outweigh a large
    all-wrong one, so the inequality is not a theorem there and is not asserted)."""
    questions, predictions = build(spec)
    result = score(questions, predictions, resamples=0)
    blocks = [(result["by_category"], questions)] + [
        (block, questions[questions["image_type"] == t]) for t, block in result["by_image_type"].items()
    ]
    for block, qs in blocks:
        for cat in PAIRED:
            m = block.get(cat)
            if not (m and m["n_units"]):
                continue
            assert m["accuracy_adv_pairs"] <= m["gt_only_accuracy"] + 1e-9
            if cat in ("modality", "organ") or _equal_units(qs, cat):
                assert m["accuracy_adv_pairs"] <= m["averaged_accuracy"] + 1e-9


@settings(max_examples=40, deadline=None)
@given(question_sets())
def test_always_yes_and_always_no(spec: list) -> None:
    questions, _ = build(spec)
    yes = score(questions, always_yes(questions), resamples=0)
    no = score(questions, always_no(questions), resamples=0)
    for cat in PAIRED:
        m = yes["by_category"].get(cat)
        if m and m["n_units"]:
            assert m["accuracy_adv_pairs"] == 0.0
            assert m["gt_only_accuracy"] == 100.0
            assert m["averaged_accuracy"] == 50.0
            assert m["recall"] == 100.0 and m["yes_ratio"] == 100.0
            assert no["by_category"][cat]["accuracy_adv_pairs"] == 0.0
            assert no["by_category"][cat]["gt_only_accuracy"] == 0.0
    if yes["overall"]["n_units"]:
        assert yes["overall"]["accuracy_adv_pairs"] == 0.0


@settings(max_examples=40, deadline=None)
@given(question_sets(), st.randoms(use_true_random=False))
def test_shuffling_whole_images_changes_nothing(spec: list, rnd: Any) -> None:
    questions, predictions = build(spec)
    before = score(questions, predictions, resamples=50, seed=3)
    order = list(pd.unique(questions["image_id"]))
    rnd.shuffle(order)
    shuffled = pd.concat([questions[questions["image_id"] == i] for i in order], ignore_index=True)
    after = score(shuffled, predictions.sample(frac=1.0, random_state=1), resamples=50, seed=3)
    assert _close(before, after)
