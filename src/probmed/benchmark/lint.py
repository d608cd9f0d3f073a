"""Grammar lint for closed yes/no questions: what a reader would stumble over.

A benchmark whose questions read wrongly tests reading, not images, and a
wording that only some texts have ("Is there evidence of mass ...") can mark
them. Rules (each finding names the rule and the words at fault):

* ``question-mark``: exactly one question mark, at the end;
* ``capital``: the question starts with a capital letter;
* ``whitespace``: no doubled, leading or trailing spaces, none before "?";
* ``doubled-word``: no word twice in a row ("the the");
* ``placeholder``: no template leftovers ("None", "nan", braces);
* ``a-an``: "a" before a consonant sound, "an" before a vowel sound ("an MRI", "a CT");
* ``bare-count-noun``: a singular count noun needs an article or determiner
  ("evidence of a mass", not "evidence of mass");
* ``mass-noun-article``: no "a"/"an" before a mass noun ("a pneumonia");
* ``number``: "is there" + singular, "are there" + plural ("Are there cysts", not "Are there cyst");
* ``bilateral-single``: a single finding ("the nodule") is never "bilateral"/"in both ...";
  "zones" is plural only with "both"/"bilateral", "zone" singular only with one side.

Clinical wording (each rule one table under curation/tables, so a clinician reviews the words, not code):

* ``infiltrate``, ``covid-spelling``: the term a condition is asked by (condition_terms.csv): "an infiltrate",
  never "infiltration"; "COVID-19", never "covid-19";
* ``pleural-in-lung``: a pleural process (effusion, pneumothorax, pleural thickening) is never placed in a
  lung, a lung zone or a lobe (condition_sites.csv): "Is there a right pleural effusion?";
* ``extra-axial-hemisphere``: an extra-axial tumour (a meningioma) is on a side, never in a hemisphere;
* ``preposition``: a region takes its preposition (region_prepositions.csv): "at the cervicothoracic junction";
* ``cause-before-disease`` (a rule of the question table, ``lint_frame``: it needs the source): a disease is
  never asked of a source whose images are older than it (cause_eras.csv, source_years.csv).

Nouns are known from the condition noun table (curation/tables/condition_nouns.csv).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

import pandas as pd

from probmed.benchmark.curation.tables import (
    cause_eras,
    condition_nouns,
    condition_sites,
    condition_terms,
    region_prepositions,
    source_years,
)

DETERMINERS = frozenset(
    "a an the any this that these those each every one no another some single such its their his her".split()
)
# Words before which "an" is right although they start with a consonant letter, and vice versa.
AN_WORDS = frozenset({"hour", "honest", "mri", "mr", "mra", "x-ray", "xray", "x", "f", "h", "l", "m", "n", "r", "s", "fdg", "nsaid"})
A_PREFIXES = ("uni", "ure", "uro", "usu", "use", "uter", "eu", "one", "once")
PLACEHOLDERS = re.compile(r"\bNone\b|\bnan\b|\{|\}|<[^>]*>")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]*")


@dataclass(frozen=True)
class LintFinding:
    """One grammar problem in a question text: the rule broken and why."""

    question: str
    rule: str
    message: str


def wants_an(word: str) -> bool:
    """True when ``word`` starts with a vowel sound ("an effusion", "an MRI", "a ureter")."""
    w = word.lower()
    if w in AN_WORDS or w.startswith("x-"):
        return True
    if w.startswith(A_PREFIXES):
        return False
    return w[:1] in tuple("aeiou")


def indefinite(word_phrase: str) -> str:
    """``"a mass"`` / ``"an effusion"``: the indefinite article for a phrase."""
    first = word_phrase.split()[0] if word_phrase else ""
    return f"{'an' if wants_an(first) else 'a'} {word_phrase}"


@lru_cache(maxsize=None)
def _noun_patterns() -> tuple[tuple[re.Pattern, str, str, bool], ...]:
    """(pattern, condition, kind, plural?) for every singular and plural noun, longest first."""
    forms: list[tuple[str, str, str, bool]] = []
    for noun in condition_nouns().values():
        forms.append((noun.name, noun.name, noun.kind, False))
        if noun.plural and noun.plural != noun.name:
            forms.append((noun.plural, noun.name, noun.kind, True))
    forms.sort(key=lambda f: -len(f[0]))
    return tuple((re.compile(rf"(?<![\w-]){re.escape(s)}(?![\w-])", re.I), c, k, p) for s, c, k, p in forms)


def _noun_spans(text: str) -> list[tuple[int, int, str, str, bool]]:
    """Non-overlapping (start, end, condition, kind, plural) noun mentions, longest match first."""
    taken: list[tuple[int, int]] = []
    out = []
    for rx, cond, kind, plural in _noun_patterns():
        for m in rx.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            taken.append((m.start(), m.end()))
            out.append((m.start(), m.end(), cond, kind, plural))
    return sorted(out)


def _words_before(text: str, at: int, n: int = 3) -> list[str]:
    return [w.lower() for w in _WORD.findall(text[:at])][-n:]


def determined(before: str) -> bool:
    """True when one of the last three words of ``before`` is an article or determiner ("is there any", "the")."""
    return bool(set(_words_before(before, len(before))) & DETERMINERS)


def _form_rules(q: str) -> Iterable[tuple[str, str]]:
    if q.count("?") != 1 or not q.rstrip().endswith("?"):
        yield "question-mark", f"{q.count('?')} question mark(s); expected exactly one, at the end"
    if q and not q[0].isupper():
        yield "capital", "does not start with a capital letter"
    if q != q.strip() or "  " in q or " ?" in q:
        yield "whitespace", "doubled, leading or trailing space, or a space before '?'"
    for m in re.finditer(r"\b(\w+)\s+\1\b", q, re.I):
        yield "doubled-word", f"{m.group(0)!r}"
    for m in PLACEHOLDERS.finditer(q):
        yield "placeholder", f"template leftover {m.group(0)!r}"
    for m in re.finditer(r"\b(a|an)\s+([A-Za-z][\w-]*)", q, re.I):
        art, word = m.group(1).lower(), m.group(2)
        if (art == "an") != wants_an(word):
            yield "a-an", f"{m.group(0)!r}: use {'an' if wants_an(word) else 'a'}"


def _noun_rules(q: str) -> Iterable[tuple[str, str]]:
    low = q.lower()
    for start, end, cond, kind, plural in _noun_spans(q):
        before = _words_before(q, start)
        prev = before[-1] if before else ""
        phrase = q[start:end]
        if kind == "count" and not plural and not determined(q[:start]):
            yield "bare-count-noun", f"{phrase!r} is a singular count noun without an article or determiner"
        if kind == "mass" and prev in ("a", "an"):
            yield "mass-noun-article", f"{prev} {phrase!r}: {cond} takes no article"
        head = " ".join(before[-3:])
        if re.search(r"\bare there( any| multiple| several| two| three| many)?$", head) and not plural and kind != "mass":
            yield "number", f"'are there' with the singular {phrase!r}"
        if re.search(r"\bis there( a| an| any| one)?$", head) and plural:
            yield "number", f"'is there' with the plural {phrase!r}"
        if kind != "mass" and not plural and re.search(r"\b(the|this|that)$", head):
            rest = low[end:]
            if re.search(r"\b(bilateral|both)\b", rest):
                yield "bilateral-single", f"the single {phrase!r} cannot be bilateral"
    if re.search(r"\b(left|right)\s+(\w+\s+)?(lung\s+)?zones\b", low):
        yield "bilateral-single", "'zones' with one side"
    if re.search(r"\b(both|bilateral)\s+(\w+\s+)?(lung\s+)?zone\b", low):
        yield "bilateral-single", "'zone' (singular) with both sides"


@lru_cache(maxsize=None)
def _term_patterns() -> tuple[tuple[re.Pattern, str, str], ...]:
    """(the vocabulary name in any case, its term, the rule) per row of condition_terms.csv."""
    return tuple((re.compile(rf"(?<![\w-]){re.escape(t.condition)}(?![\w-])", re.I), t.term, t.rule)
                 for t in condition_terms().values())


@lru_cache(maxsize=None)
def _site_patterns() -> tuple[re.Pattern, re.Pattern]:
    """(a pleural noun placed in a lung, a lung zone or a lobe; an extra-axial noun with a hemisphere)."""
    nouns: dict[str, list[str]] = {"pleural": [], "extra-axial": []}
    for (_, condition), site in condition_sites().items():
        nouns[site.site] += [condition, *([site.plural] if site.plural else [])]
    pleural = "|".join(re.escape(n) for n in sorted(set(nouns["pleural"]) | {"pneumothoraces", "effusions"}, key=len, reverse=True))
    extra = "|".join(re.escape(n) for n in sorted(set(nouns["extra-axial"]), key=len, reverse=True))
    return (re.compile(rf"(?<!pericardial )\b({pleural})\b.*\b(in|within) (the |both )?([\w-]+ ){{0,3}}(lungs?|zones?|lobes?)\b", re.I),
            re.compile(rf"\b({extra})\b.*\bhemispheres?\b", re.I))


def _wording_rules(q: str) -> Iterable[tuple[str, str]]:
    for rx, term, rule in _term_patterns():
        for found in rx.finditer(q):
            if found.group(0) != term:
                yield rule, f"{found.group(0)!r}: ask {term!r}"
    pleural, extra_axial = _site_patterns()
    if p := pleural.search(q):
        yield "pleural-in-lung", f"the pleural {p.group(1)!r} placed in a {p.group(5)!r}: ask by side and pleural level"
    if e := extra_axial.search(q):
        yield "extra-axial-hemisphere", f"the extra-axial {e.group(1)!r} is on a side, not in a hemisphere"
    for region, prep in region_prepositions().items():
        if prep != "in" and re.search(rf"\bin (the |both )?((right|left) )?{re.escape(region)}", q, re.I):
            yield "preposition", f"'in the {region}': use {prep!r}"


def lint_question(question: str) -> list[LintFinding]:
    """Every lint finding of one question text (empty when it reads right)."""
    q = str(question)
    return [LintFinding(q, rule, msg) for rule, msg in (*_form_rules(q), *_noun_rules(q), *_wording_rules(q))]


def cause_findings(questions: pd.DataFrame) -> list[LintFinding]:
    """``cause-before-disease``: questions naming a disease newer than every image of their source."""
    out: list[LintFinding] = []
    years = source_years()
    for condition, first in cause_eras().items():
        rx = re.compile(rf"(?<![\w-]){re.escape(condition)}(?![\w-])", re.I)
        old = questions["source"].map(lambda s: years.get(str(s), first) < first)
        for q, source in questions.loc[old & questions["question"].astype(str).str.contains(rx), ["question", "source"]].drop_duplicates().itertuples(index=False):
            out.append(LintFinding(str(q), "cause-before-disease", f"{condition!r} asked of {source} (images up to {years[source]}, disease from {first})"))
    return out


def lint_frame(questions: pd.DataFrame) -> list[LintFinding]:
    """The text rules over the distinct texts, and the rules that need a question's source."""
    return lint_questions(questions["question"]) + (cause_findings(questions) if "source" in questions else [])


def lint_questions(questions: Iterable[str]) -> list[LintFinding]:
    """Findings over distinct texts, in first-seen order."""
    out: list[LintFinding] = []
    for q in dict.fromkeys(str(x) for x in questions):
        out += lint_question(q)
    return out
