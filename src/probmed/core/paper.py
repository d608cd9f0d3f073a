"""Numbers the paper publishes, for tables that set ours beside them.

Table 1 of the paper (images per image type, 6,303 in all). The copy of the
paper kept in ../shared/reference lost the digits of four rows whose counts are
under 100 (Abdomen MRI, Chest MRI, Spine CT, Brain X-ray: 232 images together);
they are ``None`` here rather than guessed.
"""

from __future__ import annotations

PAPER_TOTAL_IMAGES = 6303
PAPER_TABLE1_IMAGES: dict[str, int | None] = {
    "MRI - Abdomen": None,
    "MRI - Brain": 566,
    "MRI - Chest": None,
    "MRI - Spine": 324,
    "CT Scan - Abdomen": 751,
    "CT Scan - Brain": 270,
    "CT Scan - Chest": 548,
    "CT Scan - Spine": None,
    "X-ray - Abdomen": 232,
    "X-ray - Brain": None,
    "X-ray - Chest": 3178,
    "X-ray - Spine": 202,
}
PAPER_SMALL_ROWS_IMAGES = PAPER_TOTAL_IMAGES - sum(v for v in PAPER_TABLE1_IMAGES.values() if v)  # 232


def paper_share(image_type: str) -> float | None:
    """The paper's share of images of an image type (None where its count is not known)."""
    n = PAPER_TABLE1_IMAGES.get(image_type)
    return None if n is None else n / PAPER_TOTAL_IMAGES
