"""Offline rule-based caption -> metadata extractor (modality, organ, findings, positions, figure flags).

The rules are general (vocabulary lookups and a few phrase patterns), never tuned to single captions:

* **Modality**: every technique named. CT, MRI and X-ray words are the askable modalities; a
  non-radiology or other technique (ultrasound, PET, angiography, endoscopy, ...) makes the figure
  ``other``; two askable modalities make it ambiguous (``unknown``, reason in ``notes``); none ->
  ``unknown``.
* **Organ**: the body region named next to the technique ("CT of the chest", "abdominal MRI")
  decides; otherwise region and anatomy words are counted (a region word weighs more than an organ
  inside it) and the largest count wins; a tie or two regions next to the technique is ambiguous.
  Head imaging maps to brain, pelvic organs to abdomen, vertebrae and the sacrum to spine.
* **Findings**: condition synonyms (curation.vocabularies, longest phrase first, plurals allowed),
  except qualifiers of another finding ("cystic lesion" is a lesion), pure signal/density words
  (enhancement, hyperintensity) and anatomical phrases that look like findings ("lateral mass",
  "nasal cavity"). "dilated / distended / thickened <organ>" is dilatation / thickening. A few words
  change sense with the organ ("collapse" is atelectasis in the chest, a fracture in the spine).
  Negation is clause-scoped: a cue before the condition ("no", "without", "resolution of", "history
  of", "in the setting of", ...) or after it ("has disappeared", "resolved") makes it not a finding.
* **Positions**: regions of the record's organ (vocabularies.POSITION_REGIONS) and sides, tied to
  a condition when they follow it in its clause ("mass in the left lower lobe", "metastases in each
  lung") or stand right before it ("right frontal lesion", "left pleural effusion"), composed as
  ``"<side> <region>"`` (vocabularies.position_phrase). Vertebral levels map to spine regions.
* **Figure flags** (reasons to leave a figure out of an image benchmark): several panels named,
  animal study words, non-radiology figure words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from probmed.benchmark.curation.profiles import (  # noqa: F401  (the paper's tables, read here since before profiles)
    ORGAN_ANATOMY,
    ORGAN_REGIONS,
    PAPER,
    REGION_WEIGHT,
    Profile,
)
from probmed.benchmark.curation.tables import off_field_sites, region_overlaps
from probmed.benchmark.curation.vocabularies import POSITION_REGIONS, SIDED_REGIONS, position_phrase

MODALITY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("other", r"doppler|echocardiogra|\bpet\b|\bspect\b|scintigra|\bcag\b|"
              r"bone scan|(?<!\bct\W)(?<!\bmr\W)(?<!\bct\)\s)(?<!\bmr\)\s)angiogra|\bdsa\b|endoscop|\bercp\b|nuclear medicine|"
              r"fluoroscop|mammogra|barium|urethrogra|myelogra|cystogra|urogra|"
              r"cone[- ]beam|\bcbct\b|optical coherence|photograph|histolog|micrograph|"
              r"spectroscopy|tractography"),
    # ultrasound: its own modality in the extended profile, "other" in the paper's (profiles.Profile.modalities)
    ("ultrasound", r"ultrasound|ultrasonograph|sonograph|\bus\b|\busg\b|hypoechoic|hyperechoic|anechoic|echogenic"),
    # and each profile's own technique words (profiles.Profile.techniques: dental films, ultrasound variants)
    ("mri", r"\bmri?\b|\bmr\b|magnetic resonance|\bmra\b|\bt[12][- ]?weighted|"
            r"(?<!at )(?<!level )(?<!of )\bt[12](w|wi)?\b(?![- /]?(t?\d|vertebra|level|to\b))|\bflair\b|"
            r"diffusion[- ]weighted|\bdwi\b|\bswi\b|\bstir\b|gadolinium"),
    ("ct", r"\bct\b|\bcta\b|\bhrct\b|\bcect\b|\bmdct\b|computed tomograph|computeri[sz]ed tomograph|tomodensitometr|"
           r"ct[- ]scan"),
    ("x-ray", r"x-?rays?\b|radiograph|\bcxr\b|plain film|roentgen|\bkub\b"),
)
NEGATION = re.compile(
    r"\b(no|not|without|absence of|absent|negative for|free of|resolution of|resolved|ruled out|rule out|"
    r"no evidence of|no signs? of|unremarkable|normal|remission of|disappearance of|heal(ing|ed) of)\b"
)
# Context, not a finding of this image: scoped to the words that follow, up to a verb.
CONTEXT = re.compile(
    r"\b(history of|known|in the setting of|previous|previously|prior|status post|after (the )?(resection|removal|"
    r"excision) of|(operation|surgery|fusion|treatment|treated|fixation|debridement|resection) for|"
    r"follow-up (of|for)|evaluated? for|to (rule out|exclude)|(examination|evaluation|investigation|work-?up|"
    r"screening|staging|surveillance) (for|of))\b"
)
CONTEXT_END = re.compile(r"\b(shows?|showing|reveals?|revealing|demonstrat\w*|depicts?|is|are|was|were|seen|noted|"
                         r"with|which)\b|[,]")
POST_NEGATION = re.compile(r"^\W*(\w+\W+){0,6}?(has |have |had |was |were )?(\w+ )?(disappeared|resolved|eliminated|"
                           r"removed|excluded|ruled out|regressed|resection|resected|excised|healed)\b")
CLAUSE_SPLIT = re.compile(r"\.(?=\s|$)|[;:!?]|\bbut\b|\bhowever\b|\balthough\b|\bwhereas\b|\bwhile\b")
# Condition synonyms that qualify another finding or describe signal/density, never findings of
# their own in a caption; and anatomical phrases that contain a condition word.
QUALIFIERS = frozenset({"cystic", "calcified", "nodular", "hypodense lesion"})
SIGNS = frozenset({"enhancement", "hyperintensity", "hypointensity", "hypodensity", "hyperdensity"})
ANATOMICAL = (
    r"lateral mass(es)?|fusion mass|bone mass|muscle mass|(nasal|oral|peritoneal|pleural|abdominal|tympanic|"
    r"pelvic|thoracic|glenoid|cotyloid|endometrial|uterine|amniotic|pericardial|joint|medullary|nasal) cavit(y|ies)|"
    r"collecting system|mass of \d|(lymph|collateral) vessels?"
)
# Words whose finding depends on the organ; None: not a finding for that organ.
ORGAN_SENSE: dict[str, dict[str, str | None]] = {
    "collapse": {"chest": "atelectasis", "spine": "fracture"},
    "infiltration": {"chest": "infiltration"},
    "consolidation": {"chest": "consolidation"},
    "atelectasis": {"chest": "atelectasis"},
}
# Organs where a word of ORGAN_SENSE that names no finding of theirs is no finding at all.
SENSELESS_ORGANS = frozenset({"spine", "brain", "abdomen", "pelvis", "knee", "hand", "shoulder", "foot", "head and neck"})
DESCRIBED = (  # "<adjective> <organ>" or "<noun> of <organ>" descriptions that name a finding
    (r"\b(dilated|distended|distension|distention|dilatation|dilation|ectatic)\b", "dilatation"),
    (r"\b(thickened|increased thickness)\b", "thickening"),
    (r"\benlarged (\w+ ){0,2}(lymph )?nodes?\b|\blymph nodes? (enlargement|swelling)\b", "lymphadenopathy"),
)
ANIMAL = re.compile(
    r"\b(dogs?|cats?|calf|calves|sheep|rats?|mice|mouse|murine|rodents?|rabbits?|pigs?|porcine|swine|feline|"
    r"equine|bovine|horses?|monkeys?|primates?|veterinary|animals?|ovine|goats?|hamsters?)\b"
)
NON_RADIOLOGY = re.compile(
    r"\b(photograph|histolog|histopatholog|microscop|micrograph|intra-?operative (view|photo|image|finding)|"
    r"gross specimen|specimen|illustration|diagram|drawing|schematic|flow ?chart|graph|spectrum|spectroscopy|"
    r"endoscop|staining|stained)\w*"
)
PANELS = re.compile(
    r"\(\s*[a-h]\s*(?:[,\-–&]|and|to)\s*[a-h]?\s*\)|\b(?:fig(?:ure)?s?\.?\s*\d+\s*[a-h]\b.*?){2}|"
    r"\b(?:panels?|upper|lower|top|bottom|left|right|middle)\s+(?:panels?|images?|row)\b|"
    r"\b(?:fig(?:ure)?s?\.?\s*\d+\s*[a-h]?\s*(?:and|[-–,])\s*(?:fig(?:ure)?s?\.?\s*)?\d*[a-h]?)\b|"
    r"(?:^|[.;:]\s*|\(\s*)[a-h]\s*[).:]\s*(?:axial|coronal|sagittal|transverse|ct|mri?|t[12]|x-?ray|radiograph|"
    r"images?|scans?|pre|post|before|after|follow|initial|plain|contrast|non|lateral|ap|pa)\b.*\b[b-h]\s*[).:]|"
    r"\b[a-h]\s*(?:,|and)\s*[a-h]\)|"
    r"\b(?:axial|coronal|sagittal|transverse|ct|mri?|radiographs?|images?|scans?|views?)\s*\(\s*[a-h]\s*\).*"
    r"\b(?:axial|coronal|sagittal|transverse|ct|mri?|radiographs?|images?|scans?|views?)\s*\(\s*[b-h]\s*\)|"
    r"\b(?:at|on the) left and (?:at |on the )?right\b|\b(?:images?|scans?) (?:at|on the) (?:left|right)\b|"
    r"\bfig(?:ure)?s?\.?\s*(\d+)\b.*\bfig(?:ure)?s?\.?\s*(?!\1\b)\d+\b"
)
SIDE_WORDS = {"left": "left", "right": "right", "bilateral": "bilateral", "bilaterally": "bilateral",
              "both": "bilateral", "each": "bilateral"}
# A side word right before an anatomical name that carries it but is not the patient's side.
CHAMBER = re.compile(r"\b(right|left) (atri(um|al)|ventric(le|ular))\b")


@dataclass
class Extraction:
    """What a caption says about its image: modality, organ, findings with positions, negated conditions."""

    id: str
    modality: str = "unknown"
    organ: str = "unknown"
    findings: list[dict] = field(default_factory=list)  # {"condition", "position"}
    negated: list[str] = field(default_factory=list)  # conditions mentioned as absent
    normal: bool = False  # the caption says the image is normal
    flags: list[str] = field(default_factory=list)  # multi-panel, animal, non-radiology, ambiguous ...

    def to_json(self) -> dict:
        return {"id": self.id, "modality": self.modality, "organ": self.organ, "findings": self.findings}


def normalise_text(text: str) -> str:
    """Lower case, one kind of dash, one spelling of disc, single spaces."""
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text.lower())
    text = re.sub(r"\bdisk(s)?\b", r"disc\1", text)
    return re.sub(r"\s+", " ", text).strip()


# --- modality and organ --------------------------------------------------------------------



@lru_cache(maxsize=None)
def _techniques(profile: Profile) -> list[tuple[str, re.Pattern]]:
    """Every technique pattern a profile reads, compiled once."""
    return [(name, re.compile(p)) for name, p in MODALITY_PATTERNS + profile.techniques]


@lru_cache(maxsize=None)
def _organ_words(profile: Profile) -> tuple[list[tuple[str, re.Pattern]], list[tuple[str, re.Pattern]]]:
    """(region, anatomy) patterns of a profile, compiled once."""
    return ([(name, re.compile(p)) for name, p in profile.regions],
            [(name, re.compile(p)) for name, p in profile.anatomy])


def _named_modality(name: str, profile: Profile) -> str:
    """A technique pattern's name in a profile: a technique the profile does not ask about is "other"."""
    return name if name in profile.modalities else "other"


