"""Positional reasoning: a ChestX-ray14 box -> a patient-oriented position phrase.

Rules (box = x, y, w, h in pixels of the frontal image, frame size W x H,
default 1024; radiological convention: the image's LEFT is the PATIENT'S RIGHT):

* Side, from the box's horizontal extent relative to the midline band
  [0.45 W, 0.55 W]:
  - the box crosses the whole band (x0 < 0.45 W and x1 > 0.55 W): ``bilateral``
    when it is at least 0.5 W wide (it covers both lungs), else ``central``
    (heart, mediastinum);
  - otherwise by the box centre: centre < 0.5 W (image left) -> patient
    ``right``; centre >= 0.5 W (image right) -> patient ``left``.
* Vertical zone, from the box centre's height: < 0.40 H ``upper``,
  < 0.60 H ``middle``, else ``lower``.
* Phrase: ``"right lower lung zone"``, ``"bilateral upper lung zones"``,
  ``"central middle chest"`` (vocabularies.cxr_position), 12 values in all, so a
  hallucinated position is always a clean alternative.
"""

from __future__ import annotations

from dataclasses import dataclass

from probmed.benchmark.curation.vocabularies import cxr_position

MIDLINE_BAND = (0.45, 0.55)
BILATERAL_MIN_WIDTH = 0.5
ZONE_LIMITS = (0.40, 0.60)


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    def scaled(self, factor: float) -> "Box":
        return Box(self.x * factor, self.y * factor, self.w * factor, self.h * factor)


def box_side(box: Box, width: float = 1024.0) -> str:
    """Patient side of a box: right | left | bilateral | central."""
    x0, x1 = box.x / width, (box.x + box.w) / width
    lo, hi = MIDLINE_BAND
    if x0 < lo and x1 > hi:
        return "bilateral" if (x1 - x0) >= BILATERAL_MIN_WIDTH else "central"
    centre = (x0 + x1) / 2
    return "right" if centre < 0.5 else "left"  # image left = patient right


def box_zone(box: Box, height: float = 1024.0) -> str:
    """Vertical zone of a box centre: upper | middle | lower."""
    centre = (box.y + box.h / 2) / height
    if centre < ZONE_LIMITS[0]:
        return "upper"
    if centre < ZONE_LIMITS[1]:
        return "middle"
    return "lower"


def box_position(box: Box, width: float = 1024.0, height: float = 1024.0) -> str:
    """The patient-oriented phrase for a box, e.g. ``"right lower lung zone"``."""
    if box.w <= 0 or box.h <= 0:
        raise ValueError(f"box {box} has no area")
    return cxr_position(box_side(box, width), box_zone(box, height))
