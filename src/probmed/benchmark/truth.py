"""When is a "no" true? The truth rules every hallucinated value obeys, in one place.

The question generator draws adversarial values only from what these rules
allow, and `probmed audit` checks every "no" of any question set against the
same rules, so a generated set and an imported one are judged alike.

* **Organ**: another askable organ that is *not in the field of view* of the
  image's (modality, organ) (curation/tables/field_of_view.csv) and that no QA
  of the image affirms ("Is the spine visible?" -> yes).
* **Condition**: not known present, i.e. not a finding of the image, not named
  by a QA pair answered yes or by an open answer, and not in the clinical
  overlap group of any of those (curation/tables/condition_overlap.csv; a
  nonspecific finding such as a "lesion" overlaps every condition).
* **Position**: not overlapping any region where the condition is: chest
  radiograph phrases by their lung-field cells (and the cells the boxes reach),
  text phrases by side and region (curation/tables/region_overlap.csv).
* **Era**: no disease newer than every image of the source (cause_eras.csv, source_years.csv).
* **One box per label**: a chest radiograph's box shows where a finding is on its side; a place
  wholly on the other side is not known free, and a pleural box stands for its whole side (fluid and air
  move within the pleural space), so a boxed pleural finding has no free position.
* **Evidence**: ``known_absent`` when a label table or a QA answer says the
  value is absent (another modality or an organ out of view are known absent:
  the image has one modality and one field of view); ``assumed_absent`` when it
  is merely not mentioned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from probmed.benchmark.curation.tables import (
    cause_eras,
    condition_sites,
    field_of_view,
    overlap_groups,
    region_overlaps,
    source_years,
)
from probmed.benchmark.curation.vocabularies import (
    BILATERAL_FORMS,
    CONDITION_SYNONYMS,
    SIDE_NAMES,
    cxr_footprint,
)
from probmed.core.records import ImageRecord
from probmed.core.vocab import ASKABLE_ORGANS

ANY_GROUP = "ANY"
_ORGAN_WORDS = {
    "brain": r"\bbrain\b|\bcerebr|\bcerebell|\bskull\b|\bencephalon\b|\bventricles?\b",
    "chest": r"\bchest\b|\blungs?\b|\bthorax\b|\bheart\b|\bmediastinum\b|\bribs?\b|\bdiaphragm\b",
    "abdomen": r"\babdomen\b|\bliver\b|\bkidneys?\b|\bspleen\b|\bbowels?\b|\bstomach\b|\bgallbladder\b|\bpancreas\b|gastric bubble",
    "spine": r"\bspine\b|\bspinal\b|\bvertebra\w*|\bvertebral\b",
    "pelvis": r"\bpelvi[cs]\b|\bhips?\b|\bbladder\b|\buterus\b|\bovar(y|ies)\b|\bprostate\b|\bsacroiliac\b",
    "knee": r"\bknees?\b|\bpatella\b",
    "hand": r"\bhands?\b|\bwrists?\b|\bfingers?\b",
    "shoulder": r"\bshoulders?\b|\bclavicles?\b|\bscapula\b",
    "foot": r"\bfoot\b|\bfeet\b|\bankles?\b|\btoes?\b",
    "head and neck": r"\bneck\b|\bthyroid\b|\bsinus(es)?\b|\borbits?\b|\bface\b|\bmandible\b|\btrachea\b",
}
_ORGAN_RE = {organ: re.compile(p) for organ, p in _ORGAN_WORDS.items()}
_NEGATIVE = frozenset({"no", "none", "nothing", "normal", "not seen", "absent"})
# Signs the condition extractor does not count as findings, yet a QA that affirms one describes something that
# may be any condition (group ANY of condition_overlap.csv): "Where are the hyperintensities located?"
_SIGNS = {
    re.compile(r"\blesions?\b"): "lesion",
    re.compile(r"\bopacit(y|ies)\b"): "opacity",
    re.compile(r"\bhyper-?intens"): "hyperintensity",
    re.compile(r"\bhypo-?intens"): "hypointensity",
    re.compile(r"\bhyper-?dens"): "hyperdensity",
    re.compile(r"\bhypo-?dens"): "hypodensity",
}


# --- QA of the image (VQA-RAD records carry every QA pair in provenance.qa) ---------------------------


@dataclass(frozen=True)
class Mentions:
    """What an image's QA affirms: conditions, organs, and positions per condition."""

    conditions: frozenset[str]
    organs: frozenset[str]
    positions: tuple[tuple[str, str], ...]  # (condition, position)