def find_modality(text: str, profile: Profile = PAPER) -> str:
    """The modality named earliest in lower-cased text (x-ray, ct, mri, other), or ``unknown``.

    For short texts that name one technique (a VQA-RAD answer or question); captions go
    through :func:`modality_of`, which also reports ambiguity."""
    best: tuple[int, str] | None = None
    for name, rx in _techniques(profile):
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), _named_modality(name, profile))
    return best[1] if best else "unknown"


def modality_of(text: str, profile: Profile = PAPER) -> tuple[str, str | None]:
    """(modality, ambiguity note) of normalised text; see the module docstring."""
    named = {_named_modality(name, profile) for name, rx in _techniques(profile) if rx.search(text)}
    if "other" in named:
        return "other", None
    askable = [m for m in profile.modalities if m in named]
    if len(askable) > 1:
        return "unknown", f"ambiguous modality: {' and '.join(askable)} named"
    return (askable[0], None) if askable else ("unknown", None)


def _technique_spans(text: str, profile: Profile = PAPER) -> list[tuple[int, int]]:
    return [m.span() for name, rx in _techniques(profile) if name in profile.modalities for m in rx.finditer(text)]


# Words of a region that name no imaged region (issue 38: organs from the figure, not from a word). A landmark a
# finding is placed against ("under the left scapula", "near the hip") names a structure beside it: it weighs as an
# anatomy word and never stands with the technique. A complaint or a score ("hip pain", "Harris hip score") and the
# patient's history or disease ("in a patient with adenocarcinoma of the prostate", "a fetus with cardiac
# rhabdomyomas", "history of breast cancer") name none: their words are not counted (a CT of the upper abdomen
# was read as pelvis, a fetal brain MRI as chest).
LANDMARK = re.compile(r"\b(under|beneath|underneath|below|above|behind|near|around|adjacent to|next to|close to|deep to|"
                      r"superficial to|(anterior|posterior|medial|lateral|inferior|superior) to)\s+(the\s+)?((left|right)\s+)?$")
