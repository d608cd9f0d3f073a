"""Controlled vocabularies for conditions and positions, per organ and modality.

Hallucinated entities are drawn only from these lists, so an adversarial
question always asks about something plausible for the organ (a chest X-ray is
never asked about a brain infarct) and spelled the way the extractor and the
scorer spell it.
"""

from __future__ import annotations

from functools import lru_cache

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
        # chest CT (COVID-19 collection, ROCO captions)
        "covid-19 pneumonia",
        "ground-glass opacity",
        "bronchiectasis",
        "cavity",
        "embolism",
        "pericardial effusion",
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
        # brain MRI tumour sets (figshare, BraTS) and ROCO captions
        "pituitary tumor",
        "demyelination",
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
        # ROCO captions
        "pancreatitis",
        "cholecystitis",
        "diverticulitis",
        "intussusception",
        "volvulus",
        "hernia",
        "foreign body",
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
        # ROCO captions
        "spondylodiscitis",
        "syringomyelia",
        "kyphosis",
        "dislocation",
    ),
}
GENERIC_CONDITIONS: tuple[str, ...] = ("mass", "tumor", "fracture", "cyst", "lesion", "metastasis")
# The organs beyond the paper's four (issue 20): chosen from what the roco-extended captions name.
_BONE_AND_JOINT: tuple[str, ...] = ("fracture", "dislocation", "effusion", "tumor", "mass", "cyst", "lesion",
                                    "edema", "osteoarthritis", "arthritis", "osteomyelitis", "abscess",
                                    "foreign body", "hematoma", "tear", "osteonecrosis")
CONDITIONS_BY_ORGAN.update({
    "pelvis": ("mass", "tumor", "cyst", "lesion", "abscess", "fracture", "dislocation", "effusion", "hematoma",
               "metastasis", "calcification", "foreign body", "osteoarthritis", "osteonecrosis", "sacroiliitis",
               "endometriosis", "hydrosalpinx", "varices", "kidney stone", "inflammation", "edema"),
    "knee": _BONE_AND_JOINT + ("cartilage defect", "bursitis", "baker cyst"),
    "hand": _BONE_AND_JOINT + ("tenosynovitis", "ganglion", "carpal tunnel syndrome"),
    "shoulder": _BONE_AND_JOINT + ("rotator cuff tear", "bursitis", "calcific tendinitis"),
    "foot": _BONE_AND_JOINT + ("panniculitis", "stress injury", "tendinopathy"),
    "head and neck": ("mass", "tumor", "cyst", "lesion", "abscess", "fracture", "lymphadenopathy", "nodule",
                      "goiter", "thyroiditis", "sinusitis", "mucocele", "polyp", "calcification", "sialolithiasis",
                      "proptosis", "laryngocele", "hyperostosis", "inflammation", "edema", "subcutaneous emphysema",
                      "metastasis", "foreign body", "malformation", "thickening"),
})
# ONE condition vocabulary per organ: ground-truth conditions and their hallucinated twins are both drawn
# from it (a finding outside it is left out of the questions), so no name is "always yes" by its wording.
# A modality that cannot show a condition never asks about it, neither as ground truth nor as hallucination
# (a pulmonary embolism on a radiograph, appendicitis on a plain abdominal film).
CONDITIONS_NOT_SHOWN: dict[tuple[str, str], tuple[str, ...]] = {
    ("chest", "x-ray"): ("embolism", "ground-glass opacity"),
    ("brain", "x-ray"): CONDITIONS_BY_ORGAN["brain"],
    ("abdomen", "x-ray"): ("pancreatitis", "cholecystitis", "diverticulitis", "appendicitis", "biliary dilation",
                           "hydronephrosis", "metastasis", "cyst", "abscess"),
    ("spine", "x-ray"): ("disc herniation", "cord compression", "syringomyelia", "spinal stenosis", "abscess"),
}
# The organs beyond the paper's four (issue 20): soft-tissue findings a radiograph (or a CT) does not show,
# and what lies inside or behind bone, which ultrasound does not show.
_SOFT_TISSUE = ("tear", "rotator cuff tear", "cartilage defect", "edema", "bursitis", "baker cyst", "tendinopathy",
                "calcific tendinitis", "tenosynovitis", "carpal tunnel syndrome", "ganglion", "stress injury", "hematoma",
                "abscess")
_INSIDE_BONE = ("fracture", "dislocation", "osteonecrosis", "osteomyelitis", "osteoarthritis", "stress injury")
for _organ in ("knee", "hand", "shoulder", "foot"):
    CONDITIONS_NOT_SHOWN[(_organ, "x-ray")] = _SOFT_TISSUE
    CONDITIONS_NOT_SHOWN[(_organ, "ct")] = _SOFT_TISSUE[:-2]  # CT shows a hematoma or an abscess
    CONDITIONS_NOT_SHOWN[(_organ, "ultrasound")] = _INSIDE_BONE
CONDITIONS_NOT_SHOWN.update({
    ("pelvis", "x-ray"): ("endometriosis", "hydrosalpinx", "varices", "edema", "hematoma", "abscess", "inflammation"),
    ("pelvis", "ultrasound"): _INSIDE_BONE + ("sacroiliitis",),
    ("head and neck", "x-ray"): ("lymphadenopathy", "thyroiditis", "nodule", "edema", "abscess", "proptosis", "goiter"),
    ("head and neck", "ultrasound"): ("fracture", "sinusitis", "mucocele", "polyp", "proptosis", "hyperostosis"),
    ("chest", "ultrasound"): ("emphysema", "fibrosis", "nodule", "infiltration", "cavity", "bronchiectasis",
                              "ground-glass opacity", "lymphadenopathy", "widened mediastinum", "pneumomediastinum",
                              "embolism", "tuberculosis", "lung cancer", "covid-19 pneumonia", "cardiomegaly",
                              "aortic aneurysm", "hernia"),
    ("abdomen", "ultrasound"): ("pneumoperitoneum", "pneumatosis intestinalis", "volvulus", "small bowel obstruction"),
})


