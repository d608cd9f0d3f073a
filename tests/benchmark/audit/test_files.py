"""Shortcuts beyond the text: a table keyed on the text and the file's size wins where size follows the answer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from probmed.benchmark.audit.files import file_shortcuts


def _abnormality_set(root: Path, compress_level: int) -> pd.DataFrame:
    """40 images of one type and source: the abnormal ones noisy (large PNGs), the normal ones smooth (small)."""
    rng = np.random.default_rng(0)
    rows = []
    for i in range(40):
        abnormal = i % 2 == 0
        pixels = rng.integers(0, 256, (64, 64)) if abnormal else np.tile(np.arange(64) * 2, (64, 1))
        pixels[:, :32] = 128  # the same mean grey level for both
        Image.fromarray(pixels.astype(np.uint8), "L").save(root / f"img{i:02d}.png", compress_level=compress_level)
        rows.append({"qid": f"q{i}", "image_id": f"img{i:02d}", "image_path": f"img{i:02d}.png", "source": "test",
                     "image_type": "MRI - Brain", "category": "abnormality", "polarity": "single",
                     "pair_id": f"img{i:02d}:abnormality", "qa_type": "abnormality", "question": "Is there any abnormality in this image?",
                     "answer": "yes" if abnormal else "no"})
    return pd.DataFrame(rows)


def test_a_file_size_that_follows_the_answer_is_a_shortcut_and_uncompressed_files_carry_none(tmp_path: Path):
    for level in (6, 0):
        (tmp_path / str(level)).mkdir()
    compressed = file_shortcuts(_abnormality_set(tmp_path / "6", 6), tmp_path / "6")["by_category"]["abnormality"]
    assert compressed["random"] == 50.0 and compressed["text"] <= 60.0
    assert compressed["size"] >= 90.0  # the text alone says nothing; with the file size it answers
    stored = file_shortcuts(_abnormality_set(tmp_path / "0", 0), tmp_path / "0")["by_category"]["abnormality"]
    assert stored["size"] <= 60.0 and stored["storage"] <= 60.0  # one size for every file: nothing to key on


def _modality_set(root: Path) -> pd.DataFrame:
    """Two sources of one modality each (source A all X-ray, B all CT), pairs balanced over texts: the source
    names the modality; the file sizes (one per source) add nothing to it."""
    rows = []
    for i in range(40):
        source, truth, adversary = ("A", "X-ray", "CT") if i < 20 else ("B", "CT", "X-ray")
        Image.new("L", (32, 32), 100).save(root / f"img{i:02d}.png", compress_level=0)
        for polarity, value in (("gt", truth), ("adversarial", adversary)):
            rows.append({"qid": f"q{i}-{polarity}", "image_id": f"img{i:02d}", "image_path": f"img{i:02d}.png",
                         "source": source, "image_type": f"{truth} - Chest", "category": "modality",
                         "polarity": polarity, "pair_id": f"img{i:02d}:modality", "qa_type": "modality",
                         "question": f"Is this a {value} image?", "answer": "yes" if polarity == "gt" else "no"})
    return pd.DataFrame(rows)


def test_the_file_size_is_judged_beyond_the_source_it_is_taken_within(tmp_path: Path):
    """The size quintile is keyed within the source, so its table knows the source: here it names the modality
    (100% of pairs against the 50 a fixed table wins on two values), and the headline margin, size over the better of the text and
    the source, is 0: the file size itself gave nothing away."""
    from probmed.benchmark.audit.report import file_size_margins

    shortcuts = file_shortcuts(_modality_set(tmp_path), tmp_path)
    modality = shortcuts["by_category"]["modality"]
    assert modality["text"] == 50.0 and modality["source"] == 100.0 and modality["size"] == 100.0
    assert file_size_margins({"file_shortcuts": shortcuts}) == {"audit_file_size_margin_modality": 0.0}