def _qa_pairs(rec: ImageRecord) -> list[tuple[str, str]]:
    return [(str(q), str(a)) for q, a, *_ in rec.provenance.get("qa") or []]


_NO_MENTIONS = Mentions(frozenset(), frozenset(), ())


def qa_mentions(rec: ImageRecord) -> Mentions:
    """Everything a QA pair of the image affirms: the question of a pair not answered "no", and open answers."""
    if not rec.provenance.get("qa"):
        return _NO_MENTIONS  # most records have no QA: the generator asks this per category and slot
    from probmed.benchmark.curation.extract_rules import find_conditions

    conds: set[str] = set()
    organs: set[str] = set()
    positions: list[tuple[str, str]] = []
    for question, answer in _qa_pairs(rec):
        if answer.lower().strip(" .") in _NEGATIVE:
            continue  # what the question asked about is not there
        for text in (question, answer):
            found, _ = find_conditions(text)
            for f in found:
                conds.add(f["condition"])
                if f["position"]:
                    positions.append((f["condition"], f["position"]))
            low = text.lower()
            organs.update(o for o, rx in _ORGAN_RE.items() if rx.search(low))
            conds.update(name for rx, name in _SIGNS.items() if rx.search(low))
    return Mentions(frozenset(conds), frozenset(organs), tuple(positions))


# --- organs ------------------------------------------------------------------------------------------------


def organs_in_view(modality: str, organ: str) -> frozenset[str]:
    """Organs visible in an image of this modality and organ (field_of_view table)."""
    table = field_of_view()
    return table.get(("*", organ), frozenset()) | table.get((modality, organ), frozenset())


def organ_adversaries(rec: ImageRecord, organs: tuple[str, ...] = ASKABLE_ORGANS) -> tuple[str, ...]:
    """Organs (of ``organs``) truly absent from the image: another organ, out of view, not affirmed by QA."""
    return _organs_out_of_view(rec.modality, rec.organ, organs, qa_mentions(rec).organs)


@lru_cache(maxsize=4096)
def _organs_out_of_view(modality: str, organ: str, organs: tuple[str, ...], affirmed: frozenset[str]) -> tuple[str, ...]:
    """``organ_adversaries`` of an image type and its QA's organs, cached: asked once per image, of a few types."""
    blocked = organs_in_view(modality, organ) | affirmed | {organ}
    return tuple(o for o in organs if o not in blocked)


# --- conditions --------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def canonical_condition(name: str) -> str:
    """A condition name or synonym -> the canonical name ("pleural effusion" -> "effusion")."""
    key = str(name).lower().strip()
    return CONDITION_SYNONYMS.get(key, key)


@lru_cache(maxsize=None)
def _group_mates() -> dict[str, frozenset[str]]:
    mates: dict[str, set[str]] = {}
    for name, members in overlap_groups().items():
        if name == ANY_GROUP:
            continue
        for m in members:
            mates.setdefault(m, set()).update(members)
    return {k: frozenset(v) for k, v in mates.items()}


def overlaps_any(conditions: Iterable[str]) -> bool:
    """True when one of ``conditions`` is nonspecific (a lesion, an opacity): it may be any condition."""
    return bool(set(conditions) & overlap_groups().get(ANY_GROUP, frozenset()))


def overlapping(conditions: Iterable[str]) -> frozenset[str]:
    """The conditions themselves and every member of their overlap groups."""
    out: set[str] = set()
    for c in conditions:
        out.add(c)
        out |= _group_mates().get(c, frozenset())
    return frozenset(out)


@lru_cache(maxsize=4096)
def _overlapping_set(conditions: frozenset[str]) -> frozenset[str]:
    """``overlapping`` of a set, cached: images share a few finding sets, and each is asked per slot."""
    return overlapping(conditions)


