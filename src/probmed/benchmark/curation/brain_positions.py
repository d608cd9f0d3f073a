"""Brain tumour boxes -> patient-oriented positions, and the imaging plane estimated from the pixels.

Rules (radiological convention: on axial and coronal slices the image's LEFT is the patient's RIGHT):

* A pituitary tumour sits in the sella: ``"sellar region"`` on any plane (no side). Suprasellar
  extension is not asserted: a box without a known plane and pixel spacing cannot show it.
* Otherwise a side is asserted only on an axial or coronal slice. The head's midline is its
  left-right mirror axis, found from the head outline (below). A box crossing the midline with at
  least ``MIDLINE_SHARE`` of its width on each side is ``"midline"``; a box that does not cross the
  midline (``SIDE_MARGIN``) is in one hemisphere: image left of the midline -> ``"right hemisphere"``,
  image right -> ``"left hemisphere"``. A box between the two (crossing the midline by less than
  ``MIDLINE_SHARE``) is in neither for sure: its position is withheld (issue 38: a position is asked
  only where the box lies within one region). A margin clear of the midline would withhold true
  hemispheres: of the 18 boxes checked by eye (tests/benchmark/curation/test_brain_positions.py) 2% of the width
  withheld 8, none crossing it withholds 5, all 13 kept are right.
* Sagittal or unknown plane: no position.

Plane estimate: the head outline (thresholded, holes filled, largest component) of an axial or
coronal slice is nearly mirror-symmetric; ``outline_symmetry`` finds the best intersection-over-union
of the outline with its mirror image over small rotations and axis shifts, and that axis is the
midline. The outline alone does not tell the planes apart (a lateral sagittal slice's oval reaches
0.95), so the plane is read mostly from what lies inside it: ``interior_symmetry`` is the rank
correlation of the head's pixels with their mirror image about that axis, the tumour box and its
mirror set aside (the tumour is the one asymmetry an axial or coronal slice is known to have). The
two hemispheres of an axial or coronal slice mirror each other; a sagittal slice (face in front,
cerebellum behind) does not. A slice is taken as axial/coronal only when its outline reaches
``SYMMETRIC`` and its interior ``MIRRORED``; otherwise the plane stays unknown and no side is asked.
Both cuts keep a margin below which every hand-labelled sagittal slice of the set falls (a side is
asserted rarely rather than wrongly): tests/fixtures/brain_planes.json labels every figshare slice,
benchmarks/plane_estimation.py measures the rule on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage as ndi
from scipy.stats import rankdata

from probmed.benchmark.curation.positions import Box

SYMMETRIC = 0.83  # outline IoU with its mirror: mid-range of the cuts (0.79-0.86) widening the margin at no calibration cost
MIRRORED = 0.54  # interior rank correlation with its mirror: every labelled sagittal slice misses a cut by >= 0.05
BLUR = 1.0  # GRID pixels of Gaussian smoothing before the interior is compared with its mirror
MIDLINE_SHARE = 0.25  # a box with >= this share of its width on each side of the midline is "midline"
SIDE_MARGIN = 0.0  # of the width: how far a hemisphere's box stays clear of the midline (0: it may touch, not cross)
GRID = 96  # pixels of the square the outline is computed on
ANGLES = tuple(sorted(range(-20, 21, 4), key=abs))  # degrees of head tilt searched, upright first
GOOD_ENOUGH = 0.95  # stop searching tilts once the outline is this symmetric
SHIFTS = 6  # pixels of axis shift searched around the outline's centre
PLANES = ("axial", "coronal", "sagittal")


@dataclass(frozen=True)
class Outline:
    """The head outline's mirror symmetry and where its midline runs (on the GRID square)."""

    symmetry: float
    angle: int  # degrees the outline was rotated to be mirror-symmetric about a vertical axis
    axis_x: float  # that axis, in GRID pixels of the rotated square
    mask: np.ndarray


def _grid_pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L").resize((GRID, GRID), Image.Resampling.BILINEAR), dtype=float)


def _rotate(mask: np.ndarray, angle: int) -> np.ndarray:
    return ndi.rotate(mask.astype(float), angle, reshape=False, order=0) > 0.5 if angle else mask.astype(bool)


def _mirror(a: np.ndarray, axis_x: float) -> np.ndarray:
    """``a`` reflected about the vertical line x = axis_x; columns reflected from outside the square are 0."""
    xs = np.arange(a.shape[1])
    src = np.round(2 * axis_x - xs).astype(int)
    ok = (src >= 0) & (src < a.shape[1])
    out = np.zeros_like(a)
    out[:, ok] = a[:, src[ok]]
    return out


def _box_mask(box: Box, width: float, height: float) -> np.ndarray:
    """The box as a boolean GRID x GRID mask (at least one pixel wide and high)."""
    mask = np.zeros((GRID, GRID), dtype=bool)
    x0, x1 = int(box.x / width * GRID), int(np.ceil((box.x + box.w) / width * GRID))
    y0, y1 = int(box.y / height * GRID), int(np.ceil((box.y + box.h) / height * GRID))
    mask[max(0, y0):max(y0 + 1, y1), max(0, x0):max(x0 + 1, x1)] = True
    return mask


def head_outline(image: Image.Image) -> np.ndarray:
    """Boolean GRID x GRID mask of the head: threshold, closing, holes filled, largest component."""
    pixels = _grid_pixels(image)
    mask = pixels > max(15.0, 0.35 * float(np.percentile(pixels, 99)))
    mask = ndi.binary_fill_holes(ndi.binary_closing(mask, iterations=2))
    labels, n = ndi.label(mask)
    if n == 0:
        return mask
    sizes = ndi.sum(mask, labels, range(1, n + 1))
    return labels == (1 + int(np.argmax(sizes)))


