"""Offline rule-based caption -> metadata extractor (modality, organ, findings).

Controlled vocabularies (curation.vocabularies) plus clause-scoped negation:
a negation cue ("no", "without", "no evidence of", "negative for", ...)
negates every condition after it up to the end of its clause (".", ";", ":",
"but", "however", "although", "whereas"), so "no evidence of pneumothorax" is
not a finding. Modality and organ are the first vocabulary term mentioned;
a caption that names none gets ``unknown``; a non-CT/MRI/X-ray technique or a
body part outside the four askable organs gets ``other``.

Positions are canonical ``"<side> <region>"`` phrases (either part optional):
side in {left, right, bilateral}, region from REGIONS, both looked up in the
condition's clause (the nearest mention wins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from probmed.benchmark.curation.vocabularies import CONDITION_SYNONYMS

MODALITY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("mri", r"\bmri?\b|\bmr\b|magnetic resonance|\bmra\b|\bt[12][- ]?weighted|\bt[12]w?i?\b|\bflair\b|diffusion[- ]weighted|\bdwi\b|\bswi\b"),
    ("ct", r"\bct\b|\bcta\b|\bhrct\b|\bcect\b|\bmdct\b|computed tomograph|computerized tomograph|tomodensitometr"),
    ("x-ray", r"x-?rays?\b|radiograph|\bcxr\b|plain film|roentgen|\bkub\b|mammogra|barium|fluoroscop|urethrogram|myelogram"),
    ("other", r"ultrasound|ultrasonograph|sonograph|\bus\b|doppler|echocardiogra|\bpet\b|spect\b|scintigra|bone scan|angiogra|\bdsa\b|endoscop|ercp|nuclear medicine"),
)
ORGAN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("spine", r"\bspine\b|spinal|vertebra|\blumbar\b|cervical spine|thoracic spine|\bsacr|intervertebral|\bdisc\b|\bl[1-5]\b|\bc[1-7]\b|\bt1[0-2]\b|thecal"),
    ("brain", r"\bbrain|\bhead\b|cerebr|cerebell|cranial|intracranial|\bskull|ventric(le|ular)|frontal lobe|temporal lobe|parietal|occipital|hemispher|sella|pituitar|basal ganglia|thalam|pons\b|midbrain|subdural|subarachnoid"),
    ("chest", r"\bchest|thora(x|cic)|\blungs?\b|pulmonar|mediastin|\bpleura|\bhilar|\bhilum|\bheart\b|cardiac|aortic arch|bronch|trachea|pericard|\bcxr\b"),
    ("abdomen", r"abdom|\bliver|hepat|\bkidney|renal|pancrea|\bspleen|splenic|\bbowel|colon|gallbladder|biliary|\bpelvi|stomach|gastric|append|duoden|\bileum|jejun|adrenal|mesenter|peritone|rectum|rectal|bladder|\buterus|ovar|prostat"),
    ("other", r"\bknee|\bhip\b|femur|femoral|tibia|fibula|shoulder|\bhand\b|wrist|\bfoot\b|ankle|\bneck\b|thyroid|breast|mandib|maxill|dental|tooth|teeth|\bsinus|orbit|\bface\b|facial|elbow|humer|\barm\b|\bleg\b|\bjaw|parotid|\bfinger|\btoe\b|clavic|scapul|larynx|pharyn"),
)
NEGATION = re.compile(
    r"\b(no|not|without|absence of|absent|negative for|free of|resolution of|resolved|ruled out|rule out|"
    r"no evidence of|no signs? of|unremarkable|normal)\b"
)
CLAUSE_SPLIT = re.compile(r"[.;:!?]|\bbut\b|\bhowever\b|\balthough\b|\bwhereas\b|\bwhile\b")
SIDES = {"left": "left", "right": "right", "bilateral": "bilateral", "bilaterally": "bilateral", "both": "bilateral"}
REGIONS: dict[str, str] = {
    "upper lobe": "upper lobe",
    "lower lobe": "lower lobe",
    "middle lobe": "middle lobe",
    "lung": "lung",
    "lungs": "lung",
    "apex": "apex",
    "apical": "apex",
    "hilum": "hilum",
    "hilar": "hilum",
    "pleural": "pleura",
    "mediastinum": "mediastinum",
    "mediastinal": "mediastinum",
    "frontal": "frontal lobe",
    "temporal": "temporal lobe",
    "parietal": "parietal lobe",
    "occipital": "occipital lobe",
    "cerebellum": "cerebellum",
    "cerebellar": "cerebellum",
    "basal ganglia": "basal ganglia",
    "thalamus": "thalamus",
    "thalamic": "thalamus",
    "hemisphere": "hemisphere",
    "ventricle": "ventricle",
    "liver": "liver",
    "hepatic": "liver",
    "kidney": "kidney",
    "renal": "kidney",
    "adrenal": "adrenal",
    "pancreas": "pancreas",
    "pancreatic": "pancreas",
    "spleen": "spleen",
    "splenic": "spleen",
    "colon": "colon",
    "bowel": "bowel",
    "ovary": "ovary",
    "ovarian": "ovary",
    "breast": "breast",
    "femur": "femur",
    "femoral": "femur",
    "hip": "hip",
    "knee": "knee",
    "shoulder": "shoulder",
    "neck": "neck",
    "orbit": "orbit",
    "maxillary": "maxilla",
    "mandible": "mandible",
    "atrium": "atrium",
    "lobe": "lobe",
}
EXTRA_SYNONYMS = {"mass effect": "mass effect"}

_SYN = {**CONDITION_SYNONYMS, **EXTRA_SYNONYMS}
_COND_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(_SYN, key=len, reverse=True)) + r")\b")
_SIDE_RE = re.compile(r"\b(" + "|".join(SIDES) + r")\b")
_REGION_RE = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(REGIONS, key=len, reverse=True)) + r")\b")
_MOD_RE = [(name, re.compile(p)) for name, p in MODALITY_PATTERNS]
_ORG_RE = [(name, re.compile(p)) for name, p in ORGAN_PATTERNS]


@dataclass
class Extraction:
    id: str
    modality: str = "unknown"
    organ: str = "unknown"
    findings: list[dict] = field(default_factory=list)  # {"condition", "position"}
    negated: list[str] = field(default_factory=list)  # conditions mentioned as absent

    def to_json(self) -> dict:
        return {"id": self.id, "modality": self.modality, "organ": self.organ, "findings": self.findings}


def _first(patterns: list[tuple[str, re.Pattern]], text: str) -> str:
    best: tuple[int, str] | None = None
    for name, rx in patterns:
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), name)
    return best[1] if best else "unknown"


def _nearest(rx: re.Pattern, clause: str, at: int) -> re.Match | None:
    hits = list(rx.finditer(clause))
    return min(hits, key=lambda m: abs(m.start() - at)) if hits else None


def find_conditions(text: str) -> tuple[list[dict], list[str]]:
    """(present findings with positions, negated conditions) in free text."""
    findings: list[dict] = []
    negated: list[str] = []
    for clause in CLAUSE_SPLIT.split(text.lower()):
        neg = NEGATION.search(clause)
        for m in _COND_RE.finditer(clause):
            condition = _SYN[m.group(1)]
            if neg and neg.start() < m.start():
                if condition not in negated:
                    negated.append(condition)
                continue
            side = _nearest(_SIDE_RE, clause, m.start())
            region = _nearest(_REGION_RE, clause, m.start())
            parts = [SIDES[side.group(1)]] if side else []
            if region:
                parts.append(REGIONS[region.group(1)])
            finding = {"condition": condition, "position": " ".join(parts) or None}
            if not any(f["condition"] == condition for f in findings):
                findings.append(finding)
    return findings, negated


def extract(caption_id: str, caption: str) -> Extraction:
    """Rule-based extraction of one caption."""
    text = caption.lower()
    findings, negated = find_conditions(caption)
    return Extraction(
        id=caption_id,
        modality=_first(_MOD_RE, text),
        organ=_first(_ORG_RE, text),
        findings=findings,
        negated=[c for c in negated if not any(f["condition"] == c for f in findings)],
    )


def is_empty(ex: Extraction) -> bool:
    """Nothing extractable: no modality, no organ and no finding."""
    return ex.modality == "unknown" and ex.organ == "unknown" and not ex.findings