COMPLAINT = re.compile(r"\s*(pain|ache|score|tenderness|complaints?|symptoms?)\b")  # matched right after a region word
PATIENT_CONTEXT = re.compile(r"\b(patient|man|woman|boy|girl|child|infant|fetus|foetus|neonate|newborn|female|male)s?"
                             r"(\s*\([^()]{0,40}\))?\s+(with|who had|who has|having|suffering from|affected by|"
                             r"diagnosed with)\b|"
                             r"\b(history of|known|in the setting of|diagnosed with|status post)\b")
# The history or disease ends at a punctuation mark, a verb of the image or the next phrase ("with ARDS as in Figure 6
# with ... pneumothoraces": the disease is ARDS).
CONTEXT_STOP = re.compile(r"[.;:,(]|\b(shows?|showing|reveals?|revealing|demonstrat\w*|depicts?|depicting|seen|noted|"
                          r"with|as|after|before|secondary to|on|at|presented|presenting|underwent|who)\b")


def _context_spans(text: str) -> list[tuple[int, int]]:
    """Spans of the patient's history or disease: from the cue to the end of its phrase."""
    spans = []
    for m in PATIENT_CONTEXT.finditer(text):
        stop = CONTEXT_STOP.search(text, m.end())
        spans.append((m.start(), stop.start() if stop else len(text)))
    return spans


def _organ_hits(text: str, profile: Profile) -> list[tuple[int, int, str, int]]:
    """(start, end, organ, weight) of every region and anatomy word that may name the imaged region: a region word
    weighs REGION_WEIGHT, an anatomy word or a landmark 1; words of a complaint or of the patient's history none."""
    region_re, anatomy_re = _organ_words(profile)
    context = _context_spans(text)
    hits = []
    for weight, table in ((REGION_WEIGHT, region_re), (1, anatomy_re)):
        for fine, rx in table:
            for m in rx.finditer(text):
                if any(s <= m.start() < e for s, e in context) or COMPLAINT.match(text, m.end()):
                    continue
                landmark = weight == REGION_WEIGHT and LANDMARK.search(text[max(0, m.start() - 40):m.start()])
                hits.append((m.start(), m.end(), profile.organ(fine), 1 if landmark else weight))
    return sorted(hits)


def organ_of(text: str, profile: Profile = PAPER) -> tuple[str, str | None]:
    """(organ, ambiguity note): the region named next to the technique, else the largest weighted count.

    A tie between counts goes to the region named first; two regions next to the technique
    ("CT of the neck and thorax") are ambiguous. Landmarks, complaints and the patient's history name no
    imaged region (``_organ_hits``).
    """
    spans = _technique_spans(text, profile)
    hits = _organ_hits(text, profile)
    near: set[str] = set()
    anchors = list(spans)
    for start, end, name, weight in hits:
        if weight == REGION_WEIGHT and _adjacent(text, (start, end), anchors, len(spans)):
            near.add(name)
            anchors.append((start, end))  # "head and neck": a region joined to an adjacent one is adjacent too
    if len(near) == 1:
        return near.pop(), None
    if len(near) > 1:
        return "unknown", f"ambiguous organ: {' and '.join(sorted(near))} named with the technique"
    score: dict[str, int] = {}
    first: dict[str, int] = {}
    for start, _, name, weight in hits:
        score[name] = score.get(name, 0) + weight
        first[name] = min(first.get(name, start), start)
    if not score:
        return "unknown", None
    top = max(score.values())
    winners = sorted((first[k], k) for k, v in score.items() if v == top)
    if len(winners) > 1 and profile.extended:
        return "unknown", f"ambiguous organ: {' and '.join(sorted(k for _, k in winners))} named as often"
    return winners[0][1], None


def organ_abstention(caption: str, organ: str) -> str | None:
    """Why the organ a caption names cannot be vouched for as the figure's field (off_field_sites.csv): the caption
    names a site that lies outside the organ's usual field of view; None when it names none."""
    text = normalise_text(caption)
    for off in off_field_sites().get(organ, ()):
        m = off.site.search(text)
        if m:
            return f"the caption names {m.group(0)!r}, outside the {organ}'s usual field of view"
    return None


def _adjacent(text: str, span: tuple[int, int], anchors: list[tuple[int, int]], techniques: int) -> bool:
    """A region word within the technique's noun phrase: "chest CT", "CT of the chest", "abdominal MRI".

    ``anchors`` starts with the ``techniques`` technique spans, then the regions found adjacent so far."""
    for s, e in anchors:
        between = text[e:span[0]] if span[0] >= e else text[span[1]:s]
        if len(between) <= 40 and not re.search(r"[.;:(]|\b(showing|shows|with|revealing|demonstrat\w*|in|at)\b", between):
            if not re.search(r",|\band\b", between) or (s, e) not in anchors[:techniques]:
                return True
    return False


# --- conditions -------------------------------------------------------------------------------

_ANATOMICAL_RE = re.compile(r"\b(" + ANATOMICAL + r")\b")
# The extended profile also reads "enlarged / widened <structure>" and fluid in a joint or bursa as findings.
EXTENDED_DESCRIBED = (
    (r"\b(enlarged|enlargement of)\b(?! (\w+ ){0,2}(lymph )?nodes?\b)", "enlargement"),
    (r"\b(widened|widening of)\b(?! (\S+ ){0,5}?(joint )?space)", "widening"),  # a joint space is a measurement
    (r"\bfluid (in|within) the (\w+ ){0,3}(joint|bursa|recess|tendon sheath)", "effusion"),
)
# ... and these cues: negation ("neither ... nor", "clearance of the calculi", "union of the fracture"), context
# (a presentation, the reason for a joint replacement), a finding "not observed" after it.
EXTENDED_NEGATION = re.compile(r"\b(neither|nor|clearance of|union of|healing of|misdiagnosed as)\b")
EXTENDED_CONTEXT = re.compile(r"\b(present(ed|ing|s)? with|complain(ed|ing|s)? of|"
                              r"(arthroplasty|tha|tka|thr|replacement) for)\b")
EXTENDED_LINKS = re.compile(r"\b(occupying|filling|cent(er|re)d (on|in)|arising (from|in))\b")
# "(on an axial) MR image of the knee": the figure's subject, not a finding's place.
EXTENDED_SUBJECT = re.compile(r"\b(image|scan|radiograph|view|section|mri|ct|x-ray|ultrasound|sonogram) of the "
                              r"(right |left )?\w+$|\b(image|scan|radiograph|view|section|mri|ct|x-ray|ultrasound|sonogram)"
                              r" of the (right |left )?\w+(?=[,;]| showing| shows| with| demonstrat)")
EXTENDED_DISPLACED = re.compile(r"\b(displac|compress|abutt|push|indent)\w*\b[^,;()]*")
EXTENDED_POST_NEGATION = re.compile(r"^\W*(\w+\W+){0,3}?(was|were|is|are) not (observed|seen|identified|detected|found)\b")


@lru_cache(maxsize=None)
def _condition_words(profile: Profile) -> tuple[dict[str, str], re.Pattern, list[tuple[re.Pattern, str]]]:
    """(synonym -> condition, the synonyms' pattern, described patterns) of a profile, built once."""
    syn = {k: v for k, v in profile.synonyms.items() if k not in QUALIFIERS and v not in SIGNS}
    syn.update({"mass effect": "mass effect"})
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(syn, key=len, reverse=True)) + r")(?:s|es)?\b")
    described = DESCRIBED + (EXTENDED_DESCRIBED if profile.extended else ())
    return syn, pattern, [(re.compile(p), cond) for p, cond in described]


