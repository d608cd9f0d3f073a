"""The lung field located on each chest radiograph: zones against a by-eye reading of 68 films (31 AP/portable),
pleural positions, the one-box-per-label rule, the fallback when no lung is found, and (issue 38) lung bases and
asked positions against 120 more films read by eye."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from probmed.benchmark.curation import lung_field
from probmed.benchmark.curation.lung_field import FALLBACK_FRAMES, SIZE, LungField, locate, locate_file, read_gray
from probmed.benchmark.curation.positions import Box, place_box, unsure
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


# --- issue 38: lung fields and asked positions against 120 films read by eye (tests/fixtures/cxr_fields) ---------

FIELDS = FIXTURES.parent / "cxr_fields" / "fields.json"


@pytest.fixture(scope="module")
def read_by_eye(shared_data: Path) -> list[tuple[dict, np.ndarray]]:
    """(film as read by eye, the film at SIZE px) for every film of the fixture."""
    films = json.loads(FIELDS.read_text())["films"]
    return [(film, read_gray(_image(shared_data, film["image"]))) for film in films]


def _base_errors(read_by_eye: list) -> np.ndarray:
    """|located base - the eye's base| per lung, on films where both lungs were located."""
    errors = []
    for film, gray in read_by_eye:
        field = locate(gray, film["view"])
        for side in ("right", "left"):
            if field.fallback is None and film[f"{side}_bottom"] is not None:
                errors.append(abs(field.lung(side).bottom - film[f"{side}_bottom"]))
    return np.array(errors)


def test_the_films_read_by_eye(shared_data: Path) -> None:
    films = json.loads(FIELDS.read_text())["films"]
    boxes = _boxes(shared_data)
    assert len(films) >= 100 and len({f["image"] for f in films}) == len(films)
    assert {"00019154_002.png", "00001787_008.png"} <= {f["image"] for f in films}  # the films issue 38 names
    for film in films:
        assert [b["label"] for b in film["boxes"]] == [label for label, _ in boxes[film["image"]]], film["image"]


def test_bases_refined_at_the_diaphragm_agree_better(read_by_eye: list, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base moved to the diaphragm's step lies closer to the eye's than the dark component's base."""
    after = _base_errors(read_by_eye)
    monkeypatch.setattr(lung_field, "BASE_SEARCH", (0.0, 0.0))  # the component's own base, as before issue 38
    before = _base_errors(read_by_eye)
    print(f"base |error| before {before.mean():.3f} ({(before <= 0.05).mean():.2f} within 0.05), "
          f"after {after.mean():.3f} ({(after <= 0.05).mean():.2f})")
    assert len(after) >= 170
    assert after.mean() <= 0.045 and (after <= 0.05).mean() >= 0.70  # measured 0.042 and 0.73 (before: 0.062, 0.65)
    assert before.mean() - after.mean() >= 0.015


def test_asked_positions_are_true_to_the_eye(shared_data: Path, read_by_eye: list) -> None:
    """A position is asked only where it is true at the goal rate (97%): a plausible field, a box within its zone."""
    boxes = _boxes(shared_data)
    asked = right = placed_right = placed_total = 0
    for film, gray in read_by_eye:
        field = locate(gray, film["view"])
        for eye, (label, box) in zip(film["boxes"], boxes[film["image"]], strict=True):
            placed = place_box(box, CXR14_LABELS[label], field=field)
            if eye["side"] == "heart" or placed.side is None or ("zone" in eye and eye["zone"] is None):
                continue  # the heart and the mediastinum, and boxes the film does not let the eye place
            ok = placed.side == eye["side"] and (placed.region is None or placed.zone == eye.get("zone"))
            placed_total += 1
            placed_right += ok
            if unsure(box, placed, field) is None:
                asked += 1
                right += ok
    print(f"placements true to the eye: {placed_right}/{placed_total}; asked: {right}/{asked}")
    assert asked >= 20 and right / asked >= 0.97, (right, asked)
    assert placed_right / placed_total <= 0.8  # without the checks the positions are far from the goal