@lru_cache(maxsize=None)
def conditions_for(organ: str, modality: str) -> tuple[str, ...]:
    """The organ's condition vocabulary, less what this modality cannot show."""
    hidden = set(CONDITIONS_NOT_SHOWN.get((organ, modality), ()))
    return tuple(c for c in CONDITIONS_BY_ORGAN.get(organ, GENERIC_CONDITIONS) if c not in hidden)


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
    **{  # general radiology terms added with the new sources (brain tumour sets, COVID-19 chest CT, ROCO figures)
        "pituitary tumor": "pituitary tumor",
        "pituitary tumour": "pituitary tumor",
        "pituitary adenoma": "pituitary tumor",
        "pituitary macroadenoma": "pituitary tumor",
        "pituitary microadenoma": "pituitary tumor",
        "macroadenoma": "pituitary tumor",
        "microadenoma": "pituitary tumor",
        "prolactinoma": "pituitary tumor",
        "prolactinomas": "pituitary tumor",
        "astrocytoma": "glioma",
        "oligodendroglioma": "glioma",
        "gliomas": "glioma",
        "meningiomas": "meningioma",
        "covid-19 pneumonia": "covid-19 pneumonia",
        "covid pneumonia": "covid-19 pneumonia",
        "sars-cov-2 pneumonia": "covid-19 pneumonia",
        "ground-glass opacity": "ground-glass opacity",
        "ground-glass opacities": "ground-glass opacity",
        "ground glass opacity": "ground-glass opacity",
        "ground glass opacities": "ground-glass opacity",
        "ground-glass opacification": "ground-glass opacity",
        "ground-glass": "ground-glass opacity",
        "ground glass": "ground-glass opacity",
        "ggo": "ground-glass opacity",
        "ggos": "ground-glass opacity",
        "bronchiectasis": "bronchiectasis",
        "cavitation": "cavity",
        "cavitary lesion": "cavity",
        "pulmonary embolism": "embolism",
        "pulmonary emboli": "embolism",
        "pericardial effusion": "pericardial effusion",
        "demyelination": "demyelination",
        "demyelinating lesion": "demyelination",
        "demyelinating lesions": "demyelination",
        "multiple sclerosis": "demyelination",
        "pancreatitis": "pancreatitis",
        "cholecystitis": "cholecystitis",
        "diverticulitis": "diverticulitis",
        "intussusception": "intussusception",
        "volvulus": "volvulus",
        "hernias": "hernia",
        "foreign body": "foreign body",
        "foreign bodies": "foreign body",
        "spondylodiscitis": "spondylodiscitis",
        "discitis": "spondylodiscitis",
        "syringomyelia": "syringomyelia",
        "syrinx": "syringomyelia",
        "hydromyelia": "syringomyelia",
        "kyphosis": "kyphosis",
        "dislocation": "dislocation",
        "subluxation": "dislocation",
        "disc protrusion": "disc herniation",
        "disc extrusion": "disc herniation",
        "disc prolapse": "disc herniation",
        "prolapsed disc": "disc herniation",
        "herniated nucleus pulposus": "disc herniation",
        "compression fracture": "fracture",
        "subdural hematoma": "hematoma",
        "subdural haematoma": "hematoma",
        "epidural hematoma": "hematoma",
        "intracerebral hemorrhage": "hemorrhage",
        "subarachnoid hemorrhage": "hemorrhage",
        "haemorrhages": "hemorrhage",
        "hemorrhages": "hemorrhage",
        "hematomas": "hematoma",
        "infarctions": "infarction",
        "thrombi": "thrombosis",
        "aortic dissection": "dissection",
        "adenocarcinoma": "tumor",
        "hepatocellular carcinoma": "tumor",
        "cholangiocarcinoma": "tumor",
        "carcinomas": "tumor",
        "malignancy": "tumor",
        "schwannoma": "tumor",
        "neurofibroma": "tumor",
        "lipoma": "tumor",
        "liposarcoma": "tumor",
        "hemangioma": "tumor",
        "haemangioma": "tumor",
        "adenoma": "tumor",
        "teratoma": "tumor",
        "myeloma": "tumor",
        "osteosarcoma": "tumor",
        "chondrosarcoma": "tumor",
        "leiomyoma": "tumor",
        "leiomyosarcoma": "tumor",
        "angiomyolipoma": "tumor",
        "ependymoma": "tumor",
        "medulloblastoma": "tumor",
        "neuroblastoma": "tumor",
        "mesothelioma": "tumor",
        "thymoma": "tumor",
        "hamartoma": "tumor",
        "gist": "tumor",
        "enlarged lymph nodes": "lymphadenopathy",
        "enlarged lymph node": "lymphadenopathy",
        "lymph node enlargement": "lymphadenopathy",
        "adenopathy": "lymphadenopathy",
        "calculus": "calculus",
        "calculi": "calculus",
        "stone": "calculus",
        "gallbladder stone": "cholelithiasis",
        "gallbladder stones": "cholelithiasis",
        "ureteral stone": "kidney stone",
        "ureteric stone": "kidney stone",
        "stones": "calculus",
        "urolithiasis": "kidney stone",
        "renal calculus": "kidney stone",
        "renal calculi": "kidney stone",
        "kidney stones": "kidney stone",
        "renal stones": "kidney stone",
        "hyperdensity": "hyperdensity",
        "hypointensity": "hypointensity",
        "hypointensities": "hypointensity",
        "consolidations": "consolidation",
        "fistulae": "fistula",
        "fistulas": "fistula",
        "aneurysmal dilatation": "aneurysm",
        "arteriovenous malformation": "malformation",
        "pleural thickening": "pleural thickening",
        "emphysematous": "emphysema",
        # frequent in the ROCO test captions outside the labelled set (>= 3 captions each)
        "ischemia": "ischemia",
        "ischaemia": "ischemia",
        "ischemic": "ischemia",
        "ileus": "ileus",
        "collection": "collection",
        "fluid collection": "collection",
        "pyelonephritis": "pyelonephritis",
        "hypoplasia": "hypoplasia",
        "hypoplastic": "hypoplasia",
        "myelopathy": "myelopathy",
        "opll": "ossification of the posterior longitudinal ligament",
        "ossification of the posterior longitudinal ligament": "ossification of the posterior longitudinal ligament",
        "hyperostosis": "hyperostosis",
        "empyema": "empyema",
        "granuloma": "granuloma",
        "granulomas": "granuloma",
        "cirrhosis": "cirrhosis",
        "varices": "varices",
        "distension": "dilatation",
        "distention": "dilatation",
        "pleural fluid": "effusion",
        "pleural fluid collection": "effusion",
        "pleural collection": "effusion",
        "ascitic": "ascites",
        "spinal canal stenosis": "spinal stenosis",
        "canal stenosis": "spinal stenosis",
        "lateral recess stenosis": "spinal stenosis",
        "foraminal stenosis": "spinal stenosis",
        # tumour names (general): the benchmark asks about "tumor"
        "craniopharyngioma": "tumor",
        "chordoma": "tumor",
        "ganglioneuroma": "tumor",
        "pheochromocytoma": "tumor",
        "paraganglioma": "tumor",
        "hepatoblastoma": "tumor",
        "nephroblastoma": "tumor",
        "wilms tumor": "tumor",
        "insulinoma": "tumor",
        "fibroma": "tumor",
        "osteoma": "tumor",
        "osteochondroma": "tumor",
        "enchondroma": "tumor",
        "plasmacytoma": "tumor",
        "germinoma": "tumor",
        "hemangioblastoma": "tumor",
        "neurinoma": "tumor",
        "carcinoid": "tumor",
        "seminoma": "tumor",
        "melanoma": "tumor",
        "blastoma": "tumor",
    },
}