@dataclass(frozen=True)
class Mention:
    """A condition named in a caption, with its character span."""

    start: int
    end: int
    condition: str
    described: bool = False  # "dilated", "thickened": an adjective naming the finding of the organ after it


def condition_mentions(clause: str, organ: str = "unknown", profile: Profile = PAPER) -> list[Mention]:
    """Condition mentions of one clause, in order, qualifiers, signs and anatomy removed."""
    synonyms, pattern, described = _condition_words(profile)
    blocked = [m.span() for m in _ANATOMICAL_RE.finditer(clause)]
    out: list[Mention] = []
    for m in pattern.finditer(clause):
        if any(s <= m.start() < e for s, e in blocked):
            continue
        word = m.group(1)
        condition = synonyms[word]
        sense = ORGAN_SENSE.get(word) or ORGAN_SENSE.get(condition)
        if sense is not None:
            sensed = sense.get(organ) if organ in sense else (None if organ in SENSELESS_ORGANS else condition)
            if sensed is None:
                continue
            condition = sensed
        out.append(Mention(m.start(), m.end(), condition))
    for rx, condition in described:
        for m in rx.finditer(clause):
            if not any(x.start <= m.start() < x.end for x in out):
                out.append(Mention(m.start(), m.end(), condition, described=True))
    return sorted(out, key=lambda x: x.start)


def _is_negated(clause: str, mention: Mention, profile: Profile = PAPER) -> bool:
    """Negated in its clause (up to "with" or a new enumerated item), after it ("has disappeared"),
    or inside a context phrase ("history of")."""
    negation, context = ((NEGATION, EXTENDED_NEGATION), (CONTEXT, EXTENDED_CONTEXT)) if profile.extended \
        else ((NEGATION,), (CONTEXT,))
    for cue in (c for rx in negation for c in rx.finditer(clause[: mention.start])):
        if not re.search(r"\bwith\b|\(\w\)", clause[cue.end():mention.start]):
            return True
    if POST_NEGATION.search(clause[mention.end:]) or (profile.extended and EXTENDED_POST_NEGATION.search(clause[mention.end:])):
        return True
    for cue in (c for rx in context for c in rx.finditer(clause[: mention.start])):
        if not CONTEXT_END.search(clause[cue.end():mention.start]):
            return True
    return False


# --- positions --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """A body region (and side) named in a caption, with its character span."""

    start: int
    end: int
    region: str | None
    sides: tuple[str, ...]
    side: str | None = None

    @property
    def phrase(self) -> str | None:
        if self.region in NEEDS_SIDE and self.side is None:
            return None  # "pulmonary", "hemispheric": the organ itself, not a position in it
        return position_phrase(self.side, self.region, self.sides)


_REGIONS = {organ: [(re.compile(r"\b(?:" + p + r")"), region, sides) for p, region, sides in table]
            for organ, table in POSITION_REGIONS.items()}
_SIDE_RE = re.compile(r"\b(" + "|".join(SIDE_WORDS) + r")\b")
_BI_LOBE = re.compile(r"\bbi(frontal|parietal|temporal|occipital)\b")
# "right middle and lower lobe": two lobes of one side, the side and the noun written once.
_CO_LOBES = re.compile(r"\b(upper|middle|lower) (?:and|&) (upper|middle|lower) (lobes?|(?:lung )?zones?|lung fields?)\b")
NEEDS_SIDE = frozenset({"lung", "pleural space", "hemithorax", "hemisphere", "lung periphery"})
# Names that carry a side or region word without being the patient's side or an organ region.
NOT_A_PLACE = re.compile(
    r"\b(right|left) (atri(um|al)|ventric(le|ular))\b|\bpulmonary (arter\w*|vein\w*|venous|trunk|valve)|"
    r"\b(renal|splenic|iliac|femoral|jugular|subclavian|mesenteric|gastric|adrenal) (vein|veins|venous|arter\w*|vessels?)\b|"
    # the hepatic, portal and ovarian veins are places of their own (vocabularies), not the liver or the ovary
    r"\b(ovarian|hepatic|portal) (venous|arter\w*|vessels?)\b|"
    # a direction ("deviated to the right", "to the left of the defect"), not "inferior to the right parotid gland"
    r"\b(to|toward|towards) the (right|left)\b(?=\s*([,.;:)(]|$|(of|side|and|or|by|with|in|at|on|is|was|are|were|"
    r"due|because|than)\b|\d))|\bleft[- ]to[- ]right\b|\bright[- ]to[- ]left\b|"
    # a projection names the film, not the finding's side ("left lateral radiograph reveals pleural fluid")
    r"\b(right|left)[- ](lateral( decubitus)?|anterior oblique|posterior oblique)(?= (chest )?(views?|x-?rays?|"
    r"radiographs?|films?|projections?|images?)\b)"
)
LINK_AFTER = re.compile(r"^[^,;()]*?\b(in|of|at|within|involving|into|on|from|along|near|over|around|throughout|"
                        r"affecting|extending|between|inside|under|underneath)\b")
BREAK_AFTER = re.compile(r"\b(and|with|which|that|causing|shows?|showing|is|are|was|were|without|no|compress\w*|towards?|"
                         r"displac\w*|abutt\w*|surround\w*|(anterior|posterior|adjacent|next|lateral|medial|superior|"
                         r"inferior|close|proximal|distal|secondary|due) to)\b|;")
# A relation to places names none of them as the finding's site ("between the liver and the pancreas",
# "cannot be distinguished from spleen, pancreas, and stomach").
# "outside the liver, in the porta hepatis", "a cyst overlying the bladder": the place named after "outside" or
# "overlying" is where the finding is not.
RELATION = re.compile(r"\bbetween\b|\b(distinguish\w*|separa\w*|differentiat\w*) from\b|\boutside\b|"
                      r"\boverl(y|ying|ies|ie)\b")
COPULA = re.compile(r"\b(is|are|was|were)( also| again)? (seen|noted|present|located|visible|identified|demonstrated|"
                    r"observed|found|detected)\b")
