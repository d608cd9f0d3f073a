"""Where the lungs lie on one frontal chest radiograph: apex, base and width of each lung.

Why: a fixed frame puts the lung bases at 0.76 of the film's height, but on AP/portable
films and films that include the abdomen the diaphragm sits near 0.55-0.6 H, so basal
findings came out "middle". Zones are therefore thirds of each lung's own height, from
its apex to its base, located on the film itself.

Method (classical, no model): the image is read at 128 px, smoothed, and its darkest
part inside the body is taken as aerated lung (a threshold between the lung's and the
soft tissue's grey levels, Otsu's, on the film's central part). Components touching the
film's edge widely are air outside the patient; the largest remaining component in each
half of the film is that side's lung. A lung's apex is the top of its component and its
base the lowest row the component keeps a real width on (the costophrenic recess is a
thin sliver below the dome); the mediastinum lies between the two lungs' medial edges.

Base refined at the diaphragm (issue 38): a lung's lower part is greyer than its upper part (the
domes, the breasts, and often the very disease that was boxed), so the dark component often stops
short of the base (by-eye bases of 120 films, tests/fixtures/cxr_fields: the component's base lay
0.06 of the height above the eye's on average). The base is therefore moved to the strongest
dark-to-bright step of the lung's lateral half (the lung meeting the hemidiaphragm) within
``BASE_SEARCH`` of the component's base; the heart's border, medial, is not searched.

Plausible (``implausible``): a field is used for positions only when both lungs were located, their
apices and bases agree between the sides, the bases lie low enough and each lung is tall enough;
otherwise the record's positions are withheld (curation.positions, docs/benchmark/positions.md).

Fallback, with its reason recorded (``LungField.fallback``): a side that is not found
(white-out, a large effusion, a tight crop) is the other side mirrored; when neither
side is found, or the located field is implausible, the frame of the film's view
(``FALLBACK_FRAMES``, AP and PA medians of the located fields) is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

SIZE = 128  # the film is read at this size: the lungs are large, and 128 px locates them 4x faster than 256
SMOOTH_SIGMA = 0.75  # pixels at SIZE
MIN_LUNG_AREA = 0.012  # of the film: smaller dark blobs are not a lung
EDGE_TOUCH_MAX = 0.03  # a component with more of its outline on the film edge is air outside the patient
BASE_MIN_WIDTH = 0.35  # a lung's base is the lowest row still this share of the lung's widest row
MAX_LUNG_AREA = 0.25
MIN_FILL = 0.35  # of the component's bounding box: a lung is compact, a leak into soft tissue is not
MIDLINE_SLACK = 0.08  # a lung may cross the film's centre by this much (rotation, a shifted mediastinum)
MIN_HEIGHT, MAX_APEX, MIN_BASE, MAX_BASE = 0.25, 0.45, 0.40, 0.92  # a plausible lung, fractions of the height
BASE_SEARCH = (0.03, 0.25)  # the diaphragm is searched this far above and below the component's base
BASE_STEP_BAND = 0.05  # rows (fraction of the height) averaged on each side of a candidate base
BASE_LATERAL = 0.5  # the lateral share of a lung's width the diaphragm step is read on (the heart is medial)
# A field is plausible for positions when (fractions of the height) both lungs were located and:
PLAUSIBLE_BASE_GAP = 0.10  # the two bases differ by at most this,
PLAUSIBLE_APEX_GAP = 0.08  # the two apices by at most this,
PLAUSIBLE_MIN_BASE = 0.60  # both bases lie at least this low (higher ones were nearly all short of the eye's),
PLAUSIBLE_MIN_HEIGHT = 0.35  # and each lung is at least this tall.
THRESHOLD_PERCENTILES: tuple[float, ...] = tuple(float(q) for q in range(10, 62, 3))
# Where lungs lie when none is found on the film, per view: (top, bottom, right lung x0-x1, left lung x0-x1).
FALLBACK_FRAMES: dict[str, tuple[float, float, tuple[float, float], tuple[float, float]]] = {
    "PA": (0.10, 0.76, (0.10, 0.46), (0.54, 0.90)),
    "AP": (0.10, 0.65, (0.10, 0.46), (0.54, 0.90)),
}
SIDES: tuple[str, ...] = ("right", "left")  # the patient's right is the image's left


@dataclass(frozen=True)
class Lung:
    """One lung in fractions of the film: apex and base heights, lateral and medial columns."""

    top: float
    bottom: float
    x0: float  # the lung's leftmost column in the image
    x1: float


@dataclass(frozen=True)
class LungField:
    """Both lungs of one film, and why a fallback was used (None when both were located)."""

    right: Lung
    left: Lung
    fallback: str | None = None

    def lung(self, side: str) -> Lung:
        return self.right if side == "right" else self.left

    @property
    def midline(self) -> float:
        """The mediastinum's centre: halfway between the two lungs' medial edges."""
        return (self.right.x1 + self.left.x0) / 2


def fixed_field(view: str | None, reason: str) -> LungField:
    """The frame of a view (PA when unknown): the fallback when no lung is found on the film."""
    top, bottom, r, left = FALLBACK_FRAMES.get(str(view).upper(), FALLBACK_FRAMES["PA"])
    return LungField(Lung(top, bottom, *r), Lung(top, bottom, *left), reason)


def read_gray(path: Path) -> np.ndarray:
    """The film as floats 0-1 at SIZE x SIZE (box filter from the 1024 px original)."""
    with Image.open(path) as im:
        gray = im.convert("L")
        if gray.size != (SIZE, SIZE):
            gray = gray.resize((SIZE, SIZE), Image.Resampling.BOX)
        return np.asarray(gray, dtype=np.float64) / 255.0


def _otsu(values: np.ndarray) -> float:
    hist, edges = np.histogram(values, bins=64, range=(0.0, 1.0))
    p = hist / max(hist.sum(), 1)
    omega, mu = np.cumsum(p), np.cumsum(p * (edges[:-1] + edges[1:]) / 2)
    between = (mu[-1] * omega - mu) ** 2 / np.maximum(omega * (1 - omega), 1e-12)
    return float(edges[int(np.argmax(between)) + 1])


def _normalised(img: np.ndarray) -> np.ndarray:
    """Smoothed and stretched to the 1st-99th percentiles (films differ in exposure and windowing)."""
    smooth = ndimage.gaussian_filter(img, SMOOTH_SIGMA)
    lo, hi = np.percentile(smooth, (1, 99))
    return np.clip((smooth - lo) / max(hi - lo, 1e-6), 0, 1)


def _edge_share(component: np.ndarray, where: tuple[slice, slice]) -> float:
    """The share of a component's outline (the component cut to its bounding box ``where``) on the film's edge."""
    outline = component & ~ndimage.binary_erosion(component)
    rows, cols = where
    on_edge = 0
    on_edge += int(outline[0, :].sum()) if rows.start == 0 else 0
    on_edge += int(outline[-1, :].sum()) if rows.stop == SIZE else 0
    on_edge += int(outline[:, 0].sum()) if cols.start == 0 else 0
    on_edge += int(outline[:, -1].sum()) if cols.stop == SIZE else 0
    return on_edge / max(int(outline.sum()), 1)


def _lung_of(component: np.ndarray, where: tuple[slice, slice]) -> Lung:
    """The lung a component (cut to its bounding box ``where``) outlines, in fractions of the film."""
    rows, cols = where
    widths = component.sum(axis=1)
    wide = np.flatnonzero(widths >= BASE_MIN_WIDTH * widths.max())
    return Lung(rows.start / SIZE, (rows.start + wide[-1] + 1) / SIZE, cols.start / SIZE, cols.stop / SIZE)


def _side_of(component: np.ndarray, where: tuple[slice, slice], lung: Lung) -> str | None:
    """The side a component is a plausible lung of, or None (outside air, soft tissue, a bowel loop)."""
    area = int(component.sum())
    height, width = lung.bottom - lung.top, lung.x1 - lung.x0
    if not MIN_LUNG_AREA * SIZE * SIZE <= area <= MAX_LUNG_AREA * SIZE * SIZE:
        return None
    if area < MIN_FILL * height * width * SIZE * SIZE:
        return None
    if not (height >= MIN_HEIGHT and lung.top <= MAX_APEX and MIN_BASE <= lung.bottom <= MAX_BASE):
        return None
    side = None
    if lung.x1 <= 0.5 + MIDLINE_SLACK and lung.x0 < 0.5:
        side = "right"
    elif lung.x0 >= 0.5 - MIDLINE_SLACK and lung.x1 > 0.5:
        side = "left"
    return side if side is not None and _edge_share(component, where) <= EDGE_TOUCH_MAX else None


def _find_lungs(smooth: np.ndarray) -> dict[str, Lung]:
    """Per side, the largest plausible dark component over a range of thresholds.

    Why a range: one threshold either misses a grey lung or lets a dark one leak into the chest
    wall; the lung is the largest dark region that stays a plausible lung as the threshold rises."""
    c0, c1 = int(0.1 * SIZE), int(0.9 * SIZE)
    best: dict[str, tuple[int, Lung]] = {}
    for q in THRESHOLD_PERCENTILES:
        mask = ndimage.binary_opening(smooth < np.percentile(smooth[c0:c1, c0:c1], q), iterations=1)
        labels, n = ndimage.label(mask)
        areas = np.bincount(labels.ravel(), minlength=n + 1)
        for k, where in enumerate(ndimage.find_objects(labels), start=1):
            if where is None or areas[k] < MIN_LUNG_AREA * SIZE * SIZE:
                continue
            comp = labels[where] == k
            lung = _lung_of(comp, where)
            side = _side_of(comp, where, lung)
            if side is not None and (side not in best or areas[k] > best[side][0]):
                best[side] = (int(areas[k]), lung)
    return {side: lung for side, (_, lung) in best.items()}


def _refined_base(smooth: np.ndarray, lung: Lung, side: str) -> Lung:
    """The lung with its base moved to the strongest dark-to-bright step of its lateral half near the component's base."""
    x0, x1 = int(lung.x0 * SIZE), int(np.ceil(lung.x1 * SIZE))
    cols = max(2, int(BASE_LATERAL * (x1 - x0)))
    profile = smooth[:, x0:x0 + cols] if side == "right" else smooth[:, x1 - cols:x1]  # the patient's right: image left
    rows = profile.mean(axis=1)
    band = max(2, int(BASE_STEP_BAND * SIZE))
    base = int(round(lung.bottom * SIZE))
    lo = max(band, base - int(BASE_SEARCH[0] * SIZE))
    hi = min(SIZE - band, base + int(BASE_SEARCH[1] * SIZE))
    if hi < lo:
        return lung
    steps = [rows[y:y + band].mean() - rows[y - band:y].mean() for y in range(lo, hi + 1)]
    return Lung(lung.top, (lo + int(np.argmax(steps))) / SIZE, lung.x0, lung.x1)


