"""Clinical data tables, kept as CSV so a clinician can review them without reading code.

* ``condition_nouns.csv``: count / mass noun and plural of every condition name
  (articles and number in questions; the grammar lint).
* ``field_of_view.csv``: organs in view on an image of a (modality, organ):
  never asked as a hallucinated organ.
* ``condition_overlap.csv``: groups of conditions that overlap clinically: a
  member of a present finding's group is never asked as a hallucinated condition.
* ``region_overlap.csv``: position regions of one organ that overlap (one contains
  or shares tissue with the other): never an adversary of each other.
* ``organ_regions.csv``: the benchmark organ each fine body region of a caption belongs
  to (regions too small to stand alone merged, or ``other``).
* ``condition_terms.csv``: the words a question uses for a condition ("infiltrate", "COVID-19 pneumonia").
* ``condition_sites.csv``: pleural and extra-axial conditions, whose positions are worded by their own
  anatomy; ``pleural_levels.csv``: a lung zone's pleural level ("basal").
* ``region_prepositions.csv``: "at the cervicothoracic junction" (every other region: "in").
* ``cause_eras.csv`` / ``source_years.csv``: a new disease is never asked of an older source.
* ``devices.csv``: medical devices, which are not abnormalities; ``normal_anatomy.csv``: QA answers naming
  normal structures ("stomach bubble"), which are not lesions.
* ``organ_unseen.csv``: images that do not show their organ (a skull radiograph: no "brain? yes").
* ``off_field_sites.csv``: sites a caption names that lie outside its organ's usual field of view (the scapula
  of a shoulder caption: no "shoulder? yes").
* ``absent_evidence.csv``: a source whose absent labels are weaker evidence (NLP-mined: ``nlp_absent``).

Lines starting with ``#`` are comments. Each loader is cached: the tables are read once.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterator

from probmed.core.vocab import ORGANS


class TableError(ValueError):
    """A data table is malformed; the message names the file, line and field."""


def _rows(name: str, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip() and not line.startswith("#")]
    reader = csv.reader([line for _, line in lines])
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != columns:
        raise TableError(f"{name}: header {header!r}, expected {list(columns)}")
    for (lineno, _), row in zip(lines[1:], reader):
        if len(row) != len(columns):
            raise TableError(f"{name}: line {lineno}: {len(row)} fields, expected {len(columns)}")
        yield lineno, {c: v.strip() for c, v in zip(columns, row)}


@dataclass(frozen=True)
class Noun:
    """How a condition reads as a noun: count or mass, and its plural."""

    name: str
    kind: str  # count | mass | either
    plural: str | None


NOUN_KINDS = ("count", "mass", "either")


@lru_cache(maxsize=None)
def condition_nouns() -> dict[str, Noun]:
    """Condition -> its noun form, from condition_nouns.csv (checked line by line)."""
    out: dict[str, Noun] = {}
    for lineno, row in _rows("condition_nouns.csv", ("condition", "kind", "plural")):
        if row["kind"] not in NOUN_KINDS:
            raise TableError(f"condition_nouns.csv: line {lineno}: kind {row['kind']!r} not in {NOUN_KINDS}")
        if row["kind"] != "mass" and not row["plural"]:
            raise TableError(f"condition_nouns.csv: line {lineno}: a {row['kind']} noun needs a plural")
        out[row["condition"]] = Noun(row["condition"], row["kind"], row["plural"] or None)
    return out


@lru_cache(maxsize=None)
def field_of_view() -> dict[tuple[str, str], frozenset[str]]:
    """(modality, organ) -> organs in view; modality ``*`` applies to every modality."""
    out: dict[tuple[str, str], set[str]] = {}
    for _, row in _rows("field_of_view.csv", ("modality", "organ", "in_view", "why")):
        out.setdefault((row["modality"], row["organ"]), set()).add(row["in_view"])
    return {k: frozenset(v) for k, v in out.items()}


@lru_cache(maxsize=None)
def overlap_groups() -> dict[str, frozenset[str]]:
    """Group name -> member conditions."""
    out: dict[str, set[str]] = {}
    for _, row in _rows("condition_overlap.csv", ("group", "condition")):
        out.setdefault(row["group"], set()).add(row["condition"])
    return {k: frozenset(v) for k, v in out.items()}


@lru_cache(maxsize=None)
def region_overlaps() -> dict[str, frozenset[tuple[str, str]]]:
    """Organ -> unordered pairs of overlapping regions (both orders)."""
    out: dict[str, set[tuple[str, str]]] = {}
    for _, row in _rows("region_overlap.csv", ("organ", "region", "overlaps")):
        pairs = out.setdefault(row["organ"], set())
        pairs.add((row["region"], row["overlaps"]))
        pairs.add((row["overlaps"], row["region"]))
    return {k: frozenset(v) for k, v in out.items()}


@lru_cache(maxsize=None)
def organ_regions() -> dict[str, str]:
    """Fine body region (as the caption extractor and the roco-extended hand labels name it) -> organ."""
    out: dict[str, str] = {}
    for lineno, row in _rows("organ_regions.csv", ("region", "organ", "why")):
        if row["organ"] not in ORGANS:
            raise TableError(f"organ_regions.csv: line {lineno}: organ {row['organ']!r} not in {ORGANS}")
        out[row["region"]] = row["organ"]
    return out


@dataclass(frozen=True)
class Term:
    """The words a question uses for a vocabulary condition, and the lint rule that guards them."""

    condition: str
    term: str
    rule: str


@lru_cache(maxsize=None)
def condition_terms() -> dict[str, Term]:
    """Condition -> the term its questions use (condition_terms.csv)."""
    return {row["condition"]: Term(row["condition"], row["term"], row["rule"])
            for _, row in _rows("condition_terms.csv", ("condition", "term", "rule", "why"))}


@dataclass(frozen=True)
class Site:
    """A condition whose position is worded by its own anatomy: pleural or extra-axial."""

    condition: str
    site: str  # pleural | extra-axial
    noun: str
    plural: str | None


SITE_KINDS = ("pleural", "extra-axial")


@lru_cache(maxsize=None)
def condition_sites() -> dict[tuple[str, str], Site]:
    """(organ, condition) -> its site wording (condition_sites.csv, checked line by line)."""
    out: dict[tuple[str, str], Site] = {}
    for lineno, row in _rows("condition_sites.csv", ("organ", "condition", "site", "noun", "plural", "why")):
        if row["site"] not in SITE_KINDS:
            raise TableError(f"condition_sites.csv: line {lineno}: site {row['site']!r} not in {SITE_KINDS}")
        out[(row["organ"], row["condition"])] = Site(row["condition"], row["site"], row["noun"], row["plural"] or None)
    return out


@lru_cache(maxsize=None)
def pleural_levels() -> dict[str, str]:
    """Radiograph lung zone -> the pleural level of that height ("lower" -> "basal")."""
    return {row["zone"]: row["level"] for _, row in _rows("pleural_levels.csv", ("zone", "level", "why"))}


@lru_cache(maxsize=None)
def region_prepositions() -> dict[str, str]:
    """Region -> the preposition before it where it is not "in" ("cervicothoracic junction" -> "at")."""
    return {row["region"]: row["preposition"] for _, row in _rows("region_prepositions.csv", ("region", "preposition", "why"))}


def _years(name: str, key: str, column: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for lineno, row in _rows(name, (key, column, "why")):
        if not row[column].isdigit():
            raise TableError(f"{name}: line {lineno}: {column} {row[column]!r} is not a year")
        out[row[key]] = int(row[column])
    return out


@lru_cache(maxsize=None)
def cause_eras() -> dict[str, int]:
    """Condition -> the first year it can be seen (a new disease): cause_eras.csv."""
    return _years("cause_eras.csv", "condition", "first_year")


@lru_cache(maxsize=None)
def source_years() -> dict[str, int]:
    """Source -> the year of its newest image: source_years.csv."""
    return _years("source_years.csv", "source", "last_year")


@lru_cache(maxsize=None)
def devices() -> frozenset[str]:
    """Medical device words: a "foreign body" named as one is a device, not an abnormality (devices.csv)."""
    return frozenset(row["device"] for _, row in _rows("devices.csv", ("device", "why")))


@lru_cache(maxsize=None)
def absent_evidence() -> dict[str, str]:
    """Source -> the evidence value its absent labels give a "no" (absent_evidence.csv; others: known_absent)."""
    return {row["source"]: row["evidence"] for _, row in _rows("absent_evidence.csv", ("source", "evidence", "why"))}


@lru_cache(maxsize=None)
def normal_anatomy() -> frozenset[str]:
    """Open QA answers that name normal anatomy, not a lesion (normal_anatomy.csv)."""
    return frozenset(row["answer"] for _, row in _rows("normal_anatomy.csv", ("answer", "why")))


@lru_cache(maxsize=None)
def organ_unseen() -> frozenset[tuple[str, str]]:
    """(modality, organ) whose images do not show the organ: no organ question (organ_unseen.csv)."""
    return frozenset((row["modality"], row["organ"]) for _, row in _rows("organ_unseen.csv", ("modality", "organ", "why")))


@dataclass(frozen=True)
class OffFieldSite:
    """A site a caption names that lies outside its organ's usual field of view, and why."""

    organ: str
    site: re.Pattern[str]
    why: str


@lru_cache(maxsize=None)
def off_field_sites() -> dict[str, tuple[OffFieldSite, ...]]:
    """Organ -> the off-field sites of its captions, from off_field_sites.csv (organ checked, pattern compiled)."""
    out: dict[str, list[OffFieldSite]] = {}
    for lineno, row in _rows("off_field_sites.csv", ("organ", "site", "why")):
        if row["organ"] not in ORGANS:
            raise TableError(f"off_field_sites.csv: line {lineno}: organ {row['organ']!r} not in {ORGANS}")
        try:
            site = re.compile(row["site"])
        except re.error as err:
            raise TableError(f"off_field_sites.csv: line {lineno}: site is not a pattern ({err})") from err
        out.setdefault(row["organ"], []).append(OffFieldSite(row["organ"], site, row["why"]))
    return {k: tuple(v) for k, v in out.items()}