ASIDE = re.compile(r"\([^()]*\)")  # "(arrow)", "(white arrowheads)"
# The region a condition's own name places it in: a place there adds only its side.
IMPLIED_REGION: dict[str, str] = {
    "effusion": "pleural space", "pneumothorax": "pleural space", "pleural thickening": "pleural space",
    "empyema": "pleural space", "ascites": "peritoneum", "pneumoperitoneum": "peritoneum",
    "appendicitis": "appendix", "hydronephrosis": "kidney", "pyelonephritis": "kidney", "kidney stone": "kidney",
    "cholecystitis": "gallbladder", "cholelithiasis": "gallbladder", "pancreatitis": "pancreas",
    "splenomegaly": "spleen", "hepatomegaly": "liver", "cirrhosis": "liver", "pituitary tumor": "sellar region",
    "midline shift": "midline",
    # conditions of the extended profile whose name holds their place
    "mediastinal shift": "mediastinum", "tracheal shift": "trachea", "carpal tunnel syndrome": "carpal tunnel",
    "talar tilt": "talus", "polycystic kidney disease": "kidney", "rotator cuff tear": "rotator cuff",
    "sacroiliitis": "sacroiliac joint", "anophthalmia": "orbit", "proptosis": "orbit", "laryngocele": "larynx",
    "sinusitis": "paranasal sinuses", "goiter": "thyroid gland", "thyroiditis": "thyroid gland",
    "baker cyst": "popliteal fossa",
}
HEDGE = re.compile(r"\b(consistent with|suggestive of|suggesting|compatible with|in keeping with|representing|"
                   r"indicating|indicative of|due to|likely|probably)\W*(an?|the)?\W*$")


# A part of a structure named before it ("the lateral wall of the", "posterior horn of the", "inferior third"):
# the finding is in the structure, and a side before the part is the structure's ("right lateral wall of the nose").
# Compound directions count ("dorsolateral wall of the"), and two parts joined right before the structure are one
# ("body and ramus of mandible").
PART_OF = re.compile(r"\b(the )?(((antero|postero|dorso|ventro|supero|infero|mid)-?)?(anterior|posterior|medial|lateral|"
                     r"upper|lower|superior|inferior|distal|proximal|middle|outer|inner|deep|superficial|dorsal|volar|"
                     r"palmar|free|central|peripheral|complete|entire|whole) )*"
                     r"(horns?|poles?|thirds?|halves|half|aspects?|walls?|portions?|parts?|surfaces?|margins?|"
                     r"borders?|edges?|tips?|rims?|cortex|sides?|bod(y|ies)|floors?|roofs?)( of)?( the)?"
                     r"( and(?= ?$))?(?= |$)")


def _side_before(clause: str, start: int, reach: int = 24) -> tuple[str, int] | None:
    """(side, where it starts) of a side word ending within ``reach`` characters before start, only
    modifiers between (a part of the structure does not count: "right lateral wall of the nose")."""
    offset = max(0, start - reach - 24)
    hits = list(_SIDE_RE.finditer(clause, offset, start))
    if not hits:
        return None
    between = re.sub(r"^[- ]?(sided|side|half|aspect|part|portion)? ?of the\b", " ", clause[hits[-1].end():start])
    between = PART_OF.sub(" ", between)
    if len(between) > reach:
        return None
    if re.search(r"[,;(]|\b(and|with|of|to|from|in|at|on|into|by|for|is|was|are|were)\b", between):
        return None
    return SIDE_WORDS[hits[-1].group(1)], hits[-1].start()


def _side_after(clause: str, end: int) -> str | None:
    """"the upper lobe of the right lung": the side named right after a region."""
    m = re.match(r"\s+of the (right|left|both)\b", clause[end:])
    return SIDE_WORDS[m.group(1)] if m else None


def _coordinated_lobes(masked: str, found: list[Place]) -> list[Place]:
    """"right middle and lower lobe": the first lobe is a place too, and both take the side written before the first."""
    for m in _CO_LOBES.finditer(masked):
        side, start = _side_before(masked, m.start()) or (None, m.start())
        noun = "lobe" if m.group(3).startswith("lobe") else "lung zone"
        if noun == "lung zone" and {m.group(1), m.group(2)} == {"upper", "lower"}:
            # one finding over the upper and lower zones likely spans the middle one: the side's lung, no zone
            found = [p for p in found if not (m.start() <= p.start < m.end())]
            found.append(Place(start, m.end(), "lung", ("right", "left", "bilateral"), side))
            continue
        out = []
        for word, at, end in ((m.group(1), start, m.end(1)), (m.group(2), m.start(2), m.end())):
            region = f"{word} {noun}"
            sides = next(sd for _, r, sd in POSITION_REGIONS["chest"] if r == region)
            out.append(Place(at, end, region, sides, side if side in sides else None))
        found = [p for p in found if not (m.start() <= p.start < m.end())] + out
    return found


def places(clause: str, organ: str) -> list[Place]:
    """Regions of the organ named in a clause, each with the side stated with it, plus lone sides."""
    masked = NOT_A_PLACE.sub(lambda m: " " * len(m.group(0)), clause)
    found: list[Place] = []
    for rx, region, sides in _REGIONS.get(organ, []):
        for m in rx.finditer(masked):
            if any(p.start <= m.start() < p.end for p in found):
                continue
            side, start = _side_before(masked, m.start()) or (_side_after(masked, m.end()), m.start())
            if region in SIDED_REGIONS and side in ("left", "right"):
                region, sides = SIDED_REGIONS[region]
            found.append(Place(start, m.end(), region, sides, side))
    if organ == "chest":  # RUL, RML, RLL, LUL, LLL name the side with the lobe
        found = [Place(p.start, p.end, p.region, p.sides, {"r": "right", "l": "left"}[masked[p.start]])
                 if p.side is None and re.fullmatch(r"[rl][uml]l", masked[p.start:p.end]) else p for p in found]
    if organ == "chest":
        found = _coordinated_lobes(masked, found)
    if organ == "brain":
        for m in _BI_LOBE.finditer(masked):
            found.append(Place(m.start(), m.end(), f"{m.group(1)} lobe", ("right", "left", "bilateral"), "bilateral"))
    for m in _SIDE_RE.finditer(masked):  # a side that belongs to no region is a position of its own
        if not any(p.start <= m.start() < p.end and p.side for p in found):
            found.append(Place(m.start(), m.end(), None, (), SIDE_WORDS[m.group(1)]))
    return sorted(found, key=lambda p: p.start)


# "in right level II and anterior to the carotid sheath": a place the finding is beside, not in.
RELATIVE = re.compile(r"\b(anterior|posterior|medial|lateral|superior|inferior|adjacent|next|close|deep|superficial|"
                      r"dorsal|ventral)\s+(to|of)\b")
LOCATED_IN = re.compile(r"\b(located|situated|lying|seated)\s+(in|at|within|on|along|over)\s+(the\s+)?$")


def _with_side_before(clause: str, mention: Mention, out: list[Place]) -> list[Place]:
    """"bilateral varices in the broad ligament", "a left-sided mass in the ovary": a side written right
    before the finding is the side of the unsided structures it is placed in after it."""
    side = _side_before(NOT_A_PLACE.sub(lambda m: " " * len(m.group(0)), clause), mention.start, 30)
    if side is None:
        return out
    return [Place(p.start, p.end, p.region, p.sides, side[0]) if side[0] in p.sides else p for p in out]


