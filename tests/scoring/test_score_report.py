"""ScoreReport: metrics.json loaded and validated once, numbers asked for by category and image type."""

from __future__ import annotations

import json
import math

import pytest
from scoring_helpers import build

from probmed.core.config import flatten
from probmed.core.errors import ProbmedError, ScoresError
from probmed.core.params_schema import Score
from probmed.scoring.run import evaluate, write_run
from probmed.scoring.score_report import ScoreReport, number

IMAGES = [
    ("a", "X-ray - Chest", [("modality_gt", "yes", "yes"), ("modality_hallu", "no", "no"),
                            ("abnormality", "yes", "no"),
                            ("entity_gt_0", "yes", "yes"), ("entity_hallu_0", "no", "yes")]),
    ("b", "CT Scan - Brain", [("body_part_gt", "yes", "yes"), ("body_part_hallu", "no", "refusal")]),
]


@pytest.fixture()
def scored(tmp_path):
    questions, predictions = build(IMAGES)
    metrics = evaluate(questions, predictions, Score(bootstrap_resamples=10))
    write_run(metrics, tmp_path)
    return metrics.to_dict(), tmp_path / "metrics.json"


def test_a_scored_run_reads_back_with_its_categories_and_numbers(scored) -> None:
    metrics, path = scored
    scores = ScoreReport.load(path)
    assert scores.path == path
    assert scores.to_dict() == metrics
    assert scores.categories == ["modality", "organ", "abnormality", "condition"]
    assert scores.image_types == ["CT Scan - Brain", "X-ray - Chest"]
    assert scores.categories_of("CT Scan - Brain") == ["organ"]
    assert scores.value("modality", "accuracy_adv_pairs") == 100.0
    assert scores.value("condition", "accuracy_adv_pairs") == 0.0  # a real 0 stays 0
    assert scores.value("organ", "accuracy_adv_pairs", "CT Scan - Brain") == 0.0
    assert math.isnan(scores.value("position", "accuracy_adv_pairs"))  # not in the run: NaN, never 0
    assert scores.number("position", "accuracy_adv_pairs") is None and scores.number("modality", "n_units") == 1.0
    assert math.isnan(scores.value("organ", "accuracy_adv_pairs", "X-ray - Chest"))
    assert scores.overall_value("n_questions") == 7.0
    assert [(t, c) for t, c, _ in scores.blocks()][:4] == [
        ("all", "modality"), ("all", "organ"), ("all", "abnormality"), ("all", "condition")]
    assert ("CT Scan - Brain", "organ") in [(t, c) for t, c, _ in scores.blocks()]
    baseline = scores.random_baseline
    assert baseline is not None and baseline.value("modality", "accuracy_adv_pairs") == 25.0
    assert scores.leaves("procedural")["abnormality.n_images"] == 1
    assert scores.leaves("random_baseline.overall")["averaged_accuracy"] == 50.0
    assert scores.leaves("no_such_section") == {}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.pop("by_category"), "expected an object with key 'by_category'"),
        (lambda m: m["by_category"].update(colour={}), r"by_category\.colour: unknown category"),
        (lambda m: m["by_category"]["modality"].update(accuracy_adv_pairs="high"),
         r"by_category\.modality\.accuracy_adv_pairs: expected a number or null, got 'high'"),
        (lambda m: m["by_category"].update(organ=[1]), r"by_category\.organ: expected an object of metrics"),
        (lambda m: m["by_image_type"]["X-ray - Chest"].update(modality=True),
         r"by_image_type\.X-ray - Chest\.modality: expected an object"),
        (lambda m: m.update(overall=[]), "'overall' must be an object"),
        (lambda m: m.update(subset_robustness={}), "'subset_robustness' must be a list"),
    ],
)
def test_malformed_metrics_name_the_file_and_key(scored, tmp_path, edit, message) -> None:
    metrics, _ = scored
    broken = json.loads(json.dumps(metrics))
    edit(broken)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(ScoresError, match=message) as err:
        ScoreReport.load(path)
    assert str(path) in str(err.value) and isinstance(err.value, ProbmedError)


def test_missing_or_unreadable_file(tmp_path) -> None:
    with pytest.raises(ScoresError, match="not found .run `probmed score` first"):
        ScoreReport.load(tmp_path / "metrics.json")
    (tmp_path / "metrics.json").write_text("{")
    with pytest.raises(ScoresError, match="not valid JSON"):
        ScoreReport.load(tmp_path / "metrics.json")


def test_number_and_flatten() -> None:
    assert [number(v) for v in (3, 2.5, None, True, "4", float("nan"), float("inf"))] == [3.0, 2.5, None, None, None, None, None]
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": None}) == {"a.b": 1, "a.c": [1, 2], "d": None}
    assert flatten({"x": {}}, "p") == {}


def test_the_result_is_typed_and_written_as_it_reads_back(scored) -> None:
    """evaluate's ScoreReport: typed meta, subset rows and known-absent part; metrics.json is its to_dict."""
    from probmed.scoring.run import per_image, score_run
    from probmed.scoring.score_report import ScoreMeta, ScoreSection, SubsetScore

    metrics, path = scored
    questions, predictions = build(IMAGES)
    scored_run = score_run(questions, predictions, Score(bootstrap_resamples=10))
    result = scored_run.result
    assert result.to_dict() == metrics and result == ScoreReport.load(path)  # the path is not part of the scores
    assert isinstance(result.meta, ScoreMeta) and result.meta.n_questions == 7 and result.meta.bootstrap_resamples == 10
    assert result.subset_robustness and all(isinstance(row, SubsetScore) for row in result.subset_robustness)
    assert result.subset_robustness[-1].fraction == 1.0 and result.known_absent is None  # no evidence column values
    assert isinstance(result.random_baseline, ScoreSection) and result.random_baseline.categories == result.categories
    assert scored_run.per_image.equals(per_image(questions, predictions))  # the same sums from the one join
    assert path.read_text() == json.dumps(result.to_dict(), indent=2) + "\n"


def test_unknown_meta_keys_are_refused(scored) -> None:
    metrics, _ = scored
    broken = json.loads(json.dumps(metrics))
    broken["meta"]["colour"] = "red"
    with pytest.raises(ScoresError, match=r"meta: unknown key\(s\) \['colour'\]"):
        ScoreReport.from_dict(broken)