def implausible(field: LungField) -> str | None:
    """Why a lung field cannot carry positions (a fallback, or lungs no film shows), or None when it can."""
    if field.fallback is not None:
        return f"lung field fell back ({field.fallback})"
    r, left = field.right, field.left
    checks = (
        (abs(r.bottom - left.bottom) > PLAUSIBLE_BASE_GAP, "the two lung bases disagree"),
        (abs(r.top - left.top) > PLAUSIBLE_APEX_GAP, "the two lung apices disagree"),
        (min(r.bottom, left.bottom) < PLAUSIBLE_MIN_BASE, "a lung base lies implausibly high"),
        (min(r.bottom - r.top, left.bottom - left.top) < PLAUSIBLE_MIN_HEIGHT, "a lung is implausibly short"),
    )
    failed = [why for bad, why in checks if bad]
    return f"lung field implausible: {', '.join(failed)}" if failed else None


def _mirror(lung: Lung) -> Lung:
    return Lung(lung.top, lung.bottom, 1 - lung.x1, 1 - lung.x0)


def locate(img: np.ndarray, view: str | None = None) -> LungField:
    """The lung field of a film (SIZE x SIZE floats); a side not found is the other side mirrored."""
    smooth = _normalised(img)
    lungs = {side: _refined_base(smooth, lung, side) for side, lung in _find_lungs(smooth).items()}
    if not lungs:
        return fixed_field(view, "no lung found on the film: frame of the view")
    if len(lungs) == 1:
        (side, lung), = lungs.items()
        other = "left" if side == "right" else "right"
        lungs[other] = _mirror(lung)
        return LungField(lungs["right"], lungs["left"], f"{other} lung not found: mirrored from the {side}")
    return LungField(lungs["right"], lungs["left"])


@lru_cache(maxsize=4096)
def locate_file(path: Path, view: str | None = None) -> LungField:
    """The lung field of the film at ``path`` (original or thumbnail: read at SIZE px).

    Cached: the source files are read-only, and a curation run or a test session reads them more than once."""
    return locate(read_gray(path), view)
