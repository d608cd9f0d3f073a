"""Every overall accuracy has one name: the keys MLflow logs, the headers tables show."""

from __future__ import annotations

from metrics_factory import make_metrics

from probmed.reporting.overall import DEFINITIONS, EXPLANATION, overall_metrics


def test_each_overall_has_its_own_name_score_key_and_header():
    assert [d.name for d in DEFINITIONS] == ["overall_paper_weighted", "overall_pooled", "overall_question_weighted"]
    assert len({d.score_key for d in DEFINITIONS}) == len({d.header for d in DEFINITIONS}) == 3
    assert all(d.header.split("(")[1].split()[0].rstrip(")") in EXPLANATION for d in DEFINITIONS)


def test_overall_metrics_names_the_scorer_values():
    overall = make_metrics(0)["overall"]
    values = overall_metrics(overall)
    assert values == {
        "overall_paper_weighted": overall["accuracy_adv_pairs_original_weighting"],
        "overall_pooled": overall["accuracy_adv_pairs"],
        "overall_question_weighted": overall["accuracy_adv_pairs_question_weighting"],
    }
    assert overall_metrics({}) == dict.fromkeys(values)