def positions_of(clause: str, mention: Mention, mentions: list[Mention], organ: str) -> list[str]:
    """The positions tied to a mention: places linked after it by a preposition (with the places
    coordinated with them: "at L4/L5 and at L5/S1"), else the places right before it ("right
    frontal lesion", "hepatic and splenic lesions"), else the side written right before it."""
    cands = [p for p in places(clause, organ) if p.phrase]
    asides = [m.span() for m in ASIDE.finditer(clause)]  # "tear (two vertical tears) of the ...": one finding
    nxt = min((m.start for m in mentions if m.start > mention.start and not any(s < m.start < e for s, e in asides)),
              default=len(clause))
    prev = max((m.end for m in mentions if m.end <= mention.start), default=0)
    if mention.described:  # "the terminal part of the ureter is dilated (within the bladder)": the subject's
        copula = re.search(r"\b(is|are|was|were|appears?|became|becomes)( \w+ly)? $", clause[:mention.start])
        subject = [p for p in cands if copula and p.region and p.end <= copula.start()
                   and re.fullmatch(r"\s*", clause[p.end:copula.start()])]
        if subject and subject[-1].phrase:
            return [str(subject[-1].phrase)]
    out: list[Place] = []
    for p in (p for p in cands if mention.end <= p.start < nxt):
        anchor = out[-1].end if out else mention.end
        between = PART_OF.sub(" ", COPULA.sub(" ", ASIDE.sub(" ", clause[anchor:p.start])))
        reach, joins = (32, r"[,;()]|\b(of|with)\b") if mention.described else (12, r"[,;()]|\b(and|of|with)\b")
        adjoining = not out and len(between.strip()) <= reach and not re.search(joins, between)
        if not out and RELATION.search(between):
            break  # "a mass between the liver and pancreas": the places around it are not its site
        if not out and p.side in ("left", "right") and re.fullmatch(r"[^,;]{0,30}?" + RELATIVE.pattern + r"\s+(the\s+)?",
                                                                   between):
            out.append(Place(p.start, p.end, None, (), p.side))  # "a mass inferior to the right parotid": its side
            break
        if not out and "," in between and 0 <= nxt - p.end <= 3:
            break  # "calcification at its rim, probably ovarian cystadenoma": the place names the next finding's
        located = not out and LOCATED_IN.search(between) and not NEGATION.search(between)
        if not out and not adjoining and not located and (
                len(between) > 60 or not LINK_AFTER.search(between) or BREAK_AFTER.search(between)
                or NEGATION.search(between)):
            break
        if p.region is None and any(s < p.start < e for s, e in asides):
            continue  # a side word inside an aside ("enlargement (both tendons and bundles)") is no place of it
        if out and (len(between) > 35 or not re.search(r"[,/-]|\b(and|or|to)\b", between) or NEGATION.search(between)
                    or RELATIVE.search(between) or p.region is None or any(0 <= m.start - p.end <= 3 for m in mentions)):
            break  # a lone side, or a place that opens the next finding ("... and bilateral opacities")
        out.append(p)
    if all(p.region is None for p in out):  # only lone sides after it: a region inside or right before it wins
        out = [] if any(p.region for p in cands if p.end <= mention.end and p.start >= prev) else out
    if not out:  # places inside the mention ("hilar lymphadenopathy") or right before it
        before = [p for p in cands if prev <= p.start and (p.end <= mention.start or p.end <= mention.end)]
        for p in reversed(before):
            gap = clause[p.end:(out[-1].start if out else mention.start)] if p.end <= mention.start else ""
            if len(gap) > 24 or re.search(r"[;(]|\b(of|in|with|at|shows?|showing|shown|demonstrat\w*|reveal\w*|"
                                          r"depict\w*|display\w*|is|was)\b", gap) \
                    or (not out and re.search(r",|\b(and|or)\b", gap)) or (out and not re.search(r"\b(and|or)\b|,", gap)):
                break
            out.insert(0, p)
    if out and out[0].start >= mention.end and all(p.side is None for p in out):
        out = _with_side_before(clause, mention, out)
    # the place a condition's name implies adds only its side ("right pleural effusion"), unless written out after
    # it with a side ("effusion in the right pleural space"; "ascites in the peritoneal cavity" names no place)
    named = [position_phrase(p.side, None) if p.region == IMPLIED_REGION.get(mention.condition)
             and (p.start < mention.end or p.side is None) else p.phrase for p in out]
    phrases = [p for p in named if p]
    phrases = [p for p in phrases if not (p in ("left", "right", "bilateral") and any(q.startswith(p + " ") for q in phrases))]
    if not phrases:
        side = _side_before(NOT_A_PLACE.sub(lambda m: " " * len(m.group(0)), clause), mention.start, 30)
        phrases = [side[0]] if side else []
    return list(dict.fromkeys(phrases))


# --- whole captions -----------------------------------------------------------------------------


def find_conditions(text: str, organ: str = "unknown", profile: Profile = PAPER) -> tuple[list[dict], list[str]]:
    """(present findings with positions, negated conditions) in free text.

    A finding at several places is listed once per place; a hedged diagnosis ("lesion in the left
    frontal lobe consistent with an abscess") takes the places of the finding it explains."""
    findings: list[dict] = []
    negated: list[str] = []
    cardiac = organ == "chest" and bool(CARDIAC_TEXT.search(normalise_text(text)))
    for clause in CLAUSE_SPLIT.split(normalise_text(text)):
        mentions = condition_mentions(clause, organ, profile)
        if profile.extended:  # what a finding displaces is not where it is; what it occupies is
            shown = _unshown(clause, mentions, cardiac)
            shown = EXTENDED_LINKS.sub(lambda m: "in".ljust(len(m.group(0))), shown)
            shown = EXTENDED_SUBJECT.sub(lambda m: " " * len(m.group(0)), shown)
            placed = {m: _sided_region(shown, organ, m, mentions, positions_of(shown, m, mentions, organ))
                      for m in mentions}
            _share_places(shown, mentions, placed)
            subject = _subject_place(clause, organ)
            for m in mentions:  # "mandibular occlusal radiograph shows a lesion": the figure's subject holds it
                if subject and not placed[m] and m.condition not in IMPLIED_REGION:
                    placed[m] = [subject]
        else:
            placed = {m: positions_of(clause, m, mentions, organ) for m in mentions}
        for m, nxt in reversed(list(zip(mentions, mentions[1:]))):  # "fracture-dislocation of T6", "X and Y in
            # the liver"; and "thrombosis of the AVM in the mandible": a finding of another is where that one is
            gap = ASIDE.sub(" ", clause[m.end:nxt.start])
            if not placed[m] and re.fullmatch(r"\s*(-|/|,|and|or|of( the| an?)?)?\s*", gap):
                placed[m] = placed[nxt]
        last: list[str] = []
        for mention in mentions:
            if _is_negated(clause, mention, profile):
                negated.append(mention.condition)
                continue
            where = placed[mention]
            if last and HEDGE.search(clause[: mention.start]) and (
                    not where or all(any(x.endswith(w) for x in last) for w in where)):
                where = last  # "... in the left frontal lobe consistent with (frontal) abscess"
            last = where or last
            positions: list[str | None] = [*where] if where else [None]
            for position in positions:
                position = _joint_of(mention.condition, position, organ)
                _add(findings, _located(mention.condition, position), position)
    if profile.extended:
        findings = _with_caption_side(_joint_named(findings, normalise_text(text), organ), normalise_text(text), organ)
    present = {f["condition"] for f in findings}
    return findings, list(dict.fromkeys(c for c in negated if c not in present))


