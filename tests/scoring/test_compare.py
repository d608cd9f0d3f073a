"""Paired comparisons: per-image sums, the paired bootstrap of a difference, visual reliance."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from probmed.core.errors import RecordError
from probmed.scoring.compare import Bootstrap, paired_differences, per_image_table, visual_reliance
from probmed.scoring.metrics import prepare, score
from probmed.scoring.synthetic import synthetic_questions


@pytest.fixture(scope="module")
def questions() -> pd.DataFrame:
    return synthetic_questions(n_images=300, n_questions=2700, seed=4)


def answers(questions: pd.DataFrame, p_right: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    right = rng.random(len(questions)) < p_right
    truth = questions["answer"].to_numpy()
    label = np.where(right, truth, np.where(truth == "yes", "no", "yes"))
    return pd.DataFrame({"qid": questions["qid"].to_numpy(), "label": label})


def correlated_runs(questions: pd.DataFrame, flip: float = 0.05, seed: int = 0):
    """Run A right with an image-dependent difficulty; run B = A with a few answers flipped."""
    rng = np.random.default_rng(seed)
    images = questions["image_id"].unique()
    ease = dict(zip(images, rng.uniform(0.2, 0.98, len(images))))
    a = answers(questions, questions["image_id"].map(ease).to_numpy(), rng)
    b = a.copy()
    flips = rng.random(len(b)) < flip
    b.loc[flips, "label"] = np.where(b.loc[flips, "label"] == "yes", "no", "yes")
    return a, b


def table(questions, predictions):
    return per_image_table(prepare(questions, predictions))


def test_per_image_sums_reproduce_the_scorer(questions):
    a, _ = correlated_runs(questions)
    sums = table(questions, a)
    scores = score(questions, a, resamples=0)
    for cat, part in sums.groupby("category"):
        block = scores["by_category"][cat]
        assert 100 * part["strict_right"].sum() / part["strict_units"].sum() == pytest.approx(block["accuracy_adv_pairs"])
        if part["averaged_questions"].sum():
            assert 100 * part["averaged_right"].sum() / part["averaged_questions"].sum() == pytest.approx(
                block["averaged_accuracy"])
        assert part["image_id"].nunique() == block["n_images"]
    diff = paired_differences(sums, sums, Bootstrap(50, 0))
    overall = diff[(diff["category"] == "overall")].set_index("metric")
    assert overall.loc["strict", "a"] == pytest.approx(scores["overall"]["accuracy_adv_pairs"])
    assert overall.loc["averaged", "a"] == pytest.approx(scores["overall"]["averaged_accuracy"])


def test_a_difference_is_the_scorers_difference_and_identical_runs_differ_by_exactly_zero(questions):
    a, b = correlated_runs(questions)
    ta, tb = table(questions, a), table(questions, b)
    diff = paired_differences(ta, tb, Bootstrap(200, 1)).set_index(["category", "metric"])
    sa, sb = score(questions, a, resamples=0), score(questions, b, resamples=0)
    for cat in sa["by_category"]:
        expected = sa["by_category"][cat]["accuracy_adv_pairs"] - sb["by_category"][cat]["accuracy_adv_pairs"]
        assert diff.loc[(cat, "strict"), "diff"] == pytest.approx(expected)
        rows = questions[(questions["category"] == cat) & ((questions["polarity"] != "single") | (cat == "abnormality"))]
        assert diff.loc[(cat, "strict"), "n_images"] == rows["image_id"].nunique()  # the images behind the units
    same = paired_differences(ta, ta, Bootstrap(200, 1))
    assert (same["diff"] == 0).all() and (same["ci_low"] == 0).all() and (same["ci_high"] == 0).all()


def test_paired_interval_is_narrower_than_unpaired_on_correlated_runs_and_seeded(questions):
    a, b = correlated_runs(questions)
    ta, tb = table(questions, a), table(questions, b)
    boot = Bootstrap(400, 7)
    paired = paired_differences(ta, tb, boot).set_index(["category", "metric"])
    unpaired = paired_differences(ta, tb, boot, paired=False).set_index(["category", "metric"])
    width_p = paired["ci_high"] - paired["ci_low"]
    width_u = unpaired["ci_high"] - unpaired["ci_low"]
    assert (width_p < width_u).all(), pd.concat([width_p, width_u], axis=1)
    assert (width_p < 0.6 * width_u).loc[("overall", "strict")]
    assert (paired["diff"] == unpaired["diff"]).all()  # the point estimate does not depend on the resampling
    pd.testing.assert_frame_equal(paired.reset_index(), paired_differences(ta, tb, boot))  # same seed, same interval
    other = paired_differences(ta, tb, Bootstrap(400, 8)).set_index(["category", "metric"])
    assert not np.allclose(other["ci_low"], paired["ci_low"])


def test_runs_on_other_questions_are_refused(questions):
    a, _ = correlated_runs(questions)
    fewer = questions[questions["image_id"] != questions["image_id"].iat[0]]
    with pytest.raises(RecordError, match="not scored on the same questions"):
        paired_differences(table(questions, a), table(fewer, a[a["qid"].isin(fewer["qid"])]))


def test_reliance_flags_a_category_without_a_drop(questions):
    real, _ = correlated_runs(questions)
    rng = np.random.default_rng(3)
    worse = answers(questions, np.full(len(questions), 0.5), rng)  # coin flips: the image mattered
    drops, flags = visual_reliance(table(questions, real), {"blank": table(questions, real),
                                                            "shuffled": table(questions, worse)}, Bootstrap(200, 0))
    assert set(drops["control"]) == {"blank", "shuffled"} and set(drops["metric"]) == {"strict", "averaged"}
    assert flags["overall"] is False  # shuffled drops, so the model looks
    drops, flags = visual_reliance(table(questions, real), {"blank": table(questions, real)}, Bootstrap(200, 0))
    assert all(flags.values()) and (drops["drop"] == 0).all()


def test_one_runs_intervals_match_the_scorers(questions):
    from probmed.scoring.compare import accuracies

    a, _ = correlated_runs(questions)
    scores = score(questions, a, resamples=300, seed=5)
    acc = accuracies(table(questions, a), Bootstrap(300, 5)).set_index(["category", "metric"])
    for cat, block in scores["by_category"].items():
        assert acc.loc[(cat, "strict"), "accuracy"] == pytest.approx(block["accuracy_adv_pairs"])
        assert acc.loc[(cat, "strict"), "ci_low"] == pytest.approx(block["ci95_low"])
        assert acc.loc[(cat, "strict"), "ci_high"] == pytest.approx(block["ci95_high"])
    low, high = acc.loc[("organ", "averaged"), ["ci_low", "ci_high"]]
    assert low < scores["by_category"]["organ"]["averaged_accuracy"] < high
    one_type = questions["image_type"].iat[0]
    by_type = accuracies(table(questions, a), Bootstrap(300, 5), image_type=one_type).set_index(["category", "metric"])
    assert by_type.loc[("modality", "strict"), "n_images"] == questions.loc[
        (questions["image_type"] == one_type), "image_id"].nunique()