# Synonyms read only by the extended profile (sources beyond the paper's scope, issue 20): conditions of
# the new organs and of ultrasound as their captions name them. The paper's sources never read them, so
# their records do not change. Longest phrase first, as above.
EXTENDED_SYNONYMS: dict[str, str] = {
    "enlargement": "enlargement",
    "swelling": "swelling",
    "tear": "tear",
    "tears": "tear",
    "torn": "tear",
    "rupture": "rupture",
    "ruptured": "rupture",
    "defect": "defect",
    "cartilage defect": "cartilage defect",
    "chondral defect": "cartilage defect",
    "osteochondral defect": "cartilage defect",
    "rotator cuff tear": "rotator cuff tear",
    "meniscal tear": "tear",
    "osteoarthritis": "osteoarthritis",
    "arthritis": "arthritis",
    "rheumatoid arthritis": "arthritis",
    "septic arthritis": "arthritis",
    "synovitis": "synovitis",
    "tenosynovitis": "tenosynovitis",
    "tendinopathy": "tendinopathy",
    "tendinosis": "tendinopathy",
    "tendinitis": "tendinopathy",
    "calcific tendinitis": "calcific tendinitis",
    "bursitis": "bursitis",
    "enthesitis": "enthesitis",
    "osteomyelitis": "osteomyelitis",
    "osteonecrosis": "osteonecrosis",
    "avascular necrosis": "osteonecrosis",
    "osteolysis": "osteolysis",
    "acro-osteolysis": "acro-osteolysis",
    "avulsion": "avulsion",
    "loosening": "loosening",
    "ganglion": "ganglion",
    "ganglion cyst": "ganglion",
    "baker cyst": "baker cyst",
    "baker's cyst": "baker cyst",
    "popliteal cyst": "baker cyst",
    "carpal tunnel syndrome": "carpal tunnel syndrome",
    "compartment syndrome": "compartment syndrome",
    "stress injury": "stress injury",
    "stress fracture": "fracture",
    "panniculitis": "panniculitis",
    "pyomyositis": "pyomyositis",
    "myositis": "myositis",
    "cellulitis": "cellulitis",
    "sacroiliitis": "sacroiliitis",
    "accessory navicular": "accessory navicular",
    "adhesion": "adhesion",
    "adhesions": "adhesion",
    "adherences": "adhesion",
    "migration": "migration",
    "extravasation": "extravasation",
    "hydrocele": "hydrocele",
    "varicocele": "varicocele",
    "laryngocele": "laryngocele",
    "laryngoceles": "laryngocele",
    "ureterocele": "ureterocele",
    "ureterocoele": "ureterocele",
    "endometriosis": "endometriosis",
    "endometrioma": "endometriosis",
    "hydrosalpinx": "hydrosalpinx",
    "fibroid": "tumor",
    "fibroids": "tumor",
    "goiter": "goiter",
    "goitre": "goiter",
    "multinodular goiter": "goiter",
    "thyroiditis": "thyroiditis",
    "sinusitis": "sinusitis",
    "mucocele": "mucocele",
    "polyp": "polyp",
    "polyps": "polyp",
    "sialolithiasis": "sialolithiasis",
    "sialolith": "sialolithiasis",
    "proptosis": "proptosis",
    "exophthalmos": "proptosis",
    "anophthalmia": "anophthalmia",
    "caries": "caries",
    "carious": "caries",
    "supernumerary tooth": "supernumerary tooth",
    "mesiodens": "mesiodens",
    "myocarditis": "myocarditis",
    "akinesis": "akinesis",
    "hyperinflation": "hyperinflation",
    "mediastinal shift": "mediastinal shift",
    "tracheal shift": "tracheal shift",
    "eventration": "eventration",
    "ards": "ards",
    "acute respiratory distress syndrome": "ards",
    "interstitial syndrome": "interstitial syndrome",
    "hydrothorax": "effusion",
    "hemothorax": "hemothorax",
    "polycystic kidney disease": "polycystic kidney disease",
    "hydrops": "hydrops",
    "budd-chiari syndrome": "budd-chiari syndrome",
    "projectile": "foreign body",
    "bullet": "foreign body",
    "growth": "tumor",
    "aml": "tumor",
    "avm": "malformation",
    "subcutaneous gas": "subcutaneous emphysema",
    "opacification": "opacity",
    "air space shadowing": "opacity",
    "airspace shadowing": "opacity",
    "seminomatous tumour": "tumor",
    "seminomatous tumor": "tumor",
    "ductal carcinoma": "tumor",
    "giant cell tumor": "tumor",
    "giant cell tumour": "tumor",
    "inflammatory": "inflammation",
    "edematous": "edema",
    "oedematous": "edema",
    "hyperostosis": "hyperostosis",
    "malignant transformation": "tumor",
    "cystadenoma": "tumor",
    "cyst adenoma": "tumor",
    "cystadenocarcinoma": "tumor",
    "ranula": "ranula",
    "ulcer": "ulcer",
    "ulcers": "ulcer",
    "ulceration": "ulcer",
    "osteitis": "osteitis",
    "calcium deposit": "calcification",
    "calcium deposits": "calcification",
    "fractured": "fracture",
    "talar tilt": "talar tilt",
}

# Chest radiograph positions: lung zones of the lung field, the mediastinum and the heart
# (positions.py documents the geometric rules). Each phrase has a footprint of cells
# ("right:upper" ... "left:lower", "mediastinum", "heart") so overlap is a set intersection.
CXR_SIDES: tuple[str, ...] = ("right", "left", "both")
CXR_ZONES: tuple[str, ...] = ("upper", "middle", "lower")
CARDIAC_POSITION = "cardiac silhouette"
MEDIASTINAL_POSITION = "mediastinum"


