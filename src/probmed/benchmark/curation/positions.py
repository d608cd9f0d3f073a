"""Positional reasoning: a ChestX-ray14 box -> a position a radiologist would accept.

Boxes are pixels of the frontal image (frame W x H, default 1024); the image's
LEFT is the PATIENT'S RIGHT (radiological convention).

Zones are thirds of **each lung's own height**, from its apex to its base, on the
lung field located on that film (``lung_field.locate``): on AP/portable films and
films that include the abdomen the diaphragm sits near 0.55-0.6 of the film's
height, where a fixed frame (bases at 0.76 H) called basal findings "middle".
Without a located field (``field=None``) the PA frame of ``lung_field`` is used.
The zones were checked by eye on rendered films kept as test fixtures
(tests/fixtures/cxr_zones; the older box renders in tests/fixtures/cxr_positions).

Rules, applied in order:

1. **Cardiac findings** (cardiomegaly, pericardial effusion) are the heart:
   position ``cardiac silhouette``, never a lung zone (and no position question:
   the position of an enlarged heart is the heart).
2. **Mediastinal findings**: a box of a condition that can sit in the
   mediastinum (mass, nodule, lymphadenopathy, aneurysm, hernia, ...) whose
   centre lies in the mediastinal band (the located midline +- 0.06 W) and whose
   width is under 0.3 W is in the ``mediastinum``.
3. **Side**: ``both`` when the box covers at least a quarter of each lung's width
   *and* the condition can be bilateral (effusion, atelectasis, infiltration,
   edema, pneumonia, ...; never a single mass, nodule or pneumothorax);
   otherwise the side of the midline holding the box centre.
4. **Zone**: the box centre's height in its lung, in thirds (upper / middle /
   lower; above the apex is upper, below the base lower); a box covering at least
   half of every zone is the whole lung.
5. **Pleural findings** (effusion, pneumothorax) are in the pleural space, not a
   lung zone: the side, plus ``apex`` when the box centre is in the upper zone,
   ``base`` when in the lower zone, and ``costophrenic angle`` for an effusion box
   in the lower zone that reaches the lung's base at its lateral half and is
   under half the lung's height; a box in the middle zone or over the whole lung
   is the side alone (``"right"``, ``"both sides"``).
6. **Extent**: every (side, zone) cell the box reaches (at least 15% of the
   cell's height and of its width), plus the mediastinum when the box covers half
   of it. A hallucinated position never touches the extent.
7. **One box per label**: ChestX-ray14 boxes one instance of each label, so a
   one-sided box of a condition that can be bilateral does not make the other
   lung free of it: those cells are ``Placement.unruled`` and the source adds
   them to the cells no hallucinated "no" may name (a single mass, nodule or
   pneumothorax box is the finding; the heart is always there).

Known well enough to ask (issue 38; ``unsure``): a placement becomes a position question only when
the lung field is plausible (``lung_field.implausible``: never a fallback) and the box lies in what
its phrase names with a margin: a one-sided box does not cross the located midline, and a box whose
phrase names a zone (or an apex or base) has its centre at least ``ZONE_MARGIN`` of a zone's height
inside that zone and ``ZONE_MIN_INSIDE`` of its height in it (the outer zones run to the film's
edge). Otherwise the finding keeps its condition and loses its position, with the reason in the
record (sources.chestxray14). Calibrated on 120 films read by eye (tests/fixtures/cxr_fields).

Phrases: ``"right lower lung zone"``, ``"both lower lung zones"``, ``"left lung"``,
``"mediastinum"``, ``"cardiac silhouette"`` (vocabularies.cxr_position);
``"right base"``, ``"left apex"``, ``"both costophrenic angles"``, ``"left"``
(vocabularies.pleural_position).
"""

from __future__ import annotations

from dataclasses import dataclass

from probmed.benchmark.curation.lung_field import Lung, LungField, fixed_field, implausible
from probmed.benchmark.curation.vocabularies import PLEURAL_CONDITIONS, cxr_position, pleural_position

