"""Logit mode on real-shaped tokenizers: every spelling of yes / no counts, the sets never overlap,
and the counted ids are recorded with the run."""

from __future__ import annotations

import pytest
import torch

from probmed.core.errors import ConfigError
from probmed.inference.models.answer_tokens import answer_tokens, surface_forms
from probmed.inference.models.hf import yes_probability
from probmed.inference.models.tiny import build_tokenizer
from probmed.inference.models.tiny_families import LLAMA2_TOKENS, QWEN_TOKENS
from probmed.inference.models.tiny_tokenizers import build_bpe_tokenizer


@pytest.fixture(scope="module")
def bytelevel():
    return build_bpe_tokenizer(QWEN_TOKENS)


def ids_of(tok, counted):
    return {tok.decode([i]): i for i in counted}


def test_surface_forms():
    assert surface_forms(" Yes") == ["yes", "Yes", "YES"]


def test_leading_space_and_case_are_different_tokens_and_all_count(bytelevel):
    tok = bytelevel
    assert tok.encode(" Yes", add_special_tokens=False) != tok.encode("yes", add_special_tokens=False)
    counted = answer_tokens(tok)
    yes, no = ids_of(tok, counted.yes), ids_of(tok, counted.no)
    assert set(yes) == {"yes", "Yes", " yes", " Yes"} and set(no) == {"no", "No", " no", " No"}
    # probability mass on " Yes" and on "yes" both count as yes
    logits = torch.full((1, len(tok)), -30.0)
    logits[0, yes[" Yes"]] = logits[0, yes["yes"]] = 2.0
    logits[0, no[" No"]] = 2.0
    p_yes, p_y, p_n = yes_probability(logits, counted)
    assert p_yes.item() == pytest.approx(2 / 3, abs=1e-6)
    assert p_y.item() == pytest.approx(2 * p_n.item(), rel=1e-6)


def test_sentencepiece_style_tokens_count_with_their_space_marker():
    tok = build_bpe_tokenizer(LLAMA2_TOKENS)
    counted = answer_tokens(tok)
    pieces = {tok.convert_ids_to_tokens(i) for i in counted.yes}
    assert {"▁Yes", "▁yes"} <= pieces
    assert {t["token"] for t in counted.record()["yes"]} == pieces
    assert all(tok.convert_ids_to_tokens(i).lstrip("▁").lower() == "yes" for i in counted.yes)


def test_a_split_spelling_counts_by_its_first_subtoken_unless_it_is_one_letter():
    from probmed.inference.models.tiny_tokenizers import TokenizerSpec

    spec = TokenizerSpec(style="bytelevel", specials=(), pad="<pad>", eos="</s>")
    tok = build_bpe_tokenizer(spec, corpus=["YE"] * 50 + ["YE S"] * 50)  # "YES" -> "YE" + "S"
    assert tok.convert_ids_to_tokens(tok.encode("YES", add_special_tokens=False))[:1] == ["YE"]
    counted = answer_tokens(tok)
    assert "YE" in {tok.decode([i]) for i in counted.yes}
    assert {s["first_token"] for s in counted.skipped if s["answer"] == "no"} == {"N"}  # "NO" -> "N" + "O"
    assert not set(counted.yes) & set(counted.no)


def test_answers_that_share_a_first_token_are_refused(bytelevel):
    with pytest.raises(ConfigError, match="start both 'yes' and 'yesterday'"):
        answer_tokens(bytelevel, "yes", "yesterday")  # "yesterday" starts with the token "yes"


def test_the_default_tiny_tokenizer_counts_exactly_its_two_words():
    """The word-level tokenizer of the default model: unchanged ids, so unchanged answers."""
    tok = build_tokenizer()
    counted = answer_tokens(tok)
    assert counted.yes == (tok.convert_tokens_to_ids("yes"),) and counted.no == (tok.convert_tokens_to_ids("no"),)
    record = counted.record()
    assert record["yes"] == [{"id": counted.yes[0], "text": "yes", "token": "yes"}] and record["skipped"] == []