def cxr_position(side: str, zone: str | None) -> str:
    """``("right", "lower")`` -> ``"right lower lung zone"``; ``("both", None)`` -> ``"both lungs"``;
    ``("mediastinum", None)`` -> ``"mediastinum"``; ``("heart", None)`` -> ``"cardiac silhouette"``."""
    if side == "heart":
        return CARDIAC_POSITION
    if side == "mediastinum":
        return MEDIASTINAL_POSITION
    if side not in CXR_SIDES or (zone is not None and zone not in CXR_ZONES):
        raise ValueError(f"no chest radiograph position for side {side!r}, zone {zone!r}")
    if side == "both":
        return "both lungs" if zone is None else f"both {zone} lung zones"
    return f"{side} lung" if zone is None else f"{side} {zone} lung zone"


def _cxr_footprints() -> dict[str, frozenset[str]]:
    """Every chest radiograph position -> the cells it covers (built once: overlap checks ask per candidate)."""
    out = {CARDIAC_POSITION: frozenset({"heart"}), MEDIASTINAL_POSITION: frozenset({"mediastinum"})}
    for side in CXR_SIDES:
        sides = ("right", "left") if side == "both" else (side,)
        for zone in (*CXR_ZONES, None):
            zones = CXR_ZONES if zone is None else (zone,)
            out.setdefault(cxr_position(side, zone), frozenset(f"{s}:{z}" for s in sides for z in zones))
    return out


_CXR_FOOTPRINTS = _cxr_footprints()


def cxr_footprint(position: str) -> frozenset[str] | None:
    """The cells a chest radiograph position covers, or None when it is not one of CXR_POSITIONS or
    CXR_PLEURAL_POSITIONS."""
    return _CXR_FOOTPRINTS.get(position)


# Hallucinated-position candidates on chest radiographs (the heart is never one: it is always there).
CXR_POSITIONS: tuple[str, ...] = tuple(
    cxr_position(s, z) for s in CXR_SIDES for z in (*CXR_ZONES, None)
) + (MEDIASTINAL_POSITION,)

# Pleural processes are in the pleural space, not in a lung zone: their positions are a side, or a side and
# the apex, the base or the costophrenic angle (positions.py derives them from the box in the lung field).
PLEURAL_CONDITIONS = frozenset({"effusion", "pneumothorax"})
PLEURAL_REGIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {  # region -> (one side, both sides, zones)
    "apex": ("apex", "apices", ("upper",)),
    "base": ("base", "bases", ("lower",)),
    "costophrenic angle": ("costophrenic angle", "costophrenic angles", ("lower",)),
}


def pleural_position(side: str, region: str | None) -> str:
    """``("right", "base")`` -> ``"right base"``; ``("left", None)`` -> ``"left"``; ``("both", None)`` ->
    ``"both sides"``; ``("both", "costophrenic angle")`` -> ``"both costophrenic angles"``."""
    if side not in CXR_SIDES or (region is not None and region not in PLEURAL_REGIONS):
        raise ValueError(f"no pleural position for side {side!r}, region {region!r}")
    if region is None:
        return "both sides" if side == "both" else side
    one, both, _ = PLEURAL_REGIONS[region]
    return f"both {both}" if side == "both" else f"{side} {one}"


def _pleural_footprints() -> dict[str, frozenset[str]]:
    out = {}
    for side in CXR_SIDES:
        sides = ("right", "left") if side == "both" else (side,)
        for region in (*PLEURAL_REGIONS, None):
            zones = CXR_ZONES if region is None else PLEURAL_REGIONS[region][2]
            out[pleural_position(side, region)] = frozenset(f"{s}:{z}" for s in sides for z in zones)
    return out


_CXR_FOOTPRINTS.update(_pleural_footprints())
CXR_PLEURAL_POSITIONS: tuple[str, ...] = tuple(_pleural_footprints())

