"""The harnesses' stand-alone scorer agrees with `probmed score` to the last digit, and with the category specs."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pandas as pd
import pytest

from probmed.core.categories import CATEGORY_SPECS
from probmed.release.harness import strict_pairs
from probmed.release.harness.files import COPIED
from probmed.release.harness.strict_pairs import CATEGORIES, SINGLE_KEYS, strict_scores
from probmed.release.table import text_rows
from probmed.scoring.metrics import score


def test_categories_are_the_specs():
    assert CATEGORIES == {c.name: (c.paired, c.per_image) for c in CATEGORY_SPECS}
    assert set(SINGLE_KEYS) == {c.single_qa_type for c in CATEGORY_SPECS if c.single_qa_type}


def test_the_copied_modules_need_only_the_standard_library():
    for module in (strict_pairs,):
        tree = ast.parse(inspect.getsource(module))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert names <= {"__future__", "typing"}


def test_lmms_eval_aggregations_cover_every_category():
    tree = ast.parse(COPIED["lmms_eval/utils.py"].read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {f"aggregate_{c}" for c in ["overall", *CATEGORIES]} <= functions


def _labels(q: pd.DataFrame, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    right = rng.random(len(q)) < 0.7
    other = np.where(q["answer"] == "yes", "no", "yes")
    label = np.where(right, q["answer"], other).astype(object)
    label[rng.random(len(q)) < 0.05] = "refusal"
    return label


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("config", ["all", "commercial"])
def test_strict_scores_equal_probmed_score(small_set, seed, config):
    q = small_set["frame"]
    if config == "commercial":
        q = q[q["licence"] != "CC BY-NC 4.0"].reset_index(drop=True)
    label = _labels(q, seed)
    expected = score(q, pd.DataFrame({"qid": q["qid"], "label": label}), resamples=0, by_image_type=False)
    rows = text_rows(q).assign(label=label).to_dict("records")  # released columns only, in another order
    got = strict_scores(reversed(rows))
    assert got["overall"] == expected["overall"]["accuracy_adv_pairs_original_weighting"]
    for cat, m in expected["by_category"].items():
        assert got["by_category"][cat] == {"accuracy": m["accuracy_adv_pairs"], "num": m["num"]}


def test_per_image_units_pairs_of_vqarad_and_singles():
    rows = [  # image a: two condition pairs (one wrong) = one wrong unit; a single beside them; image b: vqarad pairs
        {"category": "condition", "pair_id": "a:entity_0", "image_id": "a", "answer": "yes", "label": "yes"},
        {"category": "condition", "pair_id": "a:entity_0", "image_id": "a", "answer": "no", "label": "no"},
        {"category": "condition", "pair_id": "a:entity_1", "image_id": "a", "answer": "yes", "label": "no"},
        {"category": "condition", "pair_id": "a:entity_1", "image_id": "a", "answer": "no", "label": "no"},
        {"category": "condition", "pair_id": "c:entity_hallu", "image_id": "c", "answer": "no", "label": "no"},
        {"category": "condition", "pair_id": "b:vqarad_0", "image_id": "b", "answer": "yes", "label": "yes"},
        {"category": "condition", "pair_id": "b:vqarad_0", "image_id": "b", "answer": "no", "label": "no"},
    ]
    got = strict_scores(rows)
    assert got["by_category"]["condition"] == {"accuracy": 50.0, "num": 3}  # units a (wrong), b:vqarad_0 (right)
    assert got["overall"] == 50.0
