"""Controlled vocabularies shared by every stage.

Keeping them in one place means a hallucinated entity drawn by the question
generator, a label read by the scorer and a column in a report all spell the
same thing the same way.
"""

from __future__ import annotations

# Values a record may carry; only the "askable" ones produce questions. The askable ones are the paper's
# three modalities and four organs; the extended ones (issue 20) are what a source beyond the paper's scope
# (roco_extended) may record: ultrasound, and the organs the fine body regions of its captions merge into
# (curation/tables/organ_regions.csv). They produce no question until a question set asks them.
ASKABLE_MODALITIES: tuple[str, ...] = ("x-ray", "ct", "mri")
EXTENDED_MODALITIES: tuple[str, ...] = ASKABLE_MODALITIES + ("ultrasound",)
MODALITIES: tuple[str, ...] = EXTENDED_MODALITIES + ("other", "unknown")
ASKABLE_ORGANS: tuple[str, ...] = ("abdomen", "brain", "chest", "spine")
EXTENDED_ORGANS: tuple[str, ...] = ASKABLE_ORGANS + ("pelvis", "knee", "hand", "shoulder", "foot", "head and neck")
ORGANS: tuple[str, ...] = EXTENDED_ORGANS + ("other", "unknown")
# The values the paper's scope names (the LLM extractor's answer schema keeps to them).
PAPER_MODALITY_VALUES: tuple[str, ...] = ASKABLE_MODALITIES + ("other", "unknown")
PAPER_ORGAN_VALUES: tuple[str, ...] = ASKABLE_ORGANS + ("other", "unknown")

POLARITIES: tuple[str, ...] = ("gt", "adversarial", "single")
LABELS: tuple[str, ...] = ("yes", "no", "refusal", "unparsed")

# The original release's image_type strings: "X-ray - Chest", "CT Scan - Brain", "MRI - Spine".
MODALITY_TYPE_NAMES: dict[str, str] = {"x-ray": "X-ray", "ct": "CT Scan", "mri": "MRI"}
ORGAN_TYPE_NAMES: dict[str, str] = {
    "abdomen": "Abdomen",
    "brain": "Brain",
    "chest": "Chest",
    "spine": "Spine",
}
# How a value is spoken in a question ("Is this an X-ray image?").
MODALITY_QUESTION_NAMES: dict[str, str] = {"x-ray": "X-ray", "ct": "CT scan", "mri": "MRI"}
ORGAN_QUESTION_NAMES: dict[str, str] = {
    "abdomen": "abdomen",
    "brain": "brain",
    "chest": "chest",
    "spine": "spine",
}


def image_type(modality: str, organ: str) -> str:
    """The original release's image_type string, e.g. ``"X-ray - Chest"``.

    Records whose modality or organ is not askable get ``"Other - Other"`` style
    names so they are still grouped, never silently merged with a real type.
    """
    mod = MODALITY_TYPE_NAMES.get(modality, modality.capitalize() if modality else "Unknown")
    org = ORGAN_TYPE_NAMES.get(organ, organ.capitalize() if organ else "Unknown")
    return f"{mod} - {org}"
