"""Baseline backends: the scoring baselines through the backend interface, and the blind model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from probmed.core.settings import get_setting
from probmed.inference.models.baselines import embedder_path, image_fold
from probmed.inference.models.registry import build_backend
from probmed.inference.predict import PredictJob, run_predictions
from probmed.inference.prompting import PromptSet
from probmed.scoring import baselines as sb

PROMPTS = PromptSet.from_params({})
MODELS = {
    "random": {"backend": "random"},
    "always-yes": {"backend": "always-yes"},
    "always-no": {"backend": "always-no"},
    "blind": {"backend": "blind", "folds": 4, "C": 1.0},
}


def test_wrapped_baselines_equal_the_scoring_baselines(tmp_path, questions, shared_data):
    expected = {
        "random": sb.random_predictions(questions, seed=3),
        "always-yes": sb.always_yes(questions),
        "always-no": sb.always_no(questions),
    }
    for name, frame in expected.items():
        backend = build_backend(MODELS, name, seed=3)
        got = run_predictions(questions, backend,
            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, Path("/nonexistent"), tmp_path), progress=False)
        assert list(got.predictions["label"]) == list(frame["label"]), name
    # the seed is part of the key: another seed is another set of answers
    a = build_backend(MODELS, "random", seed=3).fingerprint()
    assert a != build_backend(MODELS, "random", seed=4).fingerprint()


@pytest.fixture(scope="module")
def real_records(shared_data, tmp_path_factory):
    """Real ChestX-ray14 and VQA-RAD records, chest X-ray heavy like the paper's benchmark."""
    from probmed.benchmark.sources.chestxray14 import load_chestxray14
    from probmed.benchmark.sources.vqarad import load_vqarad

    tmp = tmp_path_factory.mktemp("cx")
    cx = load_chestxray14(shared_data / "chestxray14", tmp, tmp, write_images=False)
    vr = load_vqarad(shared_data / "vqa-rad", shared_data)
    return cx.records[::4] + vr.records


def blind_and_random(records, strategy: str, tmp_path: Path) -> tuple[dict, dict]:
    """Strict pair accuracy per category of the blind model and of exact random on one generated set."""
    from probmed.benchmark.questions import generate_questions
    from probmed.scoring.metrics import exact_random_baseline, score

    q, _ = generate_questions(records, seed=0, strategy=strategy)
    backend = build_backend(MODELS, "blind")
    # never opens an image: a bogus image root is fine
    job = PredictJob.in_folders(get_setting("vanilla"), PROMPTS, Path("/nonexistent"), tmp_path)
    preds = run_predictions(q, backend, job, progress=False).predictions
    assert preds["p_yes"].between(0, 1).all() and set(preds["label"]) == {"yes", "no"}
    return score(q, preds, resamples=50)["by_category"], exact_random_baseline(q)["by_category"]


@pytest.mark.slow
def test_blind_baseline_exposes_the_language_prior_of_pope_sampling(tmp_path, real_records):
    blind, rand = blind_and_random(real_records, "random", tmp_path)
    # POPE sampling on a chest-X-ray-heavy set: "Is this an X-ray?" is nearly always yes, so text alone beats chance
    assert blind["modality"]["accuracy_adv_pairs"] > rand["modality"]["accuracy_adv_pairs"] + 30
    assert blind["organ"]["accuracy_adv_pairs"] > rand["organ"]["accuracy_adv_pairs"] + 30


@pytest.mark.slow
def test_blind_baseline_is_no_better_than_chance_on_balanced_questions(tmp_path, real_records):
    blind, rand = blind_and_random(real_records, "balanced", tmp_path)
    # each text is asked as a hallucination as often as it is true, and a contrast pair asks one text of an
    # image where it is true and one where it is false: the wording alone wins no contrast pair. (On the
    # paper's within-image pairs a fixed answer per value can still win on this small chest-heavy record set,
    # e.g. organ: brain against body organs; the audit reports that ceiling, the gate judges contrast pairs.)
    assert sum(1 for v in blind.values() if v.get("n_contrast_pairs")) >= 3  # not vacuous
    for category, values in blind.items():
        if category in rand and values.get("n_contrast_pairs"):
            assert values["accuracy_contrast_pairs"] <= 25.0 + 10, category


def test_blind_folds_are_by_image_and_cover_everything():
    folds = [image_fold(f"img{i}", 5) for i in range(500)]
    assert set(folds) == set(range(5)) and min(np.bincount(folds)) > 60
    assert image_fold("img7", 5) == image_fold("img7", 5)
    assert (embedder_path() / "model.safetensors").is_file()


def test_unique_rows_equals_numpy_unique_over_rows():
    from probmed.inference.models.baselines import unique_rows

    rng = np.random.default_rng(1)
    distinct = rng.standard_normal((40, 9)).astype(np.float32)
    rows = distinct[rng.integers(0, 40, 2000)]
    rows[::7, -1] = 1.0  # the answer column splits some texts in two
    expected_rows, expected_counts = np.unique(rows, axis=0, return_counts=True)
    got_rows, got_counts = unique_rows(rows)
    assert got_rows.tobytes() == expected_rows.tobytes()
    assert got_counts.tolist() == expected_counts.tolist()


def test_unique_rows_merges_rows_equal_as_floats():
    from probmed.inference.models.baselines import unique_rows

    rows = np.array([[0.0, 1.0], [-0.0, 1.0], [2.0, 1.0], [0.0, 1.0]], dtype=np.float32)
    got_rows, got_counts = unique_rows(rows)
    assert got_rows.tolist() == [[0.0, 1.0], [2.0, 1.0]]
    assert got_counts.tolist() == [3, 1]


def test_a_table_baseline_answers_each_set_from_its_own_table_not_from_a_store_another_set_filled(tmp_path, questions):
    """The random baseline draws per row of the whole set: a question asked again in a smaller set is another
    row. With one store for both sets, the second set's answers must equal a fresh run's (they were the first
    set's answers, so a machine that had evaluated an older subset scored otherwise than a fresh clone)."""
    smaller = questions.iloc[len(questions) // 3:].reset_index(drop=True)
    job = PredictJob.in_folders(get_setting("vanilla"), PROMPTS, Path("/nonexistent"), tmp_path / "shared")
    run_predictions(questions, build_backend(MODELS, "random", seed=3), job, progress=False)
    again = run_predictions(smaller, build_backend(MODELS, "random", seed=3), job, progress=False).predictions
    fresh = run_predictions(smaller, build_backend(MODELS, "random", seed=3),
                            PredictJob.in_folders(get_setting("vanilla"), PROMPTS, Path("/nonexistent"), tmp_path / "own"),
                            progress=False).predictions
    assert list(again["label"]) == list(fresh["label"]) == list(sb.random_predictions(smaller, seed=3)["label"])
    assert list(again["label"]) != list(sb.random_predictions(questions, seed=3)["label"][len(questions) // 3:])
