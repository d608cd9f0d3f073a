"""Controlled vocabularies shared by every stage.

Keeping them in one place means a hallucinated entity drawn by the question
generator, a label read by the scorer and a column in a report all spell the
same thing the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

# Values a record may carry; only the "askable" ones produce questions. The paper's scope is three
# modalities and four organs (PAPER_*: the paper profile of curation, the `paper` question set, the
# release-shaped synthetic sets); probmed asks beyond it (issue 20): ultrasound, and the organs the fine body
# regions of roco_extended's captions merge into (curation/tables/organ_regions.csv). A question about any
# askable value is truthful on any image: the field-of-view table blocks the organs an image may show.
PAPER_MODALITIES: tuple[str, ...] = ("x-ray", "ct", "mri")
PAPER_ORGANS: tuple[str, ...] = ("abdomen", "brain", "chest", "spine")
ASKABLE_MODALITIES: tuple[str, ...] = PAPER_MODALITIES + ("ultrasound",)
ASKABLE_ORGANS: tuple[str, ...] = PAPER_ORGANS + ("pelvis", "knee", "hand", "shoulder", "foot", "head and neck")
# What the extended caption profile records (the askable values: every organ it records is asked).
EXTENDED_MODALITIES: tuple[str, ...] = ASKABLE_MODALITIES
EXTENDED_ORGANS: tuple[str, ...] = ASKABLE_ORGANS
MODALITIES: tuple[str, ...] = EXTENDED_MODALITIES + ("other", "unknown")
ORGANS: tuple[str, ...] = EXTENDED_ORGANS + ("other", "unknown")



@dataclass(frozen=True)
class Scope:
    """The modalities and organs a question set asks about: its image types, and the values adversaries name."""

    name: str
    modalities: tuple[str, ...]
    organs: tuple[str, ...]


# extended: every askable value (the default set); paper: the paper's 3 x 4, for numbers comparable with its tables.
SCOPES: dict[str, Scope] = {
    "extended": Scope("extended", ASKABLE_MODALITIES, ASKABLE_ORGANS),
    "paper": Scope("paper", PAPER_MODALITIES, PAPER_ORGANS),
}
EXTENDED_SCOPE = SCOPES["extended"]

POLARITIES: tuple[str, ...] = ("gt", "adversarial", "single")
LABELS: tuple[str, ...] = ("yes", "no", "refusal", "unparsed")

# The original release's image_type strings: "X-ray - Chest", "CT Scan - Brain", "MRI - Spine".
# Ultrasound and the new organs follow the same pattern ("Ultrasound - Pelvis", "X-ray - Head and Neck").
MODALITY_TYPE_NAMES: dict[str, str] = {"x-ray": "X-ray", "ct": "CT Scan", "mri": "MRI", "ultrasound": "Ultrasound"}
ORGAN_TYPE_NAMES: dict[str, str] = {
    "abdomen": "Abdomen",
    "brain": "Brain",
    "chest": "Chest",
    "spine": "Spine",
    "pelvis": "Pelvis",
    "knee": "Knee",
    "hand": "Hand",
    "shoulder": "Shoulder",
    "foot": "Foot",
    "head and neck": "Head and Neck",
}
# How a value is spoken in a question ("Is this an X-ray image?").
MODALITY_QUESTION_NAMES: dict[str, str] = {"x-ray": "X-ray", "ct": "CT scan", "mri": "MRI", "ultrasound": "ultrasound"}
ORGAN_QUESTION_NAMES: dict[str, str] = {organ: organ for organ in ASKABLE_ORGANS}
# The paper's 12 image types ("X-ray - Chest" ... "MRI - Spine"): the `paper` question set keeps to them.
PAPER_IMAGE_TYPES: frozenset[str] = frozenset(
    f"{MODALITY_TYPE_NAMES[m]} - {ORGAN_TYPE_NAMES[o]}" for m in PAPER_MODALITIES for o in PAPER_ORGANS
)


def image_type(modality: str, organ: str) -> str:
    """The original release's image_type string, e.g. ``"X-ray - Chest"``.

    Records whose modality or organ is not askable get ``"Other - Other"`` style
    names so they are still grouped, never silently merged with a real type.
    """
    mod = MODALITY_TYPE_NAMES.get(modality, modality.capitalize() if modality else "Unknown")
    org = ORGAN_TYPE_NAMES.get(organ, organ.capitalize() if organ else "Unknown")
    return f"{mod} - {org}"
