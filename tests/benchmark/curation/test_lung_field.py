"""The lung field located on each chest radiograph: zones against a by-eye reading of 68 films (31 AP/portable),
pleural positions, the one-box-per-label rule, and the fallback when no lung is found."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from probmed.benchmark.curation.lung_field import FALLBACK_FRAMES, SIZE, LungField, locate, locate_file
from probmed.benchmark.curation.positions import Box, place_box
from probmed.benchmark.curation.vocabularies import CXR14_LABELS, CXR_PLEURAL_POSITIONS

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cxr_zones"
GOAL = 0.90


def _image(shared: Path, name: str) -> Path:
    full = shared / "chestxray14" / "images" / name
    return full if full.is_file() else shared / "chestxray14" / "thumbnails_256" / name


def _boxes(shared: Path) -> dict[str, list[tuple[str, Box]]]:
    with open(shared / "chestxray14" / "BBox_List_2017.csv", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    out: dict[str, list[tuple[str, Box]]] = {}
    for r in rows:
        out.setdefault(r[0], []).append((r[1], Box(*map(float, r[2:6]))))
    return out


@pytest.fixture(scope="module")
def labelled(shared_data: Path) -> list[tuple[dict, dict, Box, LungField]]:
    """(film, by-eye box, box, located field) for every non-cardiac box of the labelled films."""
    doc = json.loads((FIXTURES / "zones.json").read_text())
    boxes = _boxes(shared_data)
    out = []
    for film in doc["films"]:
        field = locate_file(_image(shared_data, film["image"]), film["view"])
        for eye, (label, box) in zip(film["boxes"], boxes[film["image"]], strict=True):
            assert eye["label"] == label, film["image"]
            if "zones" in eye:
                out.append((film, eye, box, field))
    return out


def _agreement(labelled: list, located: bool) -> dict[str, float]:
    """Share of boxes whose side and zone the estimator gives as the eye did, all and per view."""
    hits: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for film, eye, box, field in labelled:
        placed = place_box(box, CXR14_LABELS[eye["label"]], field=field if located else None)
        ok = placed.side == eye["side"] and (placed.zone or "whole") in eye["zones"]
        for group in ("all", film["view"]):
            hits[group] += ok
            total[group] += 1
    return {group: hits[group] / total[group] for group in total}


def test_the_labelled_set_is_what_the_readme_says() -> None:
    doc = json.loads((FIXTURES / "zones.json").read_text())
    films = doc["films"]
    assert len(films) >= 60 and sum(f["view"] == "AP" for f in films) >= 20
    for film in films:
        assert (FIXTURES / film["image"]).is_file(), f"render of {film['image']} missing"
    assert sum(p.stat().st_size for p in FIXTURES.iterdir()) < 4 * 2**20


def test_zones_agree_with_the_eye(labelled: list) -> None:
    """The located field's zones agree with the by-eye reading on >= 90% of boxes, AP/portable films too."""
    after, before = _agreement(labelled, located=True), _agreement(labelled, located=False)
    print(f"zone agreement before (fixed frame) {before}, after (located field) {after}")
    assert len(labelled) >= 70
    assert after["all"] >= GOAL and after["AP"] >= GOAL and after["PA"] >= GOAL, after
    assert after["all"] > before["all"] + 0.05, (before, after)


def test_pleural_positions_agree_with_the_eye(labelled: list) -> None:
    pleural = [(eye, box, field) for _, eye, box, field in labelled if "pleural" in eye]
    assert len(pleural) >= 20
    for eye, box, field in pleural:
        placed = place_box(box, CXR14_LABELS[eye["label"]], field=field)
        words = placed.position.split(" ", 1)
        region = "side" if len(words) == 1 or placed.position == "both sides" else words[1]
        region = {"apices": "apex", "bases": "base", "costophrenic angles": "costophrenic angle"}.get(region, region)
        assert placed.position in CXR_PLEURAL_POSITIONS and region in eye["pleural"], (eye, placed)


def test_the_issue_films_get_basal_positions(shared_data: Path) -> None:
    """Issue 22: effusions on the hemidiaphragms of an AP film and of PA films called "middle" by the fixed frame."""
    boxes = _boxes(shared_data)
    expect = {  # film -> label -> accepted positions
        "00002395_007.png": {"Effusion": {"right base", "right costophrenic angle"}},
        "00011269_019.png": {"Effusion": {"left base", "left costophrenic angle"}, "Mass": {"left middle lung zone"}},
        "00008814_010.png": {"Effusion": {"both bases", "both costophrenic angles"},
                             "Infiltrate": {"both lower lung zones"}, "Atelectasis": {"both lower lung zones"}},
    }
    for name, by_label in expect.items():
        field = locate_file(_image(shared_data, name))
        assert field.fallback is None, (name, field)
        for label, box in boxes[name]:
            fixed = place_box(box, CXR14_LABELS[label])
            placed = place_box(box, CXR14_LABELS[label], field=field)
            assert placed.position in by_label[label], (name, label, placed, fixed)
            assert placed.zone == "lower" or label == "Mass"
    assert place_box(boxes["00002395_007.png"][0][1], "effusion").zone == "middle"  # the fixed frame's error


def test_one_box_per_label_leaves_the_other_lung_unruled() -> None:
    right_base = Box(150, 600, 200, 120)
    effusion = place_box(right_base, "effusion")
    assert effusion.unruled == {"left:upper", "left:middle", "left:lower"}
    # one box per label: a second nodule (or mass) on the other side is as possible as a second effusion
    assert place_box(right_base, "nodule").unruled == {"left:upper", "left:middle", "left:lower"}
    assert place_box(Box(200, 500, 620, 200), "effusion").unruled == frozenset()  # both sides: nothing left out


def test_pneumothorax_is_never_a_lung_zone_nor_bilateral() -> None:
    assert place_box(Box(150, 100, 250, 200), "pneumothorax").position == "right apex"
    assert place_box(Box(600, 150, 300, 700), "pneumothorax").position == "left"
    assert place_box(Box(200, 100, 620, 250), "pneumothorax").position in ("right apex", "left apex")


def test_fallback_when_no_lung_is_found() -> None:
    blank = np.full((SIZE, SIZE), 0.5)
    field = locate(blank, "AP")
    assert field.fallback is not None and "no lung found" in field.fallback
    assert field.right.bottom == FALLBACK_FRAMES["AP"][1]
    assert locate(blank, None).right.bottom == FALLBACK_FRAMES["PA"][1]


def test_one_lung_found_is_mirrored() -> None:
    """A white-out of one side: the other side's lung, mirrored."""
    img = np.full((SIZE, SIZE), 0.8)
    img[int(0.15 * SIZE):int(0.7 * SIZE), int(0.58 * SIZE):int(0.86 * SIZE)] = 0.2  # dark on the image's right: patient's left
    field = locate(img, "PA")
    assert field.fallback is not None and field.fallback.startswith("right lung not found")
    assert field.right.top == field.left.top and field.right.bottom == field.left.bottom
    assert abs(field.right.x0 - (1 - field.left.x1)) < 1e-9