def present_conditions(rec: ImageRecord) -> frozenset[str]:
    """Known present: the findings and every condition the image's QA affirms (canonical names)."""
    return frozenset(canonical_condition(f.condition) for f in rec.findings) | qa_mentions(rec).conditions


def condition_adversaries(rec: ImageRecord, vocabulary: Iterable[str]) -> tuple[str, ...]:
    """Vocabulary conditions whose "no" is true for the image (none when a nonspecific finding is present),
    less the diseases newer than the image's source (they test dates, not the image)."""
    return _absent_of(present_conditions(rec), _of_its_era(rec.source, tuple(vocabulary)))


@lru_cache(maxsize=1024)
def _of_its_era(source: str, vocabulary: tuple[str, ...]) -> tuple[str, ...]:
    """The vocabulary without the diseases first seen after the source's newest image (cause_eras.csv):
    no "COVID-19 pneumonia?" of a 2017 radiograph. A source of unknown date keeps every condition."""
    year = source_years().get(source)
    eras = cause_eras()
    return vocabulary if year is None else tuple(c for c in vocabulary if eras.get(c, year) <= year)


@lru_cache(maxsize=4096)
def _absent_of(present: frozenset[str], vocabulary: tuple[str, ...]) -> tuple[str, ...]:
    """``condition_adversaries`` of a set of present conditions, cached: images share a few such sets."""
    if overlaps_any(present):
        return ()
    blocked = _overlapping_set(present)
    return tuple(c for c in vocabulary if c not in blocked)


def known_absent_conditions(rec: ImageRecord) -> frozenset[str]:
    """Conditions a label table or a QA answer says are absent (and that nothing present overlaps)."""
    return _canonical_set(tuple(rec.absent_conditions)) - _overlapping_set(present_conditions(rec))


@lru_cache(maxsize=4096)
def _canonical_set(conditions: tuple[str, ...]) -> frozenset[str]:
    """The canonical names of a label list, cached: a source's images share a few absent-label lists."""
    return frozenset(canonical_condition(c) for c in conditions)


# --- positions ---------------------------------------------------------------------------------------------

# Chest text regions -> the radiograph lung-field zones they cover (a lobe spans more than one zone).
CHEST_REGION_ZONES: dict[str, tuple[str, ...]] = {
    "lung apex": ("upper",),
    "lung base": ("lower",),
    "upper lobe": ("upper", "middle"),
    "middle lobe": ("middle", "lower"),
    "lingula": ("middle", "lower"),
    "lower lobe": ("middle", "lower"),
    "hilum": ("middle",),
    "lung": ("upper", "middle", "lower"),
    "lung periphery": ("upper", "middle", "lower"),
    "hemithorax": ("upper", "middle", "lower"),
    "pleural space": ("upper", "middle", "lower"),
    "chest wall": ("upper", "middle", "lower"),
}
_PLURALS = {v: k for k, v in BILATERAL_FORMS.items()}


@lru_cache(maxsize=4096)
def parse_position(phrase: str) -> tuple[str | None, str | None]:
    """``"bilateral lower lobes"`` -> ("bilateral", "lower lobe"); ``"left"`` -> ("left", None)."""
    words = str(phrase).lower().split()
    side = None
    if words and words[0] in (*SIDE_NAMES, "both"):
        side = "bilateral" if words[0] == "both" else words[0]
        words = words[1:]
    region = " ".join(words) or None
    if region and side == "bilateral":
        region = _PLURALS.get(region) or (region[:-1] if region.endswith("s") and not region.endswith("ss") else region)
    return side, region


@lru_cache(maxsize=4096)
def chest_cells(phrase: str) -> frozenset[str] | None:
    """Lung-field cells of a chest position, radiograph zone phrase or text phrase (None: unknown region)."""
    cells = cxr_footprint(phrase)
    if cells is not None:
        return cells
    side, region = parse_position(phrase)
    if region == "mediastinum":
        return frozenset({"mediastinum"})
    zones = CHEST_REGION_ZONES.get(region or "lung")
    if zones is None:
        return None
    sides = ("right", "left") if side in (None, "bilateral") else (side,)
    extra = {"mediastinum"} if region == "hilum" else set()
    return frozenset({f"{s}:{z}" for s in sides for z in zones} | extra)


