"""Controlled vocabularies for conditions and positions, per organ and modality.

Hallucinated entities are drawn only from these lists, so an adversarial
question always asks about something plausible for the organ (a chest X-ray is
never asked about a brain infarct) and spelled the way the extractor and the
scorer spell it.
"""

from __future__ import annotations

# ChestX-ray14's 14 image-level labels as spelled in the label table -> our names.
CXR14_LABELS: dict[str, str] = {
    "Atelectasis": "atelectasis",
    "Cardiomegaly": "cardiomegaly",
    "Consolidation": "consolidation",
    "Edema": "edema",
    "Effusion": "effusion",
    "Emphysema": "emphysema",
    "Fibrosis": "fibrosis",
    "Hernia": "hernia",
    "Infiltration": "infiltration",
    "Infiltrate": "infiltration",  # the box list's spelling
    "Mass": "mass",
    "Nodule": "nodule",
    "Pleural_Thickening": "pleural thickening",
    "Pneumonia": "pneumonia",
    "Pneumothorax": "pneumothorax",
}
CXR14_CONDITIONS: tuple[str, ...] = tuple(sorted(set(CXR14_LABELS.values())))

# Canonical condition names per organ (adversarial candidates for that organ).
CONDITIONS_BY_ORGAN: dict[str, tuple[str, ...]] = {
    "chest": CXR14_CONDITIONS
    + (
        "aortic aneurysm",
        "lymphadenopathy",
        "pneumomediastinum",
        "rib fracture",
        "subcutaneous emphysema",
        "widened mediastinum",
        "lung cancer",
        "tuberculosis",
    ),
    "brain": (
        "infarction",
        "hemorrhage",
        "hematoma",
        "edema",
        "tumor",
        "mass",
        "metastasis",
        "hydrocephalus",
        "abscess",
        "cyst",
        "aneurysm",
        "meningioma",
        "glioma",
        "midline shift",
        "calcification",
        "ventricular enlargement",
    ),
    "abdomen": (
        "mass",
        "tumor",
        "cyst",
        "abscess",
        "small bowel obstruction",
        "pneumoperitoneum",
        "ascites",
        "appendicitis",
        "cholelithiasis",
        "kidney stone",
        "hydronephrosis",
        "aortic aneurysm",
        "calcification",
        "metastasis",
        "pneumatosis intestinalis",
        "bowel wall thickening",
        "biliary dilation",
        "splenomegaly",
        "hepatomegaly",
    ),
    "spine": (
        "fracture",
        "disc herniation",
        "spinal stenosis",
        "spondylolisthesis",
        "metastasis",
        "tumor",
        "osteophyte",
        "scoliosis",
        "cord compression",
        "abscess",
    ),
}
GENERIC_CONDITIONS: tuple[str, ...] = ("mass", "tumor", "fracture", "cyst", "lesion", "metastasis")
CONDITIONS_BY_ORGAN_MODALITY: dict[tuple[str, str], tuple[str, ...]] = {
    ("chest", "x-ray"): CXR14_CONDITIONS,
}


def conditions_for(organ: str, modality: str) -> tuple[str, ...]:
    """Adversarial condition candidates for an image of this organ and modality."""
    return CONDITIONS_BY_ORGAN_MODALITY.get((organ, modality)) or CONDITIONS_BY_ORGAN.get(organ, GENERIC_CONDITIONS)