HEDGED_BY = re.compile(r"\s*,?\s*(compatible with|consistent with|suggestive of|in keeping with|representing)"
                       r"( an?| the)?\s+([a-z-]+\s+){0,2}")


def _share_places(shown: str, mentions: list[Mention], placed: dict[Mention, list[str]]) -> None:
    """The extended profile, in place: a finding explained by a placed diagnosis takes its place ("a lesion
    compatible with a lipoma under the deltoid"), unless its name holds its own place.

    Two findings joined by "and" after a place do not share it ("bilateral consolidation and cardiomegaly").
    """
    for m, nxt in reversed(list(zip(mentions, mentions[1:]))):
        if not placed[m] and placed[nxt] and m.condition not in IMPLIED_REGION \
                and HEDGED_BY.fullmatch(ASIDE.sub(" ", shown[m.end:nxt.start])):
            placed[m] = placed[nxt]


# The figure's subject at the head of a clause: "<technique> of the (side) <structure> shows/with/:" or
# "(a view) (side) <structure> <technique>" ("Mandibular occlusal radiograph", "Frontal left knee radiograph").
SUBJECT_TECHNIQUE = (r"(radiographs?|roentgenograms?|x-?rays?|films?|ct( scans?)?|computed tomography|mri|mr images?|"
                     r"magnetic resonance( imaging)?|ultrasound|ultrasonography|sonograms?|sonography|usg|scans?|images?|"
                     r"views?)")
SUBJECT_BEFORE = re.compile(r"^\W*([\w-]+\s+){0,3}?" + SUBJECT_TECHNIQUE + r"\s+(\(\w+\)\s+)?of\s+(the\s+)?$")
SUBJECT_AFTER = re.compile(r"^\s*[:,]|^\s+(\w+\s+){0,1}?(shows?|showing|demonstrat\w*|reveal\w*|with)\b")
# Regions that are a whole organ's field of view: without a side, naming one places nothing.
WHOLE_FIELD = frozenset({"neck", "knee", "hand", "wrist", "shoulder", "foot", "ankle", "hip", "pelvis"})
SUBJECT_LEAD = re.compile(r"^\W*([\w-]+\s+){0,2}$")
SUBJECT_TECHNIQUE_AFTER = re.compile(r"^\s+([\w-]+\s+){0,2}?" + SUBJECT_TECHNIQUE + r"\b")


def _subject_place(clause: str, organ: str) -> str | None:
    """The structure a clause names as the figure's subject, when it names no other place of any organ: an unplaced
    finding of that clause is shown in it (the caption's "MRI of the left knee: ... subluxation" is in the left knee)."""
    masked = NOT_A_PLACE.sub(lambda m: " " * len(m.group(0)), clause)
    named = [p for p in places(masked, organ) if p.region]
    if len(named) != 1 or named[0].region in NEEDS_SIDE or not named[0].phrase:
        return None
    p = named[0]
    if p.side is None and p.region in WHOLE_FIELD:
        return None  # "CT of the neck showing a lesion": the field of view, no place within it
    head, tail = masked[:p.start], masked[p.end:]
    if not ((SUBJECT_BEFORE.search(head) and SUBJECT_AFTER.search(tail))
            or (SUBJECT_LEAD.fullmatch(head) and SUBJECT_TECHNIQUE_AFTER.search(tail))):
        return None
    for other in POSITION_REGIONS:  # a place of another organ after it ("lung metastases" on a neck CT); before it,
        # a word of the view ("frontal left knee radiograph") names no place
        if other != organ and any(q.region and q.start >= p.end for q in places(masked, other)):
            return None
    return p.phrase


# A heart caption's "apical" / "apex" is the heart's apex, not the lung's (cardiac wall names are no position).
CARDIAC_TEXT = re.compile(r"\b(cardiac|heart|myocard\w*|cmr|echocardiogra\w*|(left|right) ventric(le|ular)|"
                          r"cardiomyopath\w*|takotsubo)\b")


def _unshown(clause: str, mentions: list[Mention], cardiac: bool) -> str:
    """The clause with what is no finding's place blanked: what a finding displaces ("displacing the bowel";
    a "displaced fracture" is a kind of fracture, its place stays) and, in a heart caption, the apex."""
    def blank(m: re.Match) -> str:
        if any(re.fullmatch(r"displac\w*\s+(\w+\s+){0,2}", clause[m.start():x.start]) for x in mentions):
            return m.group(0)
        return " " * len(m.group(0))

    shown = EXTENDED_DISPLACED.sub(blank, clause)
    return re.sub(r"\b(apical|apex)\b", lambda m: " " * len(m.group(0)), shown) if cardiac else shown


# A joint's own conditions at a joint that a region word also names: "dislocation of the hip" is in the hip joint.
JOINT_CONDITIONS = frozenset({"dislocation", "effusion", "arthritis", "osteoarthritis", "synovitis"})
JOINT_OF: dict[tuple[str, str], str] = {("pelvis", "hip"): "hip joint"}


def _joint_of(condition: str, position: str | None, organ: str) -> str | None:
    if condition not in JOINT_CONDITIONS or position is None:
        return position
    words = position.split()
    side = words[0] if words[0] in ("left", "right", "bilateral") else None
    region = " ".join(words[1:] if side else words)
    region = region[:-1] if side == "bilateral" and region.endswith("s") else region
    joint = JOINT_OF.get((organ, region))
    return position if joint is None else position_phrase(side, joint)


# "joint effusion", "fluid in the joint": the joint is the one joint the caption names ("left hip MRI").
JOINT_ANAPHORA = re.compile(r"\bjoint (effusion|fluid)|(effusion|fluid) (of|in|within) the joint\b(?! space)")
JOINTS: dict[str, frozenset[str]] = {
    "pelvis": frozenset({"hip", "hip joint", "sacroiliac joint"}), "knee": frozenset({"knee"}),
    "shoulder": frozenset({"shoulder joint", "glenohumeral joint", "acromioclavicular joint"}),
    "foot": frozenset({"ankle", "subtalar joint"}), "hand": frozenset({"wrist", "distal radioulnar joint"}),
}


def _joint_named(findings: list[dict], text: str, organ: str) -> list[dict]:
    """An unplaced joint effusion is in the joint the caption names, when it names one joint (one side)."""
    if not JOINT_ANAPHORA.search(text) or organ not in JOINTS:
        return findings
    joints = {p.phrase for p in places(NOT_A_PLACE.sub(lambda m: " " * len(m.group(0)), text), organ)
              if p.region in JOINTS[organ] and p.phrase}
    if len(joints) != 1:
        return findings
    joint = _joint_of("effusion", joints.pop(), organ)
    return [{**f, "position": joint} if f["condition"] == "effusion" and f["position"] is None else f
            for f in findings]


