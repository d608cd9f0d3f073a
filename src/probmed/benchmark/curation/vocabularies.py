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
    """The cells a chest radiograph position covers, or None when it is not one of CXR_POSITIONS."""
    return _CXR_FOOTPRINTS.get(position)


# Hallucinated-position candidates on chest radiographs (the heart is never one: it is always there).
CXR_POSITIONS: tuple[str, ...] = tuple(
    cxr_position(s, z) for s in CXR_SIDES for z in (*CXR_ZONES, None)
) + (MEDIASTINAL_POSITION,)

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
        (r"upper (lung )?zones?", "upper lung zone", BOTH),
        (r"mid(dle)? (lung )?zones?", "middle lung zone", BOTH),
        (r"lower (lung )?zones?", "lower lung zone", BOTH),
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
        (r"lateral ventricles?", "lateral ventricle", BOTH),
        (r"third ventricle", "third ventricle", NONE),
        (r"fourth ventricle", "fourth ventricle", NONE),
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
        (r"\bliver\b|hepatic", "liver", NONE),
        (r"\bkidneys?\b|\brenal\b", "kidney", BOTH),
        (r"adrenal|suprarenal", "adrenal gland", BOTH),
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


def positions_for(organ: str, modality: str) -> tuple[str, ...]:
    """Adversarial position candidates for an image of this organ and modality."""
    return POSITIONS_BY_ORGAN_MODALITY.get((organ, modality)) or POSITIONS_BY_ORGAN.get(organ, GENERIC_POSITIONS)