# Synonyms in free text (captions, VQA-RAD questions) -> canonical condition name.
# Longest phrases are matched first, so "pleural effusion" wins over "effusion".
CONDITION_SYNONYMS: dict[str, str] = {
    "atelectasis": "atelectasis",
    "atelectatic": "atelectasis",
    "collapse": "atelectasis",
    "cardiomegaly": "cardiomegaly",
    "enlarged heart": "cardiomegaly",
    "heart enlarged": "cardiomegaly",
    "cardiomyopathy": "cardiomyopathy",
    "consolidation": "consolidation",
    "airspace consolidation": "consolidation",
    "edema": "edema",
    "oedema": "edema",
    "pulmonary edema": "edema",
    "brain edema": "edema",
    "effusion": "effusion",
    "effusions": "effusion",
    "pleural effusion": "effusion",
    "pleural effusions": "effusion",
    "emphysema": "emphysema",
    "subcutaneous emphysema": "subcutaneous emphysema",
    "subcutaneous air": "subcutaneous emphysema",
    "fibrosis": "fibrosis",
    "hernia": "hernia",
    "infiltrate": "infiltration",
    "infiltrates": "infiltration",
    "infiltration": "infiltration",
    "mass": "mass",
    "masses": "mass",
    "nodule": "nodule",
    "nodules": "nodule",
    "nodular": "nodule",
    "pleural thickening": "pleural thickening",
    "pneumonia": "pneumonia",
    "pneumothorax": "pneumothorax",
    "aortic aneurysm": "aortic aneurysm",
    "aneurysm": "aneurysm",
    "aneurysms": "aneurysm",
    "pseudoaneurysm": "aneurysm",
    "pseudo-aneurysm": "aneurysm",
    "lymphadenopathy": "lymphadenopathy",
    "hilar lymphadenopathy": "lymphadenopathy",
    "hylar lymphadenopathy": "lymphadenopathy",
    "pneumomediastinum": "pneumomediastinum",
    "widened mediastinum": "widened mediastinum",
    "tuberculosis": "tuberculosis",
    "infarct": "infarction",
    "infarcts": "infarction",
    "infarction": "infarction",
    "infarcted": "infarction",
    "stroke": "infarction",
    "hemorrhage": "hemorrhage",
    "haemorrhage": "hemorrhage",
    "bleeding": "hemorrhage",
    "hematoma": "hematoma",
    "haematoma": "hematoma",
    "tumor": "tumor",
    "tumors": "tumor",
    "tumour": "tumor",
    "tumours": "tumor",
    "neoplasm": "tumor",
    "carcinoma": "tumor",
    "cancer": "tumor",
    "lymphoma": "tumor",
    "sarcoma": "tumor",
    "metastasis": "metastasis",
    "metastases": "metastasis",
    "metastatic": "metastasis",
    "hydrocephalus": "hydrocephalus",
    "abscess": "abscess",
    "abscesses": "abscess",
    "cyst": "cyst",
    "cysts": "cyst",
    "cystic": "cyst",
    "meningioma": "meningioma",
    "glioma": "glioma",
    "glioblastoma": "glioma",
    "midline shift": "midline shift",
    "calcification": "calcification",
    "calcifications": "calcification",
    "calcified": "calcification",
    "lesion": "lesion",
    "lesions": "lesion",
    "small bowel obstruction": "small bowel obstruction",
    "bowel obstruction": "small bowel obstruction",
    "obstruction": "obstruction",
    "pneumoperitoneum": "pneumoperitoneum",
    "free air": "pneumoperitoneum",
    "ascites": "ascites",
    "appendicitis": "appendicitis",
    "gallstones": "cholelithiasis",
    "gallstone": "cholelithiasis",
    "cholelithiasis": "cholelithiasis",
    "kidney stone": "kidney stone",
    "renal stone": "kidney stone",
    "nephrolithiasis": "kidney stone",
    "hydronephrosis": "hydronephrosis",
    "pneumatosis intestinalis": "pneumatosis intestinalis",
    "pneumo intestinalis": "pneumatosis intestinalis",
    "bowel thickening": "bowel wall thickening",
    "small bowel thickening": "bowel wall thickening",
    "biliary duct dilation": "biliary dilation",
    "biliary dilation": "biliary dilation",
    "splenomegaly": "splenomegaly",
    "hepatomegaly": "hepatomegaly",
    "fracture": "fracture",
    "fractures": "fracture",
    "disc herniation": "disc herniation",
    "herniated disc": "disc herniation",
    "stenosis": "stenosis",
    "spinal stenosis": "spinal stenosis",
    "spondylolisthesis": "spondylolisthesis",
    "osteophyte": "osteophyte",
    "osteophytes": "osteophyte",
    "scoliosis": "scoliosis",
    "cord compression": "cord compression",
    "thrombus": "thrombosis",
    "thrombosis": "thrombosis",
    "embolism": "embolism",
    "emboli": "embolism",
    "dissection": "dissection",
    "fistula": "fistula",
    "stricture": "stricture",
    "dilatation": "dilatation",
    "dilation": "dilatation",
    "enhancement": "enhancement",
    "necrosis": "necrosis",
    "inflammation": "inflammation",
    "thickening": "thickening",
    "opacity": "opacity",
    "opacities": "opacity",
    "atrophy": "atrophy",
    "malformation": "malformation",
    "perforation": "perforation",
    "hyperintensity": "hyperintensity",
    "hyperintensities": "hyperintensity",
    "hypodensity": "hypodensity",
    "hypodense lesion": "hypodensity",
    "ventricular enlargement": "ventricular enlargement",
    "ventriculomegaly": "ventricular enlargement",
}

# ChestX-ray14 positions: a small fixed vocabulary built from side x zone
# (positions.py documents the geometric rules).
CXR_SIDES: tuple[str, ...] = ("right", "left", "bilateral", "central")
CXR_ZONES: tuple[str, ...] = ("upper", "middle", "lower")


def cxr_position(side: str, zone: str) -> str:
    if side == "bilateral":
        return f"bilateral {zone} lung zones"
    if side == "central":
        return f"central {zone} chest"
    return f"{side} {zone} lung zone"


CXR_POSITIONS: tuple[str, ...] = tuple(cxr_position(s, z) for s in CXR_SIDES for z in CXR_ZONES)

# Positions for other organs (caption / VQA-RAD findings); sides are flipped
# left<->right for the "adversarial" strategy.
POSITIONS_BY_ORGAN: dict[str, tuple[str, ...]] = {
    "chest": CXR_POSITIONS,
    "brain": tuple(
        f"{s} {r}" for s in ("left", "right") for r in ("frontal lobe", "parietal lobe", "temporal lobe", "occipital lobe", "cerebellum", "basal ganglia")
    ),
    "abdomen": (
        "liver",
        "right kidney",
        "left kidney",
        "spleen",
        "pancreas",
        "gallbladder",
        "small bowel",
        "colon",
        "right lower quadrant",
        "left lower quadrant",
        "right upper quadrant",
        "left upper quadrant",
    ),
    "spine": ("cervical spine", "thoracic spine", "lumbar spine", "sacrum"),
}
GENERIC_POSITIONS: tuple[str, ...] = ("left side", "right side", "upper part", "lower part")

SIDE_WORDS: dict[str, str] = {"left": "right", "right": "left"}


def flip_side(phrase: str) -> str | None:
    """The left-right mirror of a position phrase, or None when it names no side."""
    words = phrase.split()
    if not any(w in SIDE_WORDS for w in words):
        return None
    return " ".join(SIDE_WORDS.get(w, w) for w in words)
