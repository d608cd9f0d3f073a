"""Brain tumour boxes -> positions, and the plane estimate measured on slices whose plane is known."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from probmed.benchmark.curation.brain_positions import (
    MIRRORED,
    brain_box_position,
    estimate_plane,
    interior_symmetry,
    outline_symmetry,
    plane_shortfall,
)
from probmed.benchmark.curation.positions import Box

PLANES = Path(__file__).resolve().parents[2] / "fixtures" / "brain_planes.json"
# Boxes rendered on their slices and checked by eye (image left = patient right): 12 BraTS T1c slices,
# 18 figshare axial/coronal slices. The two BraTS "midline" boxes hold a right-hemisphere tumour whose
# oedema crosses the midline (the box is the whole labelled tumour).
BY_EYE = {
    "brats_2013_pat0001_1_t1c_z047": "right hemisphere", "brats_2013_pat0001_1_t1c_z083": "right hemisphere",
    "brats_2013_pat0002_1_t1c_z082": "left hemisphere", "brats_2013_pat0002_1_t1c_z112": "left hemisphere",
    "brats_2013_pat0003_1_t1c_z078": "midline", "brats_2013_pat0003_1_t1c_z118": "right hemisphere",
    "brats_2013_pat0004_1_t1c_z095": "left hemisphere",
    "2035": "left hemisphere", "192": "right hemisphere", "20": "midline", "104": "right hemisphere",
    "249": "right hemisphere", "158": "midline", "1860": "left hemisphere", "2411": "right hemisphere",
    "53": "left hemisphere", "90": "left hemisphere", "2438": "left hemisphere",
}


def _box(row: dict) -> Box:
    return Box(*(float(v) for v in row["finding_boxes"].split(",")))


def _rows(shared: Path) -> dict[str, tuple[Path, dict]]:
    import csv

    out = {}
    for folder in ("figshare-brain-tumor", "brats2015-deepmedic-sample"):
        for row in csv.DictReader(open(shared / folder / "metadata.csv", newline="")):
            out[Path(row["file"]).stem] = (shared / folder / row["file"], row)
    return out


def test_boxes_checked_by_eye(shared_data: Path) -> None:
    """Every side asserted is the eye's; a box crossing the midline without straddling it is withheld (issue 38);
    a slice whose plane the estimate does not know gets no side."""
    rows = _rows(shared_data)
    kept = 0
    for stem, expected in BY_EYE.items():
        path, row = rows[stem]
        plane = row["view"].lower() or None
        got = brain_box_position(path, _box(row), row["findings"], plane)
        assert got.position in (expected, None), stem
        assert (got.position is None) == (got.withheld is not None or got.plane == "unknown"), stem
        kept += got.position is not None
    assert kept >= 13, kept  # 5 of the 18 cross the estimated midline by less than a quarter of their width (one
    # of them, 1860, an axial slice whose oedema spreads across a hemisphere, is not even taken as axial/coronal)


def test_pituitary_sagittal_and_bad_boxes(shared_data: Path) -> None:
    rows = _rows(shared_data)
    path, row = rows["924"]  # a pituitary tumour
    assert brain_box_position(path, _box(row), "pituitary tumor").position == "sellar region"
    path, row = rows["brats_2013_pat0001_1_t1c_z047"]
    assert brain_box_position(path, _box(row), "glioma", "sagittal").position is None
    with pytest.raises(ValueError, match="no area"):
        brain_box_position(path, Box(1, 1, 0, 5), "glioma")


def _symmetries(path: Path, box: Box) -> tuple[float, float]:
    with Image.open(path) as im:
        outline = outline_symmetry(im)
        return outline.symmetry, interior_symmetry(im, outline, box)


def _labelled(shared: Path, parts: set[str] | None = None) -> dict[str, list[tuple[float, float]]]:
    """(outline, interior) symmetry of the labelled figshare slices, by true plane."""
    rows = _rows(shared)
    seen: dict[str, list[tuple[float, float]]] = {"axial": [], "coronal": [], "sagittal": []}
    for lab in json.loads(PLANES.read_text())["labels"]:
        if parts is None or lab["part"] in parts:
            path, row = rows[Path(lab["file"]).stem]
            seen[lab["plane"]].append(_symmetries(path, _box(row)))
    return seen


def _sided(values: list[tuple[float, float]]) -> int:
    return sum(estimate_plane(o, i) == "axial/coronal" for o, i in values)


def test_plane_estimate_never_gives_a_sagittal_slice_a_side(shared_data: Path) -> None:
    """The first draw's test part (labelled after the first threshold was fixed)."""
    seen = _labelled(shared_data, {"test"})
    assert len(seen["sagittal"]) >= 15 and _sided(seen["sagittal"]) == 0
    sided = seen["axial"] + seen["coronal"]
    assert _sided(sided) / len(sided) >= 0.8


@pytest.mark.slow
def test_every_labelled_sagittal_slice_misses_a_cut_by_a_margin(shared_data: Path) -> None:
    """All 750 figshare slices are labelled: no sagittal one gets a side, each misses SYMMETRIC or MIRRORED by
    >= 0.05, and most axial/coronal slices keep theirs (issue 38: the outline rule took 12 sagittal slices for
    axial/coronal)."""
    seen = _labelled(shared_data)
    assert len(seen["sagittal"]) == 264 and _sided(seen["sagittal"]) == 0
    assert min(plane_shortfall(o, i) for o, i in seen["sagittal"]) >= 0.05
    sided = seen["axial"] + seen["coronal"]
    assert _sided(sided) / len(sided) >= 0.85


def test_round6_parasagittal_slices_get_no_side(shared_data: Path) -> None:
    """The sagittal slices by-eye round 6 found asked a side (outline symmetry 0.921-0.932, over the old cut of
    0.92): the interior does not mirror itself, so the plane stays unknown."""
    rows = _rows(shared_data)
    for stem in ("528", "691", "692", "840", "2928"):
        path, row = rows[stem]
        got = brain_box_position(path, _box(row), row["findings"])
        assert (got.position, got.plane) == (None, "unknown"), stem
        assert got.symmetry is not None and got.symmetry > 0.92, stem  # the outline alone took it for axial/coronal
        assert got.interior is not None and got.interior < MIRRORED - 0.05, stem


def test_brats_contrast_t1_slices_are_recognised_as_axial(shared_data: Path) -> None:
    """BraTS states its plane (the estimate is not used there); its contrast T1 slices, the sequence figshare
    holds, measure the estimate on skull-stripped axial slices. FLAIR slices, whose oedema fills much of a
    hemisphere, are rarely recognised (6 of 18): the estimate errs towards no side."""
    rows = _rows(shared_data)
    t1c = [_symmetries(path, _box(row)) for stem, (path, row) in rows.items() if "_t1c_" in stem]
    assert len(t1c) == 18 and _sided(t1c) / len(t1c) >= 0.6
