"""Positional reasoning on real ChestX-ray14 boxes: radiological left-right convention."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from probmed.benchmark.curation.positions import Box, box_position, box_side, box_zone
from probmed.benchmark.curation.vocabularies import CXR_POSITIONS


def real_boxes(shared: Path) -> list[tuple[str, str, Box]]:
    with open(shared / "chestxray14" / "BBox_List_2017.csv", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    return [(r[0], r[1], Box(*map(float, r[2:6]))) for r in rows]


def test_known_real_boxes(shared_data: Path) -> None:
    boxes = {(n, l): b for n, l, b in real_boxes(shared_data)}
    # x = 225 px: the image's left half, i.e. the patient's RIGHT lung; centre y 586/1024 = 0.57
    assert box_position(boxes[("00013118_008.png", "Atelectasis")]) == "right middle lung zone"
    # x = 686..872 px: the image's right = patient's LEFT; centre y 288/1024 = 0.28
    assert box_position(boxes[("00014716_007.png", "Atelectasis")]) == "left upper lung zone"


def test_mirroring_a_real_box_flips_the_side(shared_data: Path) -> None:
    flipped = 0
    for _, _, b in real_boxes(shared_data):
        side = box_side(b)
        mirror = Box(1024 - b.x - b.w, b.y, b.w, b.h)
        expect = {"right": "left", "left": "right"}.get(side, side)
        if b.x + b.w / 2 == 512:
            continue
        assert box_side(mirror) == expect
        assert box_zone(mirror) == box_zone(b)
        flipped += side in ("left", "right")
    assert flipped > 700


def test_every_real_box_maps_into_the_fixed_vocabulary(shared_data: Path) -> None:
    positions = {box_position(b) for _, _, b in real_boxes(shared_data)}
    assert positions <= set(CXR_POSITIONS)
    assert len(positions) >= 10


def test_cardiomegaly_boxes_are_central_or_bilateral(shared_data: Path) -> None:
    sides = [box_side(b) for _, l, b in real_boxes(shared_data) if l == "Cardiomegaly"]
    assert len(sides) == 146
    assert sum(s in ("central", "bilateral") for s in sides) / len(sides) > 0.9


def test_degenerate_box() -> None:
    with pytest.raises(ValueError):
        box_position(Box(1, 1, 0, 5))
