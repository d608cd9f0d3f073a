"""What a caption source may record, and the words its organ is read from: one profile per scope.

The paper's profile keeps its three modalities and four organs (every other technique is "other",
every other body region "other", pelvic organs are the abdomen), so the sources curated before issue 20
(roco_images, MedICaT, ROCO captions) extract exactly as they did. The extended profile (roco_extended)
adds ultrasound and the organs of ``core.vocab.EXTENDED_ORGANS``: its region words name *fine* body
regions (knee, hip, face, neck, scrotum, ...) that ``tables/organ_regions.csv`` merges into organs (or
leaves out as "other"), and it reads the extended condition synonyms. A profile also says what a source
accepts: a figure whose modality or organ is outside it is excluded, with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from probmed.benchmark.curation.tables import organ_regions
from probmed.benchmark.curation.vocabularies import CONDITION_SYNONYMS, EXTENDED_SYNONYMS
from probmed.core.vocab import EXTENDED_MODALITIES, EXTENDED_ORGANS, PAPER_MODALITIES, PAPER_ORGANS

# The paper's profile: region words name one of its four organs or "other"; pelvic organs are abdomen,
# the heart is chest. A region word weighs REGION_WEIGHT organ words.
REGION_WEIGHT = 3
# "head" names the head only on its own: an arrow head is a pointer, the head of a bone or an organ (femoral,
# humeral, radial, fibular, metatarsal, pancreatic head; "the head of the pancreas") is a part of it, and a muscle
# or tendon's long or short head is no region (ROCO_52022, ROCO_47228: abdominal CTs read as brain).
HEAD = (r"(?<!arrow )(?<!arrow-)(?<!femoral )(?<!humeral )(?<!radial )(?<!pancreatic )(?<!fibular )(?<!metatarsal )"
        r"(?<!metacarpal )(?<!mandibular )(?<!condylar )(?<!long )(?<!short )\bhead\b"
        r"(?! of (the )?(\w+ )?(pancrea|femur|femoral|humer|radi|fibul|metatars|metacarp|phalan|mandib|biceps|triceps|"
        r"rib|gastrocnem|caudate|epididym))")
# "abdominal" inside "transabdominal" is the ultrasound's approach, not the region: a transabdominal scan of the
# uterus shows the pelvis (ROCO_51402).
ABDOMEN = r"(?<!trans)(?<!trans-)abdom[ei]n"
# A hilum is the lung's unless an organ's ("the renal transplant's hilum", "splenic hilum").
HILUM = r"(?<!renal )(?<!hepatic )(?<!splenic )(?<!ovarian )(?<!'s )\bhil(um|ar)\b"
ORGAN_REGIONS: tuple[tuple[str, str], ...] = (
    ("spine", r"\bspines?\b|\bspinal\b|vertebra[el]?|\bl-spine|\bc-spine|cervical (cord|level|vertebra)|"
              r"thoracic (spine|vertebra|cord|level)|\blumbar\b|lumbosacral|thoracolumbar|\bsacrum\b|(?<!pre)(?<!pre-)\bsacral\b"),
    ("brain", r"\bbrain|" + HEAD + r"|\bcrani(um|al)\b|\bskull\b|intracranial|cerebral|neurocran"),
    ("chest", r"\bchest\b|\bthorax\b|\blungs?\b|pulmonary|cardiac|\bheart\b|mediastin"),
    ("abdomen", ABDOMEN + r"|\bpelvi[cs]\b|\bpelvis\b"),
    ("other", r"\bneck\b|\bface\b|facial|\borbits?\b|orbital|\bsinus(es)?\b|sinonasal|mandib|maxill|\bteeth\b|"
              r"\btooth\b|\bknee\b|\bhip\b|shoulder|\bhand\b|wrist|\bfoot\b|ankle|elbow|\bfemur\b|\btibia|radius|\bulna|clavic|scapul|patell|"
              r"calcane|\bfingers?\b|\btoes?\b|\bhumer|\bforearm|\bthigh\b|\bleg\b|\barm\b|thyroid|breast|larynx|pharyn|parotid|temporomandibular"),
)
ORGAN_ANATOMY: tuple[tuple[str, str], ...] = (
    ("spine", r"\bintervertebral|\bdiscs?\b|\b[cl][1-7]\b|\bt1[0-2]\b|\bt[3-9]\b|\bt[12](?=\s?[-/]\s?t?\d)|\bs[1-5]\b|"
              r"\bodontoid|\batlas\b|\baxis\b|dorsolumbar|"
              r"myelo|\bcord\b|thecal|pedicle|laminectomy|spondyl|kyphosis|scoliosis|\bcoccy"),
    ("brain", r"cerebell|(?<!left )(?<!right )ventric(le|ular)|frontal lobe|temporal lobe|parietal|occipital|hemispher|\bsellar?\b|"
              r"pituitar|basal ganglia|thalam|\bpons\b|midbrain|subdural|subarachnoid|white matter|meninge|"
              r"cortical vein|gyr(us|i)\b|sulc(us|i)\b"),
    ("chest", r"\bthoracic\b|\bpleura|" + HILUM + r"|aortic arch|bronch|trachea|pericard|\bribs?\b|"
              r"(upper|middle|lower) lobes?|lingula|atri(um|al)|"
              r"ventricle\b(?<!lateral ventricle)|\b(left|right) ventricular\b|pulmonary|\bcxr\b|superior vena|\bsvc\b|esophag"),
    ("abdomen", r"\bliver\b|hepat|\bkidneys?\b|renal|pancrea|\bspleen|splenic|\bbowel|colon|gall ?bladder|biliary|"
                r"stomach|gastric|append|duoden|\bile(um|al)\b|jejun|adrenal|mesenter|peritone|rect(um|al)\b|"
                r"bladder|\buter(us|ine)\b|ovar|prostat|retroperitone|\bcecum\b|sigmoid|rectus (sheath|abdominis)"),
)

# The extended profile: fine regions (organ_regions.csv maps them to organs). Region words name the part
# imaged; anatomy words, structures inside it.
EXTENDED_REGIONS: tuple[tuple[str, str], ...] = (
    ("spine", ORGAN_REGIONS[0][1]),
    ("brain", r"calvari|\bbrain|" + HEAD + r"(?! (and|&) neck)|\bcrani(um|al)\b|\bskull\b|intracranial|cerebral|neurocran|\bneonatal head|"
              r"transfontanel"),
    ("chest", r"\bchest\b|\bthorax\b|\bthoracic\b(?! (spine|vertebra|cord|level|outlet))|\blungs?\b|pulmonary|"
              r"mediastin|hemithora|\bpleura|\bcxr\b"),
    ("heart", r"cardiac|\bheart\b|myocard|\bcmr\b|ventricular (wall|myocardium)"),
    ("breast", r"\bbreasts?\b|mammary|lactat"),
    ("abdomen", ABDOMEN + r"|\bliver\b|hepat|\bkidneys?\b|\brenal\b|pancrea|\bspleen|splenic|gall ?bladder|"
                r"duoden|\bbowel|\bcolon\b|stomach|gastric"),
    ("pelvis", r"\bpelvi(s|c)\b|sacroiliac|\bglute(al|us)|\bbuttocks?|transvaginal|endovaginal|transrectal|"
               r"\buter(us|ine)\b|\bovar(y|ies|ian)|\bovaric|adnex|\bprostat|\bcervix\b|\bvagina\b|"
               r"(?<!gall)(?<!gall )(?<!gall-)\bbladder|\bacetabul|iliopsoas|pubic|\bischi(um|al)"),
    ("hip", r"\bhips?\b|femoral (head|neck)|trochanter|proximal femur|\btha\b|\bthr\b|coxa"),
    ("knee", r"\bknees?\b|patell|menisc|cruciate|\bacl\b|tibial plateau|femoral condyle|popliteal|hoffa|\btka\b"),
    ("thigh_leg", r"\bthighs?\b|\bcalf\b|\blower leg|tibial shaft|femoral shaft|\bshin\b"),
    ("foot_ankle", r"\bfeet\b|\bfoot\b|ankle|calcane|\btal(us|ar)\b|metatars|\btoes?\b|hallux|\btarsal\b|"
                   r"\btarsus|navicular|cuneiform|achilles|midfoot|forefoot|hindfoot|dorsoplantar|plantar"),
    ("shoulder", r"shoulder|clavic|scapul|acromi|glen(oid|ohumeral)|rotator cuff|subacromial|humeral head|"
                 r"proximal humer|deltoid"),
    ("arm_elbow", r"elbow|forearm|olecran|humeral shaft|\bulna\b|radial head|\bupper arm"),
    ("hand_wrist", r"\bhands?\b|wrist|finger|thumb|metacarp|phalan|\bcarpal\b|\bcarpus|scaphoid|lunate|"
                   r"distal radius|hypothenar|thenar"),
    ("face", r"\bface\b|facial|\borbits?\b|orbital|intraorbital|\bsinus(es)?\b|sinonasal|paranasal|mandib|maxill|"
             r"\bteeth\b|\btooth\b|\bdental|\bmolars?\b|incisors?|\bnasal\b|\bnose\b|parotid|submandibular|"
             r"salivary|temporomandibular|zygom|infratemporal|lacrimal|extraocular|\bjaws?\b|\bpalat"),
    ("neck", r"(?<!femoral )\bneck\b(?! of the femur)|thyroid|laryn|pharyn|\btrache(a|al)\b|prevertebral|vocal (cord|fold)|"
             r"glott|sternocleidomastoid|\bhead (and|&) neck"),
    ("scrotum", r"scrot|\btest(is|es|icle|icular)|epididym|spermatic|hydrocele|varicocele"),
)
EXTENDED_ANATOMY: tuple[tuple[str, str], ...] = (
    ORGAN_ANATOMY[0],
    ORGAN_ANATOMY[1],
    ("chest", HILUM + r"|aortic arch|bronch|pericard|\bribs?\b|(upper|middle|lower) lobes?|lingula|"
              r"superior vena|\bsvc\b|esophag|diaphragm"),
    ("heart", r"atri(um|al)|ventricle\b(?<!lateral ventricle)(?<!third ventricle)(?<!fourth ventricle)|\bapical\b"),
    ("abdomen", r"\bureters?\b|\bureteral|\bureteric|biliary|append|\bile(um|al)\b|jejun|adrenal|mesenter|peritone|retroperitone|\bcecum\b|"
                r"rectus (sheath|abdominis)|abdominal wall"),
    ("pelvis", r"rect(um|al)\b|sigmoid|seminal|urethr|endometri|\bsciatic|obturator|\biliac\b"),
    ("knee", r"\bproximal tibia|\bdistal femur|fibular head"),
    ("foot_ankle", r"\bdistal tibia|\bmalleol"),
    ("hand_wrist", r"\bradius\b|median nerve|carpal tunnel"),
    ("neck", r"\bcarotid|jugular|lymph node|\blevel (i{1,3}|iv|v|vi)\b"),
)


# Technique words of one profile (extract_rules.MODALITY_PATTERNS holds those every profile reads). The
# paper's: any dental word makes a figure "other". The extended: dental *films* (periapical, occlusal,
# panoramic) are other techniques, like mammography, while a CT of a periapical lesion is a CT; and the
# ultrasound variants the benchmark leaves out (contrast-enhanced ultrasound, elastography).
PAPER_TECHNIQUES: tuple[tuple[str, str], ...] = (("other", r"orthopantomogra|panoramic|\bopg\b|dental|periapical"),)
EXTENDED_TECHNIQUES: tuple[tuple[str, str], ...] = (
    ("other", r"orthopantomogra|panoram(a|ic)|\bopg\b|\biopa\b|occlusal|intra[- ]?oral|bitewing|"
              r"peri-?apical (radiograph|film|view|x-ray)|dental (radiograph|film|x-ray)"),
    ("other", r"contrast[- ]enhanced (ultrasound|us\b|sonograph)|\bceus\b|elastograph|shear[- ]wave"),
    ("ultrasound", r"sonogra(m|ph)|transvaginal|transabdominal|endovaginal|transrectal|transperineal|\bb-mode|"
                   r"gr[ae]y[- ]scale"),
)


@dataclass(frozen=True)
class Profile:
    """A scope: the modalities and organs a source may record, and the words the rules read them from."""

    name: str
    modalities: tuple[str, ...]
    organs: tuple[str, ...]
    regions: tuple[tuple[str, str], ...]
    anatomy: tuple[tuple[str, str], ...]
    techniques: tuple[tuple[str, str], ...]
    # The extended rules: region names are fine body regions (mapped through tables/organ_regions.csv), two
    # organs named as often make the organ unknown (the paper's: the one named first), and the extended
    # description, negation and context cues of extract_rules apply.
    extended: bool
    synonyms: dict[str, str] = field(default_factory=dict, hash=False, compare=False)

    def organ(self, region: str) -> str:
        """The organ a region word of this profile names."""
        return organ_regions().get(region, "other") if self.extended else region

    def narrow(self, modality: str, organ: str) -> tuple[str, str]:
        """Another extractor's values (the LLM answers in every recorded value) in this profile's scope.

        The paper's: ultrasound is another technique, pelvic organs are the abdomen (as its region words read
        them), and the other new organs are "other"; the extended profile keeps every value.
        """
        if self.extended:
            return modality, organ
        if modality not in self.modalities and modality != "unknown":
            modality = "other"
        organ = PAPER_ORGAN_OF.get(organ, organ)
        if organ not in self.organs and organ != "unknown":
            organ = "other"
        return modality, organ

    @cached_property
    def outside_modalities(self) -> str:
        """"CT, MRI or X-ray": the exclusion reason's list."""
        return _spoken([_MODALITY_NAMES[m] for m in self.modalities])

    @cached_property
    def outside_organs(self) -> str:
        return _spoken(list(self.organs))


PAPER_ORGAN_OF = {"pelvis": "abdomen"}  # the paper's profile reads pelvic organs as the abdomen
_MODALITY_NAMES = {"x-ray": "X-ray", "ct": "CT", "mri": "MRI", "ultrasound": "ultrasound"}


def _spoken(names: list[str]) -> str:
    names = sorted(names, key=str.lower)
    return ", ".join(names[:-1]) + " or " + names[-1]


PAPER = Profile("paper", PAPER_MODALITIES, PAPER_ORGANS, ORGAN_REGIONS, ORGAN_ANATOMY, PAPER_TECHNIQUES, False,
                CONDITION_SYNONYMS)
EXTENDED = Profile("extended", EXTENDED_MODALITIES, EXTENDED_ORGANS, EXTENDED_REGIONS, EXTENDED_ANATOMY,
                   EXTENDED_TECHNIQUES, True, {**CONDITION_SYNONYMS, **EXTENDED_SYNONYMS})
PROFILES: dict[str, Profile] = {p.name: p for p in (PAPER, EXTENDED)}
"""Every caption profile by name (`probmed extract --profile`)."""