# --- Positions named in text (captions, clinical notes) or derived from boxes, per organ ---
# A position phrase is "<side> <region>": side in SIDE_NAMES (optional), region from the organ's
# table below. Each entry: (surface regex, canonical region, the sides it takes). A sided region takes
# the side stated with it ("left frontal lobe"; "bilateral" -> the plural form, "bilateral frontal lobes");
# a sideless region stands alone ("sellar region", "pancreas"). A side stated with no region is a
# position of its own ("left", "right", "bilateral"). Anything else is not a position.
SIDE_NAMES: tuple[str, ...] = ("right", "left", "bilateral")
BOTH, ONE, RIGHT, NONE = SIDE_NAMES, ("right", "left"), ("right",), ()
POSITION_REGIONS: dict[str, tuple[tuple[str, str, tuple[str, ...]], ...]] = {
    "chest": (
        (r"upper lobes?|\b[rl]ul\b", "upper lobe", BOTH),
        (r"middle lobe|\brml\b", "middle lobe", RIGHT),
        (r"lower lobes?|\b[rl]ll\b", "lower lobe", BOTH),
        (r"upper (lung )?zones?|upper lung fields?", "upper lung zone", BOTH),
        (r"mid(dle)? (lung )?zones?|mid(dle)? lung fields?", "middle lung zone", BOTH),
        (r"lower (lung )?zones?|lower lung fields?", "lower lung zone", BOTH),
        (r"lingula(r)?", "lingula", NONE),
        (r"(lung|pulmonary) apex|apices|apical", "lung apex", BOTH),
        (r"(lung|pulmonary) bases?|basal|bibasilar|basilar", "lung base", BOTH),
        (r"peripheral|periphery|subpleural", "lung periphery", BOTH),
        (r"hil(um|a|ar)\b", "hilum", BOTH),
        (r"hemithora(x|ces)", "hemithorax", BOTH),
        (r"pleura[l]?\b", "pleural space", BOTH),
        (r"chest wall", "chest wall", BOTH),
        (r"mediastin(um|al)", "mediastinum", NONE),
        (r"\blungs?\b|pulmonary", "lung", BOTH),
    ),
    "brain": (
        (r"front(o|al)-?parietal", "frontoparietal region", BOTH),
        (r"tempor(o|al)-?parietal", "temporoparietal region", BOTH),
        (r"pariet(o|al)-?occipital", "parieto-occipital region", BOTH),
        (r"front(o|al)-?temporal", "frontotemporal region", BOTH),
        (r"frontal", "frontal lobe", BOTH),
        (r"parietal", "parietal lobe", BOTH),
        (r"temporal", "temporal lobe", BOTH),
        (r"occipital", "occipital lobe", BOTH),
        (r"cerebellopontine angle", "cerebellopontine angle", BOTH),
        (r"cerebellar hemispheres?", "cerebellar hemisphere", BOTH),
        (r"cerebell(um|ar)|vermis", "cerebellum", NONE),
        (r"basal gangli(a|al|on)|lentiform|putamen|caudate nucle", "basal ganglia", BOTH),
        (r"thalam(us|i|ic)", "thalamus", BOTH),
        (r"lateral ventric(les?|ular)", "lateral ventricle", BOTH),
        (r"third ventric(le|ular)", "third ventricle", NONE),
        (r"fourth ventric(le|ular)", "fourth ventricle", NONE),
        (r"(?<!vestibular )(?<!cochlear )(cerebral |sylvian )?aqueduct(al)?\b", "cerebral aqueduct", NONE),
        (r"brain ?stem|\bpons\b|pontine|midbrain|medulla oblongata", "brainstem", NONE),
        (r"corpus callosum|callosal", "corpus callosum", NONE),
        (r"suprasellar|pituitary stalk|infundibul(um|ar)|hypothalam(us|ic)", "suprasellar region", NONE),
        (r"\bsella(r)?\b|pituitary fossa", "sellar region", NONE),
        (r"pineal", "pineal region", NONE),
        (r"posterior fossa|infratentorial", "posterior fossa", NONE),
        (r"periventricular", "periventricular white matter", BOTH),
        (r"hemispheres?|hemispheric", "hemisphere", BOTH),
        (r"\bmidline\b", "midline", NONE),
    ),
    "abdomen": (
        (r"lobe of the liver|hepatic lobe|liver lobe", "lobe of the liver", ONE),
        # vessels and the hilum named after an organ are not the organ ("right hepatic vein" thrombosis)
        (r"hepatic veins?", "hepatic vein", BOTH),
        (r"portal veins?", "portal vein", NONE),
        (r"porta hepatis|hepatic hilum", "porta hepatis", NONE),
        (r"\bliver\b|hepatic", "liver", NONE),
        (r"\bkidneys?\b|\brenal\b", "kidney", BOTH),
        (r"adrenal|suprarenal", "adrenal gland", BOTH),
        (r"ureter(s|al|ic)?\b", "ureter", BOTH),
        (r"(ovarian|gonadal) veins?", "ovarian vein", BOTH),
        (r"ovar(y|ies|ian)|adnex(a|al)", "adnexa", BOTH),
        (r"\bspleen\b|splenic", "spleen", NONE),
        (r"pancreatic head|head of the pancreas", "pancreatic head", NONE),
        (r"pancreatic tail|tail of the pancreas", "pancreatic tail", NONE),
        (r"pancrea(s|tic)", "pancreas", NONE),
        (r"gall ?bladder", "gallbladder", NONE),
        (r"common bile duct|\bcbd\b", "common bile duct", NONE),
        (r"\bstomach\b|gastric", "stomach", NONE),
        (r"duoden(um|al)", "duodenum", NONE),
        (r"small bowel|small intestin(e|al)|jejun(um|al)|ile(um|al)\b", "small bowel", NONE),
        (r"appendi(x|ceal)", "appendix", NONE),
        (r"sigmoid", "sigmoid colon", NONE),
        (r"\bcolon\b|colonic|c(a)?ecum|c(a)?ecal|large (bowel|intestine)", "colon", NONE),
        (r"rect(um|al)", "rectum", NONE),
        (r"(urinary )?bladder", "bladder", NONE),
        (r"uter(us|ine)", "uterus", NONE),
        (r"prostat(e|ic)", "prostate", NONE),
        (r"retroperitone(um|al)", "retroperitoneum", NONE),
        (r"mesenter(y|ic)", "mesentery", NONE),
        (r"(?<!retro)peritone(um|al)", "peritoneum", NONE),
        (r"\bpelvi(s|c)\b", "pelvis", NONE),
        (r"psoas", "psoas muscle", BOTH),
        (r"abdominal wall", "abdominal wall", BOTH),
        (r"lower quadrant", "lower quadrant", BOTH),
        (r"upper quadrant", "upper quadrant", BOTH),
        (r"iliac fossa", "iliac fossa", BOTH),
        (r"\bflank\b", "flank", BOTH),
    ),
    "spine": (
        (r"cranio-?(cervical|vertebral) junction", "craniocervical junction", NONE),
        (r"cervico-?(thoracic|dorsal)|\bc7[- /]t1\b", "cervicothoracic junction", NONE),
        (r"thoraco-?lumbar|dorso-?lumbar|\bt12[- /]l1\b", "thoracolumbar junction", NONE),
        (r"lumbo-?sacral|\bl5[- /]s1\b", "lumbosacral junction", NONE),
        (r"cervical|\bc[1-7]\b", "cervical spine", NONE),
        (r"thoracic (spine|vertebra|cord)|dorsal spine|\b[td](1[0-2]|[3-9])\b|\bd[12]\b|\bt[12](?=\s?[-/]\s?[tl]?\d|\s(vertebra|level|segment))", "thoracic spine", NONE),
        (r"lumbar|\bl[1-5]\b", "lumbar spine", NONE),
        (r"(?<!pre)(?<!pre-)sacr(um|al)|\bs[1-5]\b", "sacrum", NONE),
        (r"coccy(x|geal)", "coccyx", NONE),
    ),
}
def _ordinals(bone: str, sides: tuple[str, ...]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """"third metacarpal", "1st metatarsal": one region per ray of the hand or foot."""
    names = ("first", "second", "third", "fourth", "fifth")
    short = ("1st", "2nd", "3rd", "4th", "5th")
    return tuple((rf"(?:{n}|{a}) {bone}", f"{n} {bone}", sides) for n, a in zip(names, short))


# The organs beyond the paper's four (issue 20): structures their captions tie findings to.
POSITION_REGIONS.update({
    "pelvis": (
        (r"(ovarian|gonadal) veins?", "ovarian vein", BOTH),  # a vein named after the ovary is not the ovary
        (r"ovar(y|ies|ian)|ovaric", "ovary", BOTH),
        (r"adnex(a|al)", "adnexa", BOTH),
        (r"broad ligaments?", "broad ligament", BOTH),
        (r"fallopian tubes?|salpin", "fallopian tube", BOTH),
        (r"parametri(um|al)", "parametrium", BOTH),
        (r"pouch of douglas|rectouterine|cul-de-sac", "pouch of douglas", NONE),
        (r"(?<!gall)(?<!gall )(urinary )?bladder", "bladder", NONE),
        (r"uter(us|ine)|endometri(um|al)|myometri(um|al)", "uterus", NONE),
        (r"cervix", "cervix", NONE),
        (r"vagin(a|al)", "vagina", NONE),
        (r"(prostatic )?peripheral zone", "peripheral zone", BOTH),
        (r"prostat(e|ic)", "prostate", NONE),
        (r"seminal vesicles?", "seminal vesicle", BOTH),
        (r"urethra(l)?", "urethra", NONE),
        (r"(distal|terminal|pelvic|intramural|juxtavesical) (part |portion |segment )?(of the )?ureters?", "distal ureter",
         BOTH),
        (r"rect(um|al)", "rectum", NONE),
        (r"sigmoid", "sigmoid colon", NONE),
        (r"sacroiliac|\bsi joints?", "sacroiliac joint", BOTH),
        (r"acetabul(um|ar)", "acetabulum", BOTH),
        (r"femoral necks?|neck of the femur", "femoral neck", BOTH),
        (r"femoral heads?|head of the femur", "femoral head", BOTH),
        (r"greater trochanter|trochanteric", "greater trochanter", BOTH),
        (r"hip joints?", "hip joint", BOTH),
        (r"hips?\b", "hip", BOTH),
        (r"glute(al|us)( muscles?)?", "gluteal muscles", BOTH),
        (r"(ilio)?psoas", "iliopsoas muscle", BOTH),
        (r"sciatic nerve", "sciatic nerve", BOTH),
        (r"symphysis pubis|pubic symphysis", "pubic symphysis", NONE),
        (r"pubi(s|c)|pubic ram(us|i)", "pubic bone", BOTH),
        (r"ischi(um|al)", "ischium", BOTH),
        (r"iliac (bone|wing|crest)|\bilium", "iliac bone", BOTH),
        (r"(?<!lumbo)sacr(um|al)\b(?!oiliac)", "sacrum", NONE),
        (r"acetabular labrum|\blabr(um|al)", "acetabular labrum", BOTH),
        (r"proximal femur|proximal femoral\b(?! (vein|arter|nerve))", "proximal femur", BOTH),
        (r"femoral shaft|\bfemur\b", "femur", BOTH),
        (r"obturator", "obturator muscle", BOTH),
        (r"ischiorectal|ischioanal", "ischiorectal fossa", BOTH),
        (r"inguinal", "inguinal region", BOTH),
        (r"perine(um|al)", "perineum", NONE),
        (r"presacral", "presacral space", NONE),
        (r"vulva(r)?", "vulva", NONE),
    ),
    "knee": (
        (r"infrapatellar fat pad|hoffa|\bhfp\b", "infrapatellar fat pad", ONE),
        (r"medial patellofemoral ligament|\bmpfl\b", "medial patellofemoral ligament", ONE),
        (r"patellar tendon", "patellar tendon", ONE),
        (r"quadriceps tendon", "quadriceps tendon", ONE),
        (r"extensor mechanism", "extensor mechanism", ONE),
        (r"suprapatellar", "suprapatellar recess", ONE),
        (r"prepatellar", "prepatellar bursa", ONE),
        (r"medial (femorotibial |tibiofemoral )?compartment", "medial compartment", ONE),
        (r"lateral (femorotibial |tibiofemoral )?compartment", "lateral compartment", ONE),
        (r"patellofemoral (joint|compartment)", "patellofemoral joint", ONE),
        (r"intercondylar notch", "intercondylar notch", ONE),
        (r"trochle(a|ar)", "trochlea", ONE),
        (r"tibial tuberosity|tibial tubercle", "tibial tuberosity", ONE),
        (r"iliotibial band", "iliotibial band", ONE),
        (r"patell(a|ar)", "patella", ONE),
        (r"medial menisc(us|al)", "medial meniscus", ONE),
        (r"lateral menisc(us|al)", "lateral meniscus", ONE),
        (r"menisc(us|i|al)", "meniscus", ONE),
        (r"anterior cruciate|\bacl\b", "anterior cruciate ligament", ONE),
        (r"posterior cruciate|\bpcl\b", "posterior cruciate ligament", ONE),
        (r"medial collateral|\bmcl\b", "medial collateral ligament", ONE),
        (r"lateral collateral|\blcl\b", "lateral collateral ligament", ONE),
        (r"(medial|internal) femoral condyle", "medial femoral condyle", ONE),
        (r"(lateral|external) femoral condyle", "lateral femoral condyle", ONE),
        (r"femoral condyles?", "femoral condyle", ONE),
        (r"medial tibial plateau", "medial tibial plateau", ONE),
        (r"(lateral|external) tibial plateau", "lateral tibial plateau", ONE),
        (r"tibial plateaus?", "tibial plateau", ONE),
        (r"proximal tibia(l)?", "proximal tibia", ONE),
        (r"distal femur|distal femoral", "distal femur", ONE),
        (r"fibular head|proximal fibula", "proximal fibula", ONE),
        (r"popliteal", "popliteal fossa", ONE),
        (r"synovi(um|al)", "synovium", NONE),
        (r"knees?\b|knee joint", "knee", BOTH),
    ),
    "hand": (
        (r"distal radi(us|al)", "distal radius", ONE),
        (r"radi(us|al)\b", "radius", ONE),
        (r"ulna(r)?\b", "ulna", ONE),
        (r"scaphoid", "scaphoid", ONE),
        (r"lunate", "lunate", ONE),
        (r"trapezi(um|oid)|hamate|capitate|triquetr(um|al)|pisiform", "carpal bones", ONE),
        (r"triangular fibrocartilage|\btfcc\b", "triangular fibrocartilage complex", ONE),
        (r"distal radioulnar|\bdruj\b", "distal radioulnar joint", ONE),
        (r"metacarpophalangeal|\bmcp\b", "metacarpophalangeal joint", BOTH),
        (r"interphalangeal|\b[dp]ip joints?", "interphalangeal joint", BOTH),
        (r"palm(ar)?\b", "palm", ONE),
        (r"dorsum of the hand|dorsal hand", "dorsum of hand", ONE),
        (r"carpal tunnel", "carpal tunnel", ONE),
        (r"carpal bones?|carpus", "carpal bones", ONE),
        (r"median nerve", "median nerve", ONE),
        *_ordinals("metacarpal", ONE),
        (r"metacarp(al|als|us)", "metacarpal", BOTH),
        (r"phalan(x|ges|geal)", "phalanx", BOTH),
        (r"thumbs?", "thumb", BOTH),
        (r"fingers?", "finger", BOTH),
        (r"hypothenar", "hypothenar eminence", ONE),
        (r"thenar", "thenar eminence", ONE),
        (r"flexor tendons?", "flexor tendons", ONE),
        (r"extensor tendons?", "extensor tendons", ONE),
        (r"wrists?\b", "wrist", BOTH),
        (r"hands?\b", "hand", BOTH),
    ),
    "shoulder": (
        (r"acromioclavicular|\bacj\b|\bac joint", "acromioclavicular joint", ONE),
        (r"medial (side |end |third |aspect )?(of the )?clavic(le|ular)", "medial clavicle", ONE),
        (r"clavic(le|ular)", "clavicle", ONE),
        (r"scapul(a|ar)", "scapula", ONE),
        (r"glenohumeral", "glenohumeral joint", ONE),
        (r"glenoid", "glenoid", ONE),
        (r"glenoid labrum|\blabr(um|al)", "glenoid labrum", ONE),
        (r"biceps tendon|long head of the biceps", "biceps tendon", ONE),
        (r"coracoid", "coracoid process", ONE),
        (r"sternoclavicular", "sternoclavicular joint", ONE),
        (r"axilla(ry)?\b(?! (arter|vein|vessel|nerve))", "axilla", ONE),
        (r"greater tuberosity|surgical neck", "proximal humerus", ONE),
        (r"rotator cuff|supraspinatus|infraspinatus|subscapularis", "rotator cuff", ONE),
        (r"subacromial", "subacromial bursa", ONE),
        (r"acromion", "acromion", ONE),
        (r"deltoid", "deltoid", ONE),
        (r"humeral head|proximal humer(us|al)|(upper|proximal) end of the humerus", "proximal humerus", ONE),
        (r"shoulder joint", "shoulder joint", ONE),
        (r"shoulders?\b", "shoulder", BOTH),
    ),
    "foot": (
        (r"calcane(us|um|al)|\bheel\b", "calcaneus", ONE),
        (r"tal(us|ar)\b", "talus", ONE),
        (r"navicular", "navicular", ONE),
        (r"medial cuneiform", "medial cuneiform", ONE),
        (r"(middle|intermediate) cuneiform", "middle cuneiform", ONE),
        (r"lateral cuneiform", "lateral cuneiform", ONE),
        (r"cuboid", "cuboid", ONE),
        (r"subtalar", "subtalar joint", ONE),
        (r"sinus tarsi", "sinus tarsi", ONE),
        (r"lisfranc|tarsometatarsal", "tarsometatarsal joint", ONE),
        (r"metatarsophalangeal|\bmtp\b", "metatarsophalangeal joint", BOTH),
        (r"sesamoids?", "sesamoid", ONE),
        (r"medial malleol(us|ar)", "medial malleolus", ONE),
        (r"lateral malleol(us|ar)", "lateral malleolus", ONE),
        (r"malleol(us|i|ar)", "malleolus", ONE),
        (r"distal fibula(r)?", "distal fibula", ONE),
        (r"plantar fascia", "plantar fascia", ONE),
        *_ordinals("metatarsal", ONE),
        (r"metatars(al|als|us)", "metatarsal", BOTH),
        (r"midfoot", "midfoot", ONE),
        (r"forefoot", "forefoot", ONE),
        (r"hindfoot", "hindfoot", ONE),
        (r"dorsum of the foot|dorsal (surface of the )?foot", "dorsum of foot", ONE),
        (r"plantar", "plantar foot", ONE),
        (r"tarsal bones|tarsus", "tarsal bones", ONE),
        (r"achilles", "achilles tendon", ONE),
        (r"distal tibia(l)?", "distal tibia", ONE),
        (r"ankle( joint)?s?\b", "ankle", BOTH),
        (r"toes?\b|hallux", "toe", BOTH),
        (r"foot\b|feet\b", "foot", BOTH),
    ),
    "head and neck": (
        (r"maxillary sinus(es)?|maxillary antr(um|al)", "maxillary sinus", BOTH),
        (r"frontal sinus(es)?", "frontal sinus", BOTH),
        (r"ethmoid(al)?( sinus(es)?| air cells)?", "ethmoid sinus", BOTH),
        (r"sphenoid (sinus(es)?)", "sphenoid sinus", NONE),
        (r"paranasal sinus(es)?|\bsinus(es)?\b|sinonasal", "paranasal sinuses", NONE),
        (r"nasal cavit(y|ies)|nasal (septum|wall)|\bnose\b|intranasal", "nasal cavity", BOTH),
        (r"mandib(le|ular)|\bjaw\b|ramus", "mandible", ONE),
        (r"maxill(a|ary)", "maxilla", ONE),
        (r"preseptal", "preseptal region", ONE),
        (r"orbital fat", "orbital fat", ONE),
        (r"extraocular muscles?", "extraocular muscles", ONE),
        (r"lacrimal glands?", "lacrimal gland", BOTH),
        (r"optic nerve sheaths?", "optic nerve sheath", BOTH),
        (r"orbits?\b|orbital|intraorbital", "orbit", BOTH),
        (r"infratemporal fossa", "infratemporal fossa", ONE),
        (r"pterygopalatine fossa", "pterygopalatine fossa", ONE),
        (r"temporomandibular|\btmj\b", "temporomandibular joint", BOTH),
        (r"zygom(a|atic)", "zygoma", ONE),
        (r"parotid", "parotid gland", BOTH),
        (r"submandibular spaces?", "submandibular space", BOTH),  # the space around the gland, not the gland
        (r"sublingual (spaces?|glands?)", "sublingual space", BOTH),
        (r"submandibular", "submandibular gland", BOTH),
        (r"tongue", "tongue", NONE),
        (r"floor of (the )?mouth", "floor of mouth", NONE),
        (r"palat(e|al|ine)(?! tonsil)", "palate", NONE),
        (r"tonsil(s|lar)?", "palatine tonsil", BOTH),
        (r"buccal", "buccal space", ONE),
        (r"masseter|masticator", "masticator space", ONE),
        (r"nasolacrimal|lacrimal sac", "nasolacrimal duct", BOTH),
        (r"globe\b|eyeball|intraocular", "globe", BOTH),
        (r"mastoid", "mastoid", ONE),
        (r"middle ear|tympanic", "middle ear", ONE),
        (r"external (auditory|ear) canal", "external auditory canal", ONE),
        (r"epiglott(is|ic)|supraglott(is|ic)|vallecul(a|ae)", "supraglottis", NONE),
        (r"p[iy]riform (sinus|fossa)", "piriform sinus", BOTH),
        (r"carotid (space|sheath|bifurcation)", "carotid space", ONE),
        (r"supraclavicular", "supraclavicular fossa", BOTH),
        (r"submental", "level ia", NONE),
        (r"parathyroid", "parathyroid gland", BOTH),
        (r"hyoid", "hyoid bone", NONE),
        (r"sternocleidomastoid", "sternocleidomastoid muscle", ONE),
        (r"nasopharyn(x|geal)", "nasopharynx", NONE),
        (r"oropharyn(x|geal)", "oropharynx", NONE),
        (r"hypopharyn(x|geal)", "hypopharynx", NONE),
        (r"vocal (cord|fold)s?", "vocal cord", BOTH),
        (r"glott(is|ic)", "glottis", NONE),
        (r"laryn(x|geal)", "larynx", NONE),
        (r"trache(a|al)", "trachea", NONE),
        (r"thyroid lobes?|lobes? of the thyroid|\blobes?\b", "thyroid lobe", BOTH),
        (r"isthmus", "thyroid isthmus", NONE),
        (r"thyroid( gland)?", "thyroid gland", NONE),
        *((rf"level {n}\b", f"level {n}", ONE) for n in ("ia", "ib", "i", "ii", "iii", "iv", "v", "vi")),
        (r"root of (the )?neck", "root of neck", NONE),
        (r"prevertebral", "prevertebral soft tissue", NONE),
        (r"retropharyngeal", "retropharyngeal space", NONE),
        (r"parapharyngeal", "parapharyngeal space", ONE),
        (r"longus col?li", "longus colli tendon", NONE),
        (r"calvari(a|um|al)", "calvaria", NONE),
        (r"facial bones", "facial bones", NONE),
        (r"neck\b", "neck", ONE),
    ),
})
# A region that becomes another once a side is named ("the left side of the thyroid" is its left lobe).
SIDED_REGIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cerebellum": ("cerebellar hemisphere", BOTH),
    "thyroid gland": ("thyroid lobe", BOTH),
}