MEDIASTINAL_HALF_WIDTH = 0.06  # the mediastinal band: the located midline +- this (fractions of W)
MEDIASTINAL_MAX_WIDTH = 0.30
BILATERAL_MIN_COVER = 0.25  # of each lung's width
WHOLE_LUNG_MIN_COVER = 0.5  # of every zone's height
EXTENT_MIN_COVER = 0.15
ANGLE_MAX_HEIGHT = 0.5  # of the lung's height: a taller basal effusion box is the base, not the angle
ANGLE_BASE_SLACK = 0.05  # of the film: a box reaching this close to the lung's base reaches the angle
ZONE_MARGIN = 0.25  # of a zone's height: an asked zone holds the box centre this far inside its borders
ZONE_MIN_INSIDE = 0.85  # of the box's height: an asked zone holds this much of the box
ZONES: tuple[str, ...] = ("upper", "middle", "lower")
SIDES: tuple[str, ...] = ("right", "left")
PA_FIELD = fixed_field("PA", "no lung field given: the PA frame")

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
    """Where a box lies: its phrase, every cell it reaches, and the cells one box cannot rule out."""

    position: str
    extent: frozenset[str]  # "right:upper" ... "left:lower", "mediastinum", "heart"
    unruled: frozenset[str] = frozenset()  # the other lung of a one-sided box of a bilateral-capable condition
    side: str | None = None  # "right", "left", "both"; None for the heart and the mediastinum
    zone: str | None = None  # the box centre's third of its lung; None: the whole lung, the heart, the mediastinum
    region: str | None = None  # what the phrase names within the side: a zone, apex, base, costophrenic angle; None: no part


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def zone_bounds(field: LungField = PA_FIELD, side: str = "right") -> list[tuple[str, float, float]]:
    """One lung's upper, middle and lower zones as (zone, top, bottom) fractions of the film height."""
    lung = field.lung(side)
    step = (lung.bottom - lung.top) / 3
    return [(z, lung.top + i * step, lung.top + (i + 1) * step) for i, z in enumerate(ZONES)]


def _zone_of(cy: float, bounds: list[tuple[str, float, float]]) -> str:
    for zone, _, hi in bounds:
        if cy < hi:
            return zone
    return ZONES[-1]


def _reaches(a0: float, a1: float, lo: float, hi: float) -> bool:
    """A box [a0, a1] reaches a cell [lo, hi] on one axis: a real share of the cell, or half of the box."""
    ov = _overlap(a0, a1, lo, hi)
    return ov > 0 and ov >= min(EXTENT_MIN_COVER * (hi - lo), 0.5 * (a1 - a0))


def _extent(x0: float, x1: float, y0: float, y1: float, field: LungField) -> set[str]:
    cells = set()
    mid = field.midline
    for side in SIDES:
        # the outer lung edge reaches the film edge (a box outside the field still belongs to its side)
        lo, hi = (0.0, mid) if side == "right" else (mid, 1.0)
        if not _reaches(x0, x1, lo, hi):
            continue
        for zone, zlo, zhi in zone_bounds(field, side):
            # the outer zones reach the film edges (apices, costophrenic recesses, effusions)
            zlo = 0.0 if zone == ZONES[0] else zlo
            zhi = 1.0 if zone == ZONES[-1] else zhi
            if _reaches(y0, y1, zlo, zhi):
                cells.add(f"{side}:{zone}")
    if _overlap(x0, x1, mid - MEDIASTINAL_HALF_WIDTH, mid + MEDIASTINAL_HALF_WIDTH) >= MEDIASTINAL_HALF_WIDTH:
        cells.add("mediastinum")
    return cells


def _lungs(field: LungField, side: str) -> list[Lung]:
    return [field.right, field.left] if side == "both" else [field.lung(side)]


def _box_zone(y0: float, y1: float, cy: float, side: str, field: LungField) -> str | None:
    """The zone of the box centre in its lung(s), or None when the box covers half of every zone (rule 4)."""
    sides = SIDES if side == "both" else (side,)
    bounds = [b for s in sides for b in zone_bounds(field, s)]
    if all(_overlap(y0, y1, lo, hi) >= WHOLE_LUNG_MIN_COVER * (hi - lo) for _, lo, hi in bounds):
        return None
    zones = [_zone_of(cy, zone_bounds(field, s)) for s in sides]
    # both lungs: the zone of the centre in a lung of the two lungs' mean heights
    return zones[0] if len(set(zones)) == 1 else _zone_of(cy, _mean_bounds(field))


def _mean_bounds(field: LungField) -> list[tuple[str, float, float]]:
    right, left = zone_bounds(field, "right"), zone_bounds(field, "left")
    return [(z, (a + c) / 2, (b + d) / 2) for (z, a, b), (_, c, d) in zip(right, left, strict=True)]


