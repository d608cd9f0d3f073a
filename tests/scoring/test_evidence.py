"""Accuracy on the known-absent subset beside the full set."""

from __future__ import annotations

import pandas as pd

from probmed.benchmark.questions import generate_questions
from probmed.core.records import Finding, ImageRecord
from probmed.scoring.baselines import always_yes, random_predictions
from probmed.scoring.evidence import known_absent_questions
from probmed.scoring.run import evaluate
from probmed.scoring.tables import table_known_absent


def _questions() -> pd.DataFrame:
    recs = [
        ImageRecord("a", "S", "x-ray", "chest", True, [Finding("mass", "left upper lung zone")], ["pneumothorax"], image_path="a.png"),
        ImageRecord("b", "S", "x-ray", "chest", True, [Finding("nodule")], [], image_path="b.png"),
        ImageRecord("c", "S", "x-ray", "chest", False, [], ["mass", "nodule"], image_path="c.png"),
    ]
    return generate_questions(recs, strategy="random")[0]


def test_subset_drops_every_pair_whose_no_is_assumed() -> None:
    q = _questions()
    sub = known_absent_questions(q)
    assumed = set(q.loc[q.evidence == "assumed_absent", "pair_id"])
    assert assumed and not set(sub.pair_id) & assumed
    assert (sub.loc[sub.answer == "no", "evidence"] == "known_absent").all()
    assert known_absent_questions(q.assign(evidence="")) is None  # an imported set records no evidence


def test_scored_beside_the_full_set() -> None:
    q = _questions()
    m = evaluate(q, always_yes(q)).to_dict()
    ka = m["known_absent"]
    assert ka["n_questions"] + ka["n_dropped"] == len(q) and ka["n_dropped"] > 0
    assert ka["by_category"]["modality"]["accuracy_adv_pairs"] == 0.0  # always-yes is 0 on every pair, here too
    table = table_known_absent({"always-yes": m, "random": evaluate(q, random_predictions(q, 0))})
    assert set(table.category) >= {"modality", "condition", "overall"} and set(table.model) == {"always-yes", "random"}


def test_nlp_mined_labels_are_marked_and_left_out_of_the_known_absent_subset() -> None:
    """ChestX-ray14's absent labels are mined from reports by NLP: their "no" says so (nlp_absent), and the subset
    free of doubt does not count on them."""
    recs = [ImageRecord("n", "ChestX-ray14", "x-ray", "chest", False, [], ["mass", "nodule", "pneumothorax"], image_path="n.png"),
            ImageRecord("c", "S", "x-ray", "chest", False, [], ["mass", "nodule"], image_path="c.png")]
    q = generate_questions(recs, strategy="random")[0]
    cxr_no = q[(q.image_id == "n") & (q.answer == "no") & q.category.isin(["condition", "abnormality"])]
    assert len(cxr_no) and (cxr_no.evidence == "nlp_absent").all()
    assert (q.loc[(q.image_id == "c") & (q.category == "condition"), "evidence"] == "known_absent").all()
    sub = known_absent_questions(q)
    assert sub is not None and not set(sub.pair_id) & set(cxr_no.pair_id)
