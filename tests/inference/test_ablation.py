"""Image controls: blank and shuffled images replace the real one before any backend sees it."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from ablation_helpers import IgnoresImage, PixelOracle, pixel_hash, two_type_questions
from PIL import Image

from probmed.core.errors import ConfigError
from probmed.core.settings import IMAGE_CONTROLS, SETTINGS, get_setting
from probmed.inference.ablation import blank_image, mean_grey, shuffle_donors
from probmed.inference.answer_store import file_hash
from probmed.inference.predict import PredictJob, Shard, run_predictions
from probmed.inference.prompting import PromptSet


def images(types: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"image_id": [f"img{i:02d}" for i in range(len(types))], "image_type": types})


def test_the_controls_are_settings_of_the_one_table():
    assert IMAGE_CONTROLS == ("blank", "shuffled")
    assert all(SETTINGS[s].is_ablation and SETTINGS[s].description_by is None for s in IMAGE_CONTROLS)


@pytest.mark.parametrize("types", [["a"] * 5 + ["b"] * 4 + ["c"] * 3, ["a", "b"] * 6, ["a"] * 3 + ["b"] * 3])
def test_shuffle_is_a_seeded_permutation_across_image_types(types):
    table = images(types)
    donors = shuffle_donors(table, seed=0)
    kind = dict(zip(table["image_id"], table["image_type"]))
    assert set(donors) == set(table["image_id"])
    assert all(kind[img] != kind[d] for img, d in donors.items())
    assert sorted(donors.values()) == sorted(donors)  # a permutation: every image shown exactly once
    assert donors == shuffle_donors(table.sample(frac=1, random_state=3), seed=0)  # row order is irrelevant
    assert any(shuffle_donors(table, seed=s) != donors for s in range(1, 6))


def test_shuffle_with_a_dominant_type_still_never_keeps_the_type():
    table = images(["a"] * 7 + ["b"] * 2)
    donors = shuffle_donors(table, seed=1)
    kind = dict(zip(table["image_id"], table["image_type"]))
    assert all(kind[img] != kind[d] for img, d in donors.items())
    assert Counter(kind[d] for img, d in donors.items() if kind[img] == "a") == {"b": 7}


def test_shuffle_needs_two_image_types():
    with pytest.raises(ConfigError, match="at least two image types.*X-ray - Chest"):
        shuffle_donors(images(["X-ray - Chest"] * 3), seed=0)


def test_blank_is_uniform_mean_grey_of_the_original_size(tmp_path, shared_data):
    real = sorted((shared_data / "vqa-rad" / "VQA_RAD Image Folder").glob("synpic*.jpg"))[0]
    out = blank_image(real, tmp_path, file_hash(real))
    with Image.open(real) as im, Image.open(out) as blank:
        pixels = np.asarray(blank)
        assert blank.size == im.size
        expected = round(float(np.asarray(im.convert("L"), dtype=np.float64).mean()))
    assert np.unique(pixels).tolist() == [expected] == [mean_grey(real)]
    assert blank_image(real, tmp_path, file_hash(real)) == out  # written once


def run(questions, backend, setting, shared_data, store, seed=0):
    return run_predictions(questions, backend,
        PredictJob.in_folders(get_setting(setting), PromptSet.from_params(None), shared_data, store, control_seed=seed,
                   fsync=False), progress=False)


def test_the_backend_sees_the_control_image_and_the_key_carries_its_hash(tmp_path, shared_data):
    questions = two_type_questions(shared_data, 6)
    real = {r.image_id: pixel_hash(shared_data / r.image_path) for r in questions.drop_duplicates("image_id").itertuples()}
    kind = dict(zip(questions["image_id"], questions["image_type"]))
    keys = {}
    for setting in ("vanilla", "blank", "shuffled"):
        backend = IgnoresImage()
        result = run(questions, backend, setting, shared_data, tmp_path / setting)
        keys[setting] = set(result.predictions["cache_key"])
        seen = {pixel_hash(p) for p in backend.seen}
        if setting == "vanilla":
            assert seen == set(real.values())
        elif setting == "blank":
            assert not seen & set(real.values())
            assert all(len(np.unique(np.asarray(Image.open(p)))) == 1 for p in backend.seen)
            assert all(p.is_relative_to(tmp_path / setting) for p in backend.seen)
        else:  # every image shows another record's real image of another image type
            shown = {img: pixel_hash(p) for img, p in zip([q.image_id for q in questions.itertuples()], backend.seen)}
            by_hash = {h: img for img, h in real.items()}
            assert all(kind[by_hash[h]] != kind[img] for img, h in shown.items())
        assert (result.predictions["setting"] == setting).all()
    assert keys["vanilla"].isdisjoint(keys["blank"]) and keys["vanilla"].isdisjoint(keys["shuffled"])
    again = run(questions, IgnoresImage(), "shuffled", shared_data, tmp_path / "shuffled")
    assert again.n_cached == len(questions) and again.n_asked == 0


def test_shuffled_is_the_same_under_sharding(tmp_path, shared_data):
    questions = two_type_questions(shared_data, 6)
    whole = IgnoresImage()
    run(questions, whole, "shuffled", shared_data, tmp_path / "whole")
    parts = []
    for i in range(2):
        backend = IgnoresImage()
        run_predictions(questions, backend,
            PredictJob.in_folders(get_setting("shuffled"), PromptSet.from_params(None), shared_data, tmp_path / "parts",
                       shard=Shard(i, 2), fsync=False), progress=False)
        parts += backend.seen
    assert sorted(map(str, parts)) == sorted(map(str, whole.seen))


# --- visual reliance end to end: backends that ignore / read the image --------------------------


def reliance(questions, make_backend, shared_data, tmp_path, model_cfg=None):
    from probmed.scoring.compare import Bootstrap, visual_reliance
    from probmed.scoring.run import per_image

    tables = {}
    for setting in ("vanilla", "blank", "shuffled"):
        result = run(questions, make_backend(), setting, shared_data, tmp_path / setting)
        tables[setting] = per_image(questions, result.predictions)
    real = tables.pop("vanilla")
    return visual_reliance(real, tables, Bootstrap(500, 0))


def test_a_backend_that_ignores_the_image_answers_without_looking(tmp_path, shared_data):
    questions = two_type_questions(shared_data, 8)
    drops, flags = reliance(questions, IgnoresImage, shared_data, tmp_path)
    assert (drops["drop"] == 0).all() and (drops["ci_low"] <= 0).all() and (drops["ci_high"] >= 0).all()
    assert flags == {"modality": True, "organ": True, "abnormality": True, "overall": True}


def test_a_backend_that_reads_the_pixels_is_not_flagged(tmp_path, shared_data):
    questions = two_type_questions(shared_data, 8)
    drops, flags = reliance(questions, lambda: PixelOracle(questions, shared_data), shared_data, tmp_path)
    strict = drops[drops["metric"] == "strict"].set_index(["category", "control"])
    assert (strict.loc["modality", "real"] == 100).all() and (strict.loc["modality", "with_control"] == 0).all()
    assert (strict["ci_low"].loc[["modality", "organ", "overall"]] > 0).all()
    assert flags["modality"] is False and flags["organ"] is False and flags["overall"] is False


@pytest.mark.slow
def test_the_blind_baseline_relies_on_the_image_exactly_zero(tmp_path, shared_data, repo_root):
    from probmed.core.config import load_params, to_plain
    from probmed.inference.models.registry import build_backend

    models = to_plain(load_params(repo_root / "params.yaml"))["models"]
    questions = two_type_questions(shared_data, 8)
    drops, flags = reliance(questions, lambda: build_backend(models, "blind", seed=0), shared_data, tmp_path)
    assert (drops["drop"] == 0).all() and (drops["ci_low"] == 0).all() and (drops["ci_high"] == 0).all()
    assert all(flags.values())