def _pleural_region(condition: str, zone: str | None, box: tuple[float, float, float, float], side: str,
                    field: LungField) -> str | None:
    """Apex, base or costophrenic angle of a pleural box in its zone (None: the side alone; rule 5)."""
    if zone == "upper":
        return "apex"
    if zone != "lower":
        return None
    x0, x1, y0, y1 = box
    if condition != "effusion":
        return "base"
    for lung in _lungs(field, side):
        lateral = (lung.x0, (lung.x0 + lung.x1) / 2) if lung is field.right else ((lung.x0 + lung.x1) / 2, lung.x1)
        if (y1 < lung.bottom - ANGLE_BASE_SLACK or _overlap(x0, x1, *lateral) <= 0
                or y1 - y0 > ANGLE_MAX_HEIGHT * (lung.bottom - lung.top)):
            return "base"
    return "costophrenic angle"


def place_box(box: Box, condition: str, width: float = 1024.0, height: float = 1024.0,
              field: LungField | None = None) -> Placement:
    """The position phrase, extent and unruled cells of a box of ``condition`` (rules in the module docstring)."""
    if box.w <= 0 or box.h <= 0:
        raise ValueError(f"box {box} has no area")
    field = field or PA_FIELD
    x0, x1 = box.x / width, (box.x + box.w) / width
    y0, y1 = box.y / height, (box.y + box.h) / height
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    extent = _extent(x0, x1, y0, y1, field)
    if condition in CARDIAC_CONDITIONS:
        return Placement(cxr_position("heart", None), frozenset(extent | {"heart", "mediastinum"}))
    if (condition in MEDIASTINAL_CONDITIONS and abs(cx - field.midline) <= MEDIASTINAL_HALF_WIDTH
            and (x1 - x0) < MEDIASTINAL_MAX_WIDTH):
        return Placement(cxr_position("mediastinum", None), frozenset(extent | {"mediastinum"}))
    covers = {s: _overlap(x0, x1, field.lung(s).x0, field.lung(s).x1) / (field.lung(s).x1 - field.lung(s).x0)
              for s in SIDES}
    if condition in BILATERAL_CONDITIONS and min(covers.values()) >= BILATERAL_MIN_COVER:
        side = "both"
    else:
        side = "right" if cx < field.midline else "left"  # image left = patient right
    zone = _box_zone(y0, y1, cy, side, field)
    unruled: frozenset[str] = frozenset()
    if side != "both":  # one box per label: a second mass or nodule is as possible as a second effusion
        other = "left" if side == "right" else "right"
        unruled = frozenset(f"{other}:{z}" for z in ZONES) - extent
    if condition in PLEURAL_CONDITIONS:
        region = _pleural_region(condition, zone, (x0, x1, y0, y1), side, field)
        return Placement(pleural_position(side, region), frozenset(extent), unruled, side, zone, region)
    return Placement(cxr_position(side, zone), frozenset(extent), unruled, side, zone, zone)


def box_position(box: Box, condition: str, width: float = 1024.0, height: float = 1024.0,
                 field: LungField | None = None) -> str:
    """The patient-oriented phrase for a box, e.g. ``"right lower lung zone"``."""
    return place_box(box, condition, width, height, field).position


def unsure(box: Box, placed: Placement, field: LungField, width: float = 1024.0, height: float = 1024.0) -> str | None:
    """Why a placement is not known well enough to become a question (module docstring), or None when it is."""
    reason = implausible(field)
    if reason is not None or placed.side is None:  # the heart and the mediastinum: the field's midline decides
        return reason
    x0, x1 = box.x / width, (box.x + box.w) / width
    if (placed.side == "right" and x1 > field.midline) or (placed.side == "left" and x0 < field.midline):
        return "the box crosses the midline"
    if placed.region is None or placed.zone is None:
        return None
    y0, y1 = box.y / height, (box.y + box.h) / height
    for side in SIDES if placed.side == "both" else (placed.side,):
        lo, hi = next((lo, hi) for z, lo, hi in zone_bounds(field, side) if z == placed.zone)
        margin = ZONE_MARGIN * (hi - lo)
        lo, hi = (0.0 if placed.zone == ZONES[0] else lo), (1.0 if placed.zone == ZONES[-1] else hi)  # to the edge
        inner = (lo + margin if placed.zone != ZONES[0] else lo, hi - margin if placed.zone != ZONES[-1] else hi)
        if not inner[0] <= (y0 + y1) / 2 <= inner[1] or _overlap(y0, y1, lo, hi) < ZONE_MIN_INSIDE * (y1 - y0):
            return f"the box is not within the {side} {placed.zone} zone with a margin"
    return None