# Plural of a sided region for "bilateral" ("bilateral lower lobes", "bilateral hila").
BILATERAL_FORMS: dict[str, str] = {
    "hilum": "hila",
    "lung": "lungs",
    "lung apex": "lung apices",
    "lung base": "lung bases",
    "hemithorax": "hemithoraces",
    "iliac fossa": "iliac fossae",
    "pleural space": "pleural spaces",
    "thalamus": "thalami",
    "basal ganglia": "basal ganglia",
    "lung periphery": "lung peripheries",
    "adnexa": "adnexa",
    "periventricular white matter": "periventricular white matter",
    # the organs beyond the paper's four
    "ovary": "ovaries",
    "phalanx": "phalanges",
    "foot": "feet",
    "gluteal muscles": "gluteal muscles",
    "flexor tendons": "flexor tendons",
    "extensor tendons": "extensor tendons",
    "extraocular muscles": "extraocular muscles",
    "paranasal sinuses": "paranasal sinuses",
    "carpal bones": "carpal bones",
    "tarsal bones": "tarsal bones",
    "maxillary sinus": "maxillary sinuses",
    "frontal sinus": "frontal sinuses",
    "ethmoid sinus": "ethmoid sinuses",
    "piriform sinus": "piriform sinuses",
    "supraclavicular fossa": "supraclavicular fossae",
    "pterygopalatine fossa": "pterygopalatine fossae",
    "infratemporal fossa": "infratemporal fossae",
}


