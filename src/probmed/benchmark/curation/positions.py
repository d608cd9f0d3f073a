"""Positional reasoning: a ChestX-ray14 box -> a position a radiologist would accept.

Boxes are pixels of the frontal image (frame W x H, default 1024); the image's
LEFT is the PATIENT'S RIGHT (radiological convention).

Zones are fractions of the **lung field**, not of the film: the lungs fill only
part of a radiograph (apices near the top, costophrenic angles well above the
bottom edge). The lung field comes from an anatomical frame (``LUNG_FIELD``):
where the lungs lie on a centred frontal radiograph, read by eye from the curated
ChestX-ray14 images (apices at ~0.10 H, lung bases at ~0.76 H; right lung
0.10-0.46 W, left lung 0.54-0.90 W, mediastinum 0.44-0.56 W: a box centred
beside it is hilar, not mediastinal). Per-image
estimates by thresholding and profile registration were tried and rejected: they
failed on a third of the images (portable films, tight crops, dark abdomens). The
frame's zones were checked by eye on rendered boxes kept as test fixtures
(tests/fixtures/cxr_positions).

Rules, applied in order:

1. **Cardiac findings** (cardiomegaly, pericardial effusion) are the heart:
   position ``cardiac silhouette``, never a lung zone (and no position question:
   the position of an enlarged heart is the heart).
2. **Mediastinal findings**: a box of a condition that can sit in the
   mediastinum (mass, nodule, lymphadenopathy, aneurysm, hernia, ...) whose
   centre lies in the mediastinal band and whose width is under 0.3 W is in the
   ``mediastinum``.
3. **Side**: ``both`` when the box covers at least a quarter of each lung's width
   *and* the condition can be bilateral (effusion, atelectasis, infiltration,
   edema, pneumonia, ...; never a single mass, nodule or pneumothorax);
   otherwise the lung holding the box centre.
4. **Zone**: the box centre's height in the lung field, in thirds
   (upper / middle / lower); a box covering at least half of every zone is the
   whole lung.
5. **Extent**: every (side, zone) cell the box reaches (at least 15% of the
   cell's height and of its width), plus the mediastinum when the box covers half
   of it. A hallucinated position never touches the extent.

Phrases: ``"right lower lung zone"``, ``"both lower lung zones"``, ``"left lung"``,
``"both lungs"``, ``"mediastinum"``, ``"cardiac silhouette"``
(vocabularies.cxr_position).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from probmed.benchmark.curation.vocabularies import cxr_position

# The anatomical frame, in fractions of the frontal image (see module docstring).
LUNG_FIELD: dict[str, Any] = {"top": 0.10, "bottom": 0.76, "right": (0.10, 0.46), "left": (0.54, 0.90)}
MEDIASTINUM = (0.44, 0.56)
MEDIASTINAL_MAX_WIDTH = 0.30
BILATERAL_MIN_COVER = 0.25  # of each lung's width
WHOLE_LUNG_MIN_COVER = 0.5  # of every zone's height
EXTENT_MIN_COVER = 0.15
ZONES: tuple[str, ...] = ("upper", "middle", "lower")
SIDES: tuple[str, ...] = ("right", "left")

CARDIAC_CONDITIONS = frozenset({"cardiomegaly", "pericardial effusion", "cardiomyopathy"})
MEDIASTINAL_CONDITIONS = frozenset(
    {"mass", "nodule", "tumor", "lymphadenopathy", "aortic aneurysm", "aneurysm", "widened mediastinum",
     "pneumomediastinum", "hernia", "lung cancer"}
)
BILATERAL_CONDITIONS = frozenset(
    {"atelectasis", "consolidation", "edema", "effusion", "emphysema", "fibrosis", "infiltration", "pneumonia",
     "pleural thickening", "covid-19 pneumonia", "ground-glass opacity", "opacity", "tuberculosis", "bronchiectasis"}
)


@dataclass(frozen=True)
class Box:
    """A bounding box in pixels: top-left corner, width and height."""

    x: float
    y: float
    w: float
    h: float

    def scaled(self, factor: float) -> "Box":
        return Box(self.x * factor, self.y * factor, self.w * factor, self.h * factor)


@dataclass(frozen=True)
class Placement:
    """Where a box lies: its phrase and every cell it reaches."""

    position: str
    extent: frozenset[str]  # "right:upper" ... "left:lower", "mediastinum", "heart"


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def zone_bounds() -> list[tuple[str, float, float]]:
    """The upper, middle and lower lung zones as (zone, top, bottom) fractions of the image height."""
    top, bottom = LUNG_FIELD["top"], LUNG_FIELD["bottom"]
    step = (bottom - top) / 3
    return [(z, top + i * step, top + (i + 1) * step) for i, z in enumerate(ZONES)]


def _zone_of(cy: float) -> str:
    for zone, _, hi in zone_bounds():
        if cy < hi:
            return zone
    return ZONES[-1]


def _reaches(a0: float, a1: float, lo: float, hi: float) -> bool:
    """A box [a0, a1] reaches a cell [lo, hi] on one axis: a real share of the cell, or half of the box."""
    ov = _overlap(a0, a1, lo, hi)
    return ov > 0 and ov >= min(EXTENT_MIN_COVER * (hi - lo), 0.5 * (a1 - a0))


def _extent(x0: float, x1: float, y0: float, y1: float) -> set[str]:
    cells = set()
    for side in SIDES:
        # the outer lung edge reaches the film edge (a box outside the frame still belongs to its side)
        lo, hi = (0.0, 0.5) if side == "right" else (0.5, 1.0)
        if not _reaches(x0, x1, lo, hi):
            continue
        for zone, zlo, zhi in zone_bounds():
            # the outer zones reach the film edges (apices, costophrenic recesses, effusions)
            zlo = 0.0 if zone == ZONES[0] else zlo
            zhi = 1.0 if zone == ZONES[-1] else zhi
            if _reaches(y0, y1, zlo, zhi):
                cells.add(f"{side}:{zone}")
    m0, m1 = MEDIASTINUM
    if _overlap(x0, x1, m0, m1) >= 0.5 * (m1 - m0):
        cells.add("mediastinum")
    return cells


def place_box(box: Box, condition: str, width: float = 1024.0, height: float = 1024.0) -> Placement:
    """The position phrase and extent of a box of ``condition`` (rules in the module docstring)."""
    if box.w <= 0 or box.h <= 0:
        raise ValueError(f"box {box} has no area")
    x0, x1 = box.x / width, (box.x + box.w) / width
    y0, y1 = box.y / height, (box.y + box.h) / height
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    extent = _extent(x0, x1, y0, y1)
    if condition in CARDIAC_CONDITIONS:
        return Placement(cxr_position("heart", None), frozenset(extent | {"heart", "mediastinum"}))
    m0, m1 = MEDIASTINUM
    if condition in MEDIASTINAL_CONDITIONS and m0 <= cx <= m1 and (x1 - x0) < MEDIASTINAL_MAX_WIDTH:
        return Placement(cxr_position("mediastinum", None), frozenset(extent | {"mediastinum"}))
    covers = {s: _overlap(x0, x1, *LUNG_FIELD[s]) / (LUNG_FIELD[s][1] - LUNG_FIELD[s][0]) for s in SIDES}
    if condition in BILATERAL_CONDITIONS and min(covers.values()) >= BILATERAL_MIN_COVER:
        side = "both"
    else:
        side = "right" if cx < 0.5 else "left"  # image left = patient right
    whole = all(_overlap(y0, y1, lo, hi) >= WHOLE_LUNG_MIN_COVER * (hi - lo) for _, lo, hi in zone_bounds())
    zone = None if whole else _zone_of(cy)
    return Placement(cxr_position(side, zone), frozenset(extent))


def box_position(box: Box, condition: str, width: float = 1024.0, height: float = 1024.0) -> str:
    """The patient-oriented phrase for a box, e.g. ``"right lower lung zone"``."""
    return place_box(box, condition, width, height).position