@lru_cache(maxsize=65536)
def positions_overlap(organ: str, a: str, b: str) -> bool:
    """True when two position phrases of an organ can name the same place (conservative when unsure).

    Cached: a pure function of three vocabulary phrases, asked per candidate of every position slot."""
    if a == b:
        return True
    if organ == "chest":
        ca, cb = chest_cells(a), chest_cells(b)
        if ca is not None and cb is not None:
            return bool(ca & cb)
    (sa, ra), (sb, rb) = parse_position(a), parse_position(b)
    if sa and sb and sa != sb and "bilateral" not in (sa, sb):
        return False  # left and right never overlap
    if ra is None or rb is None or ra == rb:
        return True
    return (ra, rb) in region_overlaps().get(organ, frozenset())


def occupied_positions(rec: ImageRecord, condition: str) -> tuple[list[str], frozenset[str]]:
    """(positions where ``condition`` is, cells its boxes reach) from findings, QA and provenance.extents."""
    canon = canonical_condition(condition)
    places = [f.position for f in rec.findings if f.position and canonical_condition(f.condition) == canon]
    places += [p for c, p in qa_mentions(rec).positions if canonical_condition(c) == canon]
    cells = frozenset((rec.provenance.get("extents") or {}).get(canon, ()))
    site = condition_sites().get((rec.organ, canon))
    if cells and site is not None and site.site == "pleural":
        cells = _whole_pleural_space(cells)
    return places, cells


def _whole_pleural_space(cells: frozenset[str]) -> frozenset[str]:
    """Every zone of each side a pleural box is on: fluid and air move within the pleural space with posture
    (a supine effusion layers behind the lung, an erect one fills the base), so the box's height says nothing
    of the rest of that side (cxr14-00017188_002: an effusion boxed on the right hemidiaphragm, zoned "middle",
    was asked "right basal pleural effusion? no")."""
    sides = {c.split(":")[0] for c in cells if ":" in c}
    return cells | frozenset(f"{s}:{z}" for s in sides for z in ("upper", "middle", "lower"))


def position_adversaries(rec: ImageRecord, condition: str, vocabulary: Iterable[str]) -> tuple[str, ...]:
    """Vocabulary positions that overlap no place where the condition is in this image."""
    places, cells = occupied_positions(rec, condition)
    return _free_positions(rec.organ, tuple(places), cells if rec.organ == "chest" else frozenset(), tuple(vocabulary))


@lru_cache(maxsize=65536)
def _free_positions(organ: str, places: tuple[str, ...], chest_cells_taken: frozenset[str],
                    vocabulary: tuple[str, ...]) -> tuple[str, ...]:
    """The positions of ``vocabulary`` free of ``places`` (and of the chest cells boxes reach), cached: images
    share a few such combinations, and each candidate is checked against each place."""
    out = []
    for p in vocabulary:
        if any(positions_overlap(organ, p, q) for q in places):
            continue
        if chest_cells_taken:
            own = chest_cells(p)
            if own is None or own & chest_cells_taken or not _on_a_boxed_side(own, chest_cells_taken):
                continue
        out.append(p)
    return tuple(out)


def _on_a_boxed_side(cells: frozenset[str], boxed: frozenset[str]) -> bool:
    """True when some cell of a position lies on a side a box of the finding is on: ChestX-ray14 draws one
    box per label, so a right effusion's box says nothing of the left pleura, and only a place on the boxed
    side is known free (qid 20198948a5650a36: a right effusion box, "left lower lung zone? no")."""
    sides = {c.split(":")[0] for c in boxed if ":" in c}
    return any(c.split(":")[0] in sides for c in cells if ":" in c)


__all__ = [
    "Mentions",
    "canonical_condition",
    "chest_cells",
    "condition_adversaries",
    "known_absent_conditions",
    "occupied_positions",
    "organ_adversaries",
    "organs_in_view",
    "overlapping",
    "overlaps_any",
    "parse_position",
    "position_adversaries",
    "positions_overlap",
    "present_conditions",
    "qa_mentions",
]
