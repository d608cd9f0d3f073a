"""Which vocabulary tokens mean "yes" and which mean "no" at the first answer position.

Logit mode reads P(yes) from one forward pass: the probability mass of every
token a model could start a "yes" with, against the mass of every "no" token.
Real tokenizers have several: "yes", "Yes", " Yes" (GPT-2 / Llama-3 / Qwen
"ĠYes"), "▁Yes" (SentencePiece), "YES"; a spelling that is no single token
counts by its first sub-token ("YE" of "YE|S") when that piece is at least two
characters of the word (a lone "Y" or a bare space starts too many other words).
The sets are read from the tokenizer, never hard-coded, must be disjoint, and
are recorded with the run (`AnswerTokens.record`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probmed.core.errors import ConfigError


def surface_forms(word: str) -> list[str]:
    """The case variants of an answer word: yes, Yes, YES."""
    w = word.strip().lower()
    return list(dict.fromkeys([w, w.capitalize(), w.upper()]))


def _text(tokenizer, token_id: int) -> str:
    return tokenizer.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False)


def whole_word_tokens(tokenizer, word: str) -> dict[int, str]:
    """Vocabulary entries that spell the whole word in some case, with or without a leading space."""
    forms = set(surface_forms(word))
    needle = word.strip().lower()
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    found: dict[int, str] = {}
    for piece, token_id in tokenizer.get_vocab().items():
        if needle not in piece.lower() or token_id in special:
            continue  # cheap filter: "ĠYes" and "▁Yes" contain the letters; decoding checks the text
        text = _text(tokenizer, token_id)
        if text.strip() in forms:
            found[int(token_id)] = text
    return found


def first_subtokens(tokenizer, word: str, known: set[int]) -> tuple[dict[int, str], list[dict[str, Any]]]:
    """For spellings that are no single token: their first sub-token if it is two or more characters of the word."""
    chosen: dict[int, str] = {}
    skipped: list[dict[str, Any]] = []
    needle = word.strip().lower()
    for form in surface_forms(word):
        for spelling in (form, " " + form):
            ids = tokenizer.encode(spelling, add_special_tokens=False)
            while ids and not _text(tokenizer, ids[0]).strip():
                ids = ids[1:]  # a bare space piece ("▁", "Ġ") starts every word
            if not ids or ids[0] in known or ids[0] in chosen:
                continue
            piece = _text(tokenizer, ids[0]).strip()
            if len(piece) >= 2 and needle.startswith(piece.lower()):
                chosen[int(ids[0])] = _text(tokenizer, ids[0])
            else:
                skipped.append({"spelling": spelling, "first_token": piece, "id": int(ids[0])})
    return chosen, skipped


@dataclass(frozen=True)
class AnswerTokens:
    """Token ids whose probability counts as "yes" / "no", with what they decode to."""

    yes: tuple[int, ...]
    no: tuple[int, ...]
    texts: dict[int, str]
    skipped: tuple[dict[str, Any], ...] = ()

    pieces: dict[int, str] = field(default_factory=dict)  # vocabulary entries ("ĠYes", "▁yes")

    def record(self) -> dict[str, Any]:
        """JSON-ready: what the run counted (stored with the predictions)."""
        return {
            "yes": [{"id": i, "text": self.texts[i], "token": self.pieces.get(i)} for i in self.yes],
            "no": [{"id": i, "text": self.texts[i], "token": self.pieces.get(i)} for i in self.no],
            "skipped": list(self.skipped),
        }


def answer_tokens(tokenizer, yes_word: str = "yes", no_word: str = "no") -> AnswerTokens:
    """The yes and no token sets of a tokenizer; a ConfigError when one is empty or they overlap."""
    sets: dict[str, dict[int, str]] = {}
    skipped: list[dict[str, Any]] = []
    for label, word in (("yes", yes_word), ("no", no_word)):
        whole = whole_word_tokens(tokenizer, word)
        pieces, skip = first_subtokens(tokenizer, word, set(whole))
        sets[label] = {**whole, **pieces}
        skipped += [{"answer": label, **s} for s in skip]
        if not sets[label]:
            raise ConfigError(f"the tokenizer has no token that starts {word!r}; logit mode is unavailable for it")
    shared = sorted(set(sets["yes"]) & set(sets["no"]))
    if shared:
        raise ConfigError(
            f"answer tokens: {[sets['yes'][i] for i in shared]} start both {yes_word!r} and {no_word!r}; "
            "logit mode cannot tell them apart"
        )
    texts = {**sets["yes"], **sets["no"]}
    return AnswerTokens(
        yes=tuple(sorted(sets["yes"])),
        no=tuple(sorted(sets["no"])),
        texts=texts,
        skipped=tuple(skipped),
        pieces={i: str(tokenizer.convert_ids_to_tokens(i)) for i in texts},
    )
