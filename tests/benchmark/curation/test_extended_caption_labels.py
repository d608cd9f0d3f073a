"""The hand labels of roco-extended captions are well formed and cover what the extraction goals are measured on.

They grade the caption extractor on the new regions and ultrasound (issue 20):
ids and labels only, each id a real figure of ../shared/data/roco-extended,
about a third of the first sample kept aside ('heldout'), every region and ultrasound represented; a second
development sample ('dev2') drawn from the captions left, to estimate how rules tuned on 'dev' generalise.
"""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

MODALITIES = {"x-ray", "ct", "mri", "ultrasound", "other", "unknown"}
REGIONS = {"chest", "heart", "breast", "abdomen", "pelvis", "hip", "knee", "thigh_leg", "foot_ankle", "shoulder",
           "arm_elbow", "hand_wrist", "face", "neck", "brain", "spine", "scrotum", "other", "unknown"}


@pytest.fixture(scope="module")
def labels(repo_root):
    return json.loads((repo_root / "tests/fixtures/roco_extended_caption_labels.json").read_text())["labels"]


def test_every_label_is_a_real_figure_with_fields_of_the_documented_values(labels, shared_data):
    with open(shared_data / "roco-extended" / "metadata.csv", newline="", encoding="utf-8") as fh:
        ids = {row["roco_id"] for row in csv.DictReader(fh)}
    assert len({label["id"] for label in labels}) == len(labels) >= 150
    for label in labels:
        assert label["id"] in ids, label["id"]
        assert label["part"] in {"dev", "dev2", "heldout"} and label["modality"] in MODALITIES and label["region"] in REGIONS, label
        assert all(isinstance(label[k], bool) for k in ("organ_claimable", "multi_panel", "normal")), label
        for finding in label["findings"]:
            assert finding["condition"] == finding["condition"].strip().lower() and finding["condition"], label["id"]
            assert finding["position"] is None or finding["position"] == finding["position"].strip().lower(), label["id"]
        assert not (label["normal"] and label["findings"]), f"{label['id']}: normal yet with findings"


def test_the_labels_cover_ultrasound_and_every_new_region_in_both_parts(labels):
    parts = Counter(label["part"] for label in labels)
    assert 0.3 <= parts["heldout"] / (parts["heldout"] + parts["dev"]) <= 0.4
    for part in ("dev", "heldout"):
        mine = [label for label in labels if label["part"] == part]
        assert sum(label["modality"] == "ultrasound" for label in mine) >= 15, part
        regions = Counter(label["region"] for label in mine)
        for region in ("pelvis", "knee", "hand_wrist", "shoulder", "foot_ankle", "face", "neck"):
            assert regions[region] >= 3, (part, region)
    assert sum(len(label["findings"]) for label in labels) >= 200
    assert sum(f["position"] is not None for label in labels for f in label["findings"]) >= 150


def test_the_second_development_sample_is_fresh_and_spread_over_ultrasound_and_the_new_organs(labels):
    """dev2 shares no caption with the first sample and covers ultrasound and the new regions its groups hold."""
    dev2 = [label for label in labels if label["part"] == "dev2"]
    assert len(dev2) >= 60
    assert not {label["id"] for label in dev2} & {label["id"] for label in labels if label["part"] != "dev2"}
    assert sum(label["modality"] == "ultrasound" for label in dev2) >= 15
    regions = Counter(label["region"] for label in dev2)
    for region in ("pelvis", "knee", "hand_wrist", "shoulder", "face", "neck", "abdomen"):
        assert regions[region] >= 3, region
    assert sum(f["position"] is not None for label in dev2 for f in label["findings"]) >= 50
