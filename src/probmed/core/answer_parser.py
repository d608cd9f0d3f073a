"""Free-text model response -> one label: yes / no / refusal / unparsed.

Exact-match parsing ("yes" == response) silently turns verbose but correct
answers into errors; the original release's substring rule turns "Normal" into
a "no". This parser reads what a reader would read, in a fixed order:

1. strip reasoning blocks (``<think>...</think>`` and friends) and markdown;
2. an explicit final answer wins: the *last* "the answer is X", "Answer: X",
   "final answer: X", "therefore/so/thus X" in the text;
3. a leading yes/no ("Yes, there is a nodule.");
4. a refusal ("I cannot determine ...", "consult a radiologist", "not sure");
5. exactly one of the whole words yes / no anywhere ("There is no nodule.");
6. everything else (empty text, both words, "Normal study") is ``unparsed``.

Refusals are checked after the explicit and leading answers so that "Yes.
Please consult a radiologist." stays a yes, and before the whole-word scan so
that "I cannot determine this; there is no clear view" is a refusal, not a no.
"""

from __future__ import annotations

import re

YES, NO, REFUSAL, UNPARSED = "yes", "no", "refusal", "unparsed"

_REASONING_BLOCK = re.compile(
    r"<(think|thinking|reasoning|reflection|scratchpad)>.*?</\1>", re.IGNORECASE | re.DOTALL
)
# An unclosed reasoning block: the model stopped while still thinking.
_OPEN_REASONING = re.compile(r"<(think|thinking|reasoning|reflection|scratchpad)>.*\Z", re.IGNORECASE | re.DOTALL)
_MARKDOWN = re.compile(r"(\*\*|__|\*|`+|^#+\s*|^>\s*|~~)", re.MULTILINE)

_WORD = r"(yes|no)\b"
_EXPLICIT = re.compile(
    r"(?:\b(?:final\s+)?answer\s*(?:is|would\s+be|will\s+be|should\s+be|=|:|-)\s*:?\s*[\"'(\[]?\s*"
    + _WORD
    + r"|\b(?:therefore|thus|hence|so|in\s+conclusion|in\s+summary|overall)\s*[,:]?\s+(?:the\s+answer\s+is\s+)?"
    + _WORD
    + r"(?![-\w]))",
    re.IGNORECASE,
)
_LEADING = re.compile(
    r"^\s*(?:(?:a|answer|response|assistant)\s*:\s*)?[\"'(\[]?\s*"
    + _WORD
    + r"(?![-\w/])(?!\s*(?:or|and|/)\s*(?:yes|no)\b)",
    re.IGNORECASE
)
_REFUSAL = re.compile(
    r"\b(?:"
    r"(?:i\s+)?(?:can\s*not|can't|cannot|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to|"
    r"unable\s+to|not\s+able\s+to|could\s+not|couldn't)\s+"
    r"(?:determine|tell|say|assess|confirm|identify|answer|provide|see|view|make|diagnose|interpret|"
    r"evaluate|comment|access|analy[sz]e|be\s+certain|be\s+sure|definitively|accurately|reliably)"
    r"|(?:i\s*'?\s*a?m\s+|i\s+am\s+)?not\s+(?:sure|certain)"
    r"|uncertain|unclear\s+from|impossible\s+to\s+(?:determine|tell|say)"
    r"|(?:consult|see|ask)\s+(?:a|an|your|with\s+a)\s+(?:qualified\s+|medical\s+|healthcare\s+|health\s+care\s+)?"
    r"(?:radiologist|doctor|physician|medical\s+professional|healthcare\s+professional|health\s+care\s+provider|"
    r"specialist|professional|expert)"
    r"|as\s+an\s+ai|i'?m\s+sorry|i\s+am\s+sorry|i\s+apologi[sz]e"
    r"|(?:no|without)\s+(?:image|picture)\s+(?:is\s+|was\s+)?(?:provided|attached|available|shown)"
    r"|cannot\s+be\s+determined|can't\s+be\s+determined|not\s+possible\s+to\s+(?:determine|tell|say)"
    r"|insufficient\s+(?:information|detail|evidence)|not\s+enough\s+information"
    r")",
    re.IGNORECASE,
)
_WHOLE_YES = re.compile(r"(?<![-\w])yes(?![-\w])", re.IGNORECASE)
_WHOLE_NO = re.compile(r"(?<![-\w])no(?![-\w])", re.IGNORECASE)


def clean_response(text: str) -> str:
    """The response without reasoning blocks and markdown, whitespace collapsed."""
    text = _REASONING_BLOCK.sub(" ", text)
    text = _OPEN_REASONING.sub(" ", text)
    text = _MARKDOWN.sub("", text)
    return re.sub(r"\s+", " ", text).strip()


def parse_answer(text: str | None) -> str:
    """Label a free-text response as ``yes``, ``no``, ``refusal`` or ``unparsed``."""
    if text is None:
        return UNPARSED
    if not isinstance(text, str):
        text = str(text)
    cleaned = clean_response(text)
    if not cleaned:
        return UNPARSED
    explicit = _EXPLICIT.findall(cleaned)
    if explicit:
        last = explicit[-1]
        word = last[0] or last[1]
        return word.lower()
    lead = _LEADING.match(cleaned)
    if lead:
        return lead.group(1).lower()
    if _REFUSAL.search(cleaned):
        return REFUSAL
    has_yes = bool(_WHOLE_YES.search(cleaned))
    has_no = bool(_WHOLE_NO.search(cleaned))
    if has_yes and not has_no:
        return YES
    if has_no and not has_yes:
        return NO
    return UNPARSED