def _sided_region(clause: str, organ: str, mention: Mention, mentions: list[Mention], where: list[str]) -> list[str]:
    """The extended profile: a finding placed only by a side ("lesion on the left angle of the mandible") is
    in the one structure of its clause that takes that side, when the clause names one between the findings
    around it (not "bilateral proptosis with ... and enlarged lacrimal glands") and other than the place its own
    name implies (a left pleural effusion stays "left")."""
    if len(where) != 1 or where[0] not in ("left", "right", "bilateral"):
        return where
    side, condition = where[0], mention.condition
    prev = max((m.end for m in mentions if m.end <= mention.start), default=0)
    nxt = min((m.start for m in mentions if m.start >= mention.end), default=len(clause))
    regions = set()
    for p in places(clause, organ):
        if not prev <= p.start < nxt:
            continue
        if re.search(RELATIVE.pattern + r"\s+(the\s+)?$", clause[:p.start]):
            continue  # "a mass inferior to the left parotid gland" is on the left, not in the gland
        region, sides = SIDED_REGIONS.get(p.region, (p.region, p.sides)) if p.region else (None, ())
        if region and region not in NEEDS_SIDE and region != IMPLIED_REGION.get(condition) and side in sides \
                and p.side in (None, side):
            regions.add((region, sides))
    if len(regions) != 1:
        return where
    region, sides = regions.pop()
    return [position_phrase(side, region, sides) or side]


def _with_caption_side(findings: list[dict], text: str, organ: str) -> list[dict]:
    """The extended profile: a finding placed in a sided structure without a side takes the caption's side
    when the caption names one side only ("X-ray of the left clavicle: clavicle fracture" -> left clavicle)."""
    named = [p for p in places(NOT_A_PLACE.sub(lambda m: " " * len(m.group(0)), text), organ) if p.side]
    takes = {region: region_sides for _, region, region_sides in POSITION_REGIONS.get(organ, ())}
    overlaps = region_overlaps().get(organ, frozenset())
    out: list[dict] = []
    for f in findings:
        position = f["position"]
        # a side tied to another structure ("tumour of the mandible and the right nasal cavity") is not this one's
        # an unplaced finding whose name holds its place ("right ankle radiograph: talar tilt") takes the side only
        implied = IMPLIED_REGION.get(f["condition"]) if position is None else None
        where = implied or position
        sides = {p.side for p in named if p.region in (None, where) or (p.region, where) in overlaps}
        side = sides.pop() if len(sides) == 1 else None
        if implied in takes and side in takes[implied] and side != "bilateral":
            position = side
        elif position in takes and side in takes[position]:
            position = position_phrase(side, position, takes[position])
        if {"condition": f["condition"], "position": position} not in out:
            out.append({"condition": f["condition"], "position": position})
    return out


LOCATED: dict[tuple[str, str], str] = {("calculus", "kidney"): "kidney stone", ("calculus", "ureter"): "kidney stone",
                                       ("calculus", "gallbladder"): "cholelithiasis"}


def _located(condition: str, position: str | None) -> str:
    """A generic finding named more precisely by where it is: a calculus in a kidney is a kidney stone."""
    for (generic, region), specific in LOCATED.items():
        if condition == generic and position and position.split()[-1].startswith(region):
            return specific
    return condition


def _add(findings: list[dict], condition: str, position: str | None) -> None:
    same = [f for f in findings if f["condition"] == condition]
    if position is None:
        if not same:
            findings.append({"condition": condition, "position": None})
        return
    unplaced = [f for f in same if f["position"] is None]
    if unplaced:
        unplaced[0]["position"] = position
    elif not any(f["position"] == position for f in same):
        findings.append({"condition": condition, "position": position})


def normalise_finding(condition: str, position: str | None, organ: str, profile: Profile = PAPER) -> dict | None:
    """A free-text finding (an LLM's) in the controlled vocabularies: the condition's canonical name and the
    position as a phrase of the organ's vocabulary (None when it names none); None when the condition
    names nothing in the vocabulary (it is left out, never kept as free text)."""
    mentions = condition_mentions(normalise_text(condition), organ, profile)
    if not mentions:
        return None
    phrase = None
    if position:
        text = normalise_text(position)
        found = [p.phrase for p in places(text, organ) if p.phrase]
        phrase = found[0] if found else None
    return {"condition": mentions[0].condition, "position": phrase}


# The extended profile: two projections named as one figure ("lateral and dorsoplantar X-ray") are two panels;
# and a study described as normal or healthy with a word between ("normal AP radiograph", "healthy knee"),
# or a normal subject or verdict of the study.
EXTENDED_PANELS = re.compile(r"\b(ap|pa|lateral|oblique|axial|dorsoplantar|anteroposterior|frontal|sagittal|coronal)"
                             r" (and|&) (ap|pa|lateral|oblique|axial|dorsoplantar|anteroposterior|frontal|sagittal|"
                             r"coronal) (views?|x-?rays?|radiographs?|images?|projections?)\b")
EXTENDED_NORMAL = re.compile(r"\bnormal (\w+ ){0,2}(radiograph|x-?ray|scan|image|mri|ct|ultrasound|sonogra\w*|"
                             r"appearance|study)|\bhealthy (\w+ )?(knee|hip|shoulder|hand|wrist|foot|ankle|subject|"
                             r"volunteer|infant|child|adult|prostate|thyroid)|"
                             # the study's subject is normal ("MR imaging of the normal prostate"), or its verdict
                             # is ("Control chest X-ray: normal."); "normal" about one structure is neither
                             r"\b(imaging|images?|sonograph\w*|ultrasound|radiograph\w*|scans?|mri|ct) of (a |the )?normal\b|"
                             r"^[\w -]{0,40}: normal\.?$")


def figure_flags(text: str, profile: Profile = PAPER) -> list[str]:
    """Reasons a captioned figure cannot serve as one image: panels, animal study, non-radiology."""
    flags = []
    if PANELS.search(text) or (profile.extended and EXTENDED_PANELS.search(text)):
        flags.append("multi-panel figure")
    if ANIMAL.search(text):
        flags.append("animal study")
    if NON_RADIOLOGY.search(text):
        flags.append("non-radiology figure")
    return flags


NORMAL = re.compile(r"\b(normal (study|examination|scan|image|appearance|findings?|mri|ct|radiograph|brain|chest)|"
                    r"(no|without) (obvious |any )?(abnormalit|patholog|lesion)|unremarkable)\w*")


def extract(caption_id: str, caption: str, profile: Profile = PAPER) -> Extraction:
    """Rule-based extraction of one caption, in a profile's modalities, organs and vocabularies."""
    text = normalise_text(caption)
    modality, mod_note = modality_of(text, profile)
    organ, organ_note = organ_of(text, profile)
    findings, negated = find_conditions(caption, organ, profile)
    flags = figure_flags(text, profile) + [n for n in (mod_note, organ_note) if n]
    return Extraction(
        id=caption_id,
        modality=modality,
        organ=organ,
        findings=findings,
        negated=negated,
        normal=not findings and bool(NORMAL.search(text) or (profile.extended and EXTENDED_NORMAL.search(text))),
        flags=flags,
    )


def is_empty(ex: Extraction) -> bool:
    """Nothing extractable: no modality, no organ and no finding."""
    return ex.modality == "unknown" and ex.organ == "unknown" and not ex.findings