def position_phrase(side: str | None, region: str | None, sides: tuple[str, ...] = SIDE_NAMES) -> str | None:
    """The canonical phrase for a side and/or region ("left frontal lobe", "bilateral lower lobes").

    A side the region does not take (a "left middle lobe", a sideless "sellar region") is dropped.
    """
    if side is not None and side not in SIDE_NAMES:
        raise ValueError(f"side {side!r} not in {SIDE_NAMES}")
    if region is None:
        return side
    if side not in sides:
        return region
    if side == "bilateral":
        plural = BILATERAL_FORMS.get(region) or (region if region.endswith("s") else f"{region}s")
        return f"bilateral {plural}"
    return f"{side} {region}"


def _phrases(organ: str) -> tuple[str, ...]:
    out: list[str] = []
    for _, region, sides in POSITION_REGIONS[organ]:
        out += [p for s in (sides or (None,)) if (p := position_phrase(s, region, sides)) and p not in out]
    return tuple(out)


# Brain tumour boxes (positions.brain_box_position): hemisphere by the radiological convention on
# axial and coronal slices, the midline, the sellar region for pituitary tumours.
BRAIN_BOX_POSITIONS: tuple[str, ...] = ("right hemisphere", "left hemisphere", "midline", "sellar region")
TEXT_POSITIONS: dict[str, tuple[str, ...]] = {organ: _phrases(organ) for organ in POSITION_REGIONS}

