"""Seeded image-level subsets of a question set (datasets.question_sets.<name> in params.yaml)."""

from __future__ import annotations

import random

import pandas as pd

from probmed.core.errors import ConfigError


def drop_training_images(frame: pd.DataFrame, splits: pd.DataFrame) -> pd.DataFrame:
    """The questions whose image the local default model never trained on.

    Why: the offline default model is the tiny LLaVA after `probmed finetune
    --stage pretrain`, which trains on the `train` images of the fine-tuning
    split (build/finetune/splits.parquet); scoring it on those would measure
    memorisation. Images the split does not list were never trained on and stay.
    """
    missing = [c for c in ("image_id", "split") if c not in splits.columns]
    if missing:
        raise ConfigError(f"fine-tuning split table lacks column(s) {missing}")
    trained = set(splits.loc[splits["split"] == "train", "image_id"])
    return frame[~frame["image_id"].isin(trained)].reset_index(drop=True)


def subset_questions(frame: pd.DataFrame, max_images: int | None, seed: int) -> pd.DataFrame:
    """A seeded image-level subset, spread across image types; rows keep their order.

    Why: the default `dvc repro` must fit a small CPU budget, yet every image
    type should still appear. Images are shuffled within each image type with a
    seeded RNG and taken round-robin across types (sorted by name) until
    ``max_images``; ``None`` or a value >= the number of images keeps the set
    whole. Whole images only, so pairs and per-image scoring stay intact.
    """
    images = list(dict.fromkeys(frame["image_id"]))
    if max_images is None or max_images >= len(images):
        return frame.reset_index(drop=True)
    if max_images <= 0:
        raise ConfigError(f"max_images must be positive or null, got {max_images}")
    first_type = frame.drop_duplicates("image_id").set_index("image_id")["image_type"]
    rng = random.Random(seed)
    queues = {}
    for image_type in sorted(set(first_type)):
        ids = sorted(first_type.index[first_type == image_type])
        rng.shuffle(ids)
        queues[image_type] = ids
    chosen: set[str] = set()
    while len(chosen) < max_images:
        for image_type in sorted(queues):
            if queues[image_type] and len(chosen) < max_images:
                chosen.add(queues[image_type].pop())
    return frame[frame["image_id"].isin(chosen)].reset_index(drop=True)