def _mirror_iou(mask: np.ndarray, axis_x: float) -> float:
    mirrored = _mirror(mask, axis_x)
    union = (mirrored | mask).sum()
    return float((mirrored & mask).sum() / union) if union else 0.0


def outline_symmetry(image: Image.Image) -> Outline:
    """The best mirror symmetry of the head outline over ANGLES and axis shifts."""
    mask = head_outline(image)
    best = Outline(0.0, 0, GRID / 2, mask)
    if not mask.any():
        return best
    for angle in ANGLES:
        if best.symmetry >= GOOD_ENOUGH:
            break
        rotated = _rotate(mask, angle)
        cols = np.where(rotated.any(axis=0))[0]
        if cols.size == 0:
            continue
        centre = (cols[0] + cols[-1]) / 2
        for axis_x in np.arange(centre - SHIFTS, centre + SHIFTS + 0.5, 1.0):
            iou = _mirror_iou(rotated, axis_x)
            if iou > best.symmetry:
                best = Outline(iou, angle, float(axis_x), mask)
    return best


def interior_symmetry(image: Image.Image, outline: Outline, box: Box | None = None) -> float:
    """Rank correlation of the head's (slightly smoothed) pixels with their mirror image about the outline's
    axis, inside the head and outside the tumour box and its mirror; 0 when too little is left to compare."""
    width, height = image.size
    pixels = _grid_pixels(image)
    if outline.angle:
        pixels = ndi.rotate(pixels, outline.angle, reshape=False, order=1)
    pixels = ndi.gaussian_filter(pixels, BLUR)
    head = _rotate(outline.mask, outline.angle)
    region = head & _mirror(head, outline.axis_x)
    if box is not None:
        tumour = _rotate(_box_mask(box, width, height), outline.angle)
        region &= ~(tumour | _mirror(tumour, outline.axis_x))
    if region.sum() < 10:
        return 0.0
    r = np.corrcoef(rankdata(pixels[region]), rankdata(_mirror(pixels, outline.axis_x)[region]))[0, 1]
    return float(r) if np.isfinite(r) else 0.0


def plane_shortfall(symmetry: float, interior: float) -> float:
    """By how much a slice misses being taken as axial/coronal: the larger shortfall of its outline below
    ``SYMMETRIC`` and its interior below ``MIRRORED`` (<= 0: taken; the margin a sagittal slice keeps)."""
    return max(SYMMETRIC - symmetry, MIRRORED - interior)


def estimate_plane(symmetry: float, interior: float) -> str:
    """``"axial/coronal"`` when the outline and the interior both mirror themselves about the midline, else
    ``"unknown"``."""
    return "axial/coronal" if plane_shortfall(symmetry, interior) <= 0 else "unknown"


def box_side(box: Box, width: float, height: float, outline: Outline) -> str | None:
    """Right hemisphere | left hemisphere | midline for a box on an axial or coronal slice; None: neither for sure."""
    box_mask = _box_mask(box, width, height)
    cols = np.where(_rotate(box_mask, outline.angle).any(axis=0))[0]
    if cols.size == 0:
        cols = np.where(box_mask.any(axis=0))[0]
    left, right = float(cols[0]), float(cols[-1] + 1)
    span = right - left
    on_left = max(0.0, min(right, outline.axis_x) - left)
    on_right = max(0.0, right - max(left, outline.axis_x))
    if span > 0 and min(on_left, on_right) >= MIDLINE_SHARE * span:
        return "midline"
    margin = SIDE_MARGIN * GRID
    if right <= outline.axis_x - margin:
        return "right hemisphere"  # image left = patient right
    if left >= outline.axis_x + margin:
        return "left hemisphere"
    return None


@dataclass(frozen=True)
class BrainPosition:
    """Where a brain finding lies (hemisphere or midline), with the plane and symmetry that decided it."""

    position: str | None
    plane: str  # the plane used: given by the source, estimated, or unknown
    symmetry: float | None  # the outline symmetry when it was measured
    withheld: str | None = None  # why a side was not asserted on an axial or coronal slice
    interior: float | None = None  # the interior symmetry when the plane was estimated from it


def brain_box_position(image_path: Path, box: Box, condition: str, plane: str | None = None) -> BrainPosition:
    """The position phrase of a brain tumour box (module docstring); plane None: estimate it."""
    if box.w <= 0 or box.h <= 0:
        raise ValueError(f"box {box} has no area")
    if condition == "pituitary tumor":
        return BrainPosition("sellar region", plane or "any", None)
    if plane == "sagittal":
        return BrainPosition(None, plane, None)
    with Image.open(image_path) as image:
        image.load()
        width, height = image.size
        outline = outline_symmetry(image)
        if plane in ("axial", "coronal"):
            used, interior = plane, None
        else:
            measured = interior_symmetry(image, outline, box)
            used, interior = estimate_plane(outline.symmetry, measured), round(measured, 4)
    symmetry = round(outline.symmetry, 4)
    if used == "unknown":
        return BrainPosition(None, used, symmetry, interior=interior)
    side = box_side(box, width, height, outline)
    why = None if side else "the box crosses the midline without straddling it: neither hemisphere for sure"
    return BrainPosition(side, used, symmetry, why, interior)