# Adversarial position candidates per organ (captions, VQA-RAD, brain boxes): the text vocabulary of
# each organ; chest radiographs keep the zones of their boxes. Sides are flipped left<->right for the
# "adversarial" strategy.
POSITIONS_BY_ORGAN: dict[str, tuple[str, ...]] = {
    "chest": CXR_POSITIONS,
    "brain": TEXT_POSITIONS["brain"],
    "abdomen": TEXT_POSITIONS["abdomen"],
    "spine": TEXT_POSITIONS["spine"],
    **{organ: TEXT_POSITIONS[organ] for organ in ("pelvis", "knee", "hand", "shoulder", "foot", "head and neck")},
}
# Chest images other than radiographs (CT, MRI) name lobes, not radiograph zones.
POSITIONS_BY_ORGAN_MODALITY: dict[tuple[str, str], tuple[str, ...]] = {
    ("chest", "ct"): TEXT_POSITIONS["chest"],
    ("chest", "mri"): TEXT_POSITIONS["chest"],
}
GENERIC_POSITIONS: tuple[str, ...] = ("left side", "right side", "upper part", "lower part")

SIDE_WORDS: dict[str, str] = {"left": "right", "right": "left"}


def flip_side(phrase: str) -> str | None:
    """The left-right mirror of a position phrase, or None when it names no side."""
    words = phrase.split()
    if not any(w in SIDE_WORDS for w in words):
        return None
    return " ".join(SIDE_WORDS.get(w, w) for w in words)


def positions_for(organ: str, modality: str, condition: str | None = None) -> tuple[str, ...]:
    """Adversarial position candidates for an image of this organ and modality (and finding: a pleural
    process on a chest radiograph is asked pleural positions, never lung zones)."""
    if organ == "chest" and modality == "x-ray" and condition in PLEURAL_CONDITIONS:
        return CXR_PLEURAL_POSITIONS
    return POSITIONS_BY_ORGAN_MODALITY.get((organ, modality)) or POSITIONS_BY_ORGAN.get(organ, GENERIC_POSITIONS)
