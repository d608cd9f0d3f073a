"""Sub-word tokenizers trained in-process, shaped like the real ones of each model family.

The default tiny model has a word-level tokenizer where "yes" is one token
whatever its case or spacing. Real checkpoints split text into sub-words:
" Yes", "Yes" and "yes" are different tokens, a rare spelling ("YES") splits
into pieces, and SentencePiece-style vocabularies (Llama-2, Mistral, Gemma) mark
a leading space with "▁". Logit mode and the answer parser must cope with all
of that, so the family test models get BPE tokenizers of both kinds, trained
here on the prompts' own words (deterministic for a given corpus).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from probmed.inference.models.tiny import _corpus_words

# How often each answer spelling appears in the training text: the common ones
# become single tokens, as in real vocabularies; "YES" / "NO" never appear and
# split into pieces.
ANSWER_SPELLINGS: dict[str, int] = {
    "yes": 40, "Yes": 40, " yes": 40, " Yes": 40, "no": 40, "No": 40, " no": 40, " No": 40, "Yes.": 10, "No.": 10,
}
BPE_VOCAB_SIZE = 1024


@dataclass(frozen=True)
class TokenizerSpec:
    """The special tokens and segmentation style of one family's tokenizer."""

    style: str  # "bytelevel" (GPT-2 / Llama-3 / Qwen: "Ġ" marks a space) or "metaspace" (SentencePiece: "▁")
    specials: tuple[str, ...]
    pad: str
    eos: str
    bos: str | None = None
    unk: str | None = None
    add_bos: bool = False  # the tokenizer itself prepends bos (Llama-2 / Mistral style)
    extra: dict[str, str] = field(default_factory=dict)  # named special tokens (image_token, boi_token, ...)


def training_text(extra: Iterable[str] = ()) -> list[str]:
    """The prompts' vocabulary plus every answer spelling at its realistic frequency."""
    lines = _corpus_words(extra)
    for spelling, count in ANSWER_SPELLINGS.items():
        lines += [spelling] * count
    lines += ["Answer with a single word: yes or no.", "The answer is yes.", "The answer is no."] * 5
    return lines


def build_bpe_tokenizer(spec: TokenizerSpec, corpus: Iterable[str] = (), vocab_size: int = BPE_VOCAB_SIZE):
    """A BPE tokenizer of the given style, wrapped for transformers; same corpus, same vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    if spec.style == "bytelevel":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        alphabet = pre_tokenizers.ByteLevel.alphabet()
    elif spec.style == "metaspace":
        tok = Tokenizer(models.BPE(unk_token=spec.unk, byte_fallback=True))
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=True)
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
        alphabet = [f"<0x{b:02X}>" for b in range(256)]
    else:
        raise ValueError(f"unknown tokenizer style {spec.style!r}")
    specials = list(dict.fromkeys([t for t in (spec.pad, spec.eos, spec.bos, spec.unk) if t] + list(spec.specials)))
    if spec.style == "metaspace":
        specials += alphabet  # byte-fallback pieces: any character can be encoded
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=alphabet if spec.style == "bytelevel" else [])
    tok.train_from_iterator(training_text(corpus), trainer=trainer)
    if spec.add_bos and spec.bos:
        bos_id = tok.token_to_id(spec.bos)
        tok.post_processor = processors.TemplateProcessing(
            single=f"{spec.bos} $A", pair=f"{spec.bos} $A {spec.bos} $B", special_tokens=[(spec.bos, bos_id)]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=spec.pad,
        eos_token=spec.eos,
        bos_token=spec.bos,
        unk_token=spec.unk,
        extra_special_tokens=dict(spec.extra),
        padding_side="left",
    )
