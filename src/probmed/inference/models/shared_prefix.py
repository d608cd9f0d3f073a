"""Shared-prefix KV reuse: one image decode, one vision encode, one prefill of the common prompt per image.

ProbMed asks about nine questions per image. With a chat template that puts the
image before the question, every prompt about one image is the same prefix
(template text + hundreds of image tokens: 576 for LLaVA-1.5) followed by a
short question suffix. The physical limit of a local evaluation is therefore
one image preprocessing, one vision encode and one prefill of that prefix per
image, then only the suffix tokens per question. This module does exactly that
for a batch of prompts about one image:

1. `encode_image_once`: the processor sees the image once (with the first
   prompt); the other prompts are tokenized with the same expansion of the image
   placeholder, checked against the processor's own tokens for the first prompt.
2. `common_prefix_length`: the longest run of token ids all prompts share (the
   image and any system text before it; never a whole prompt).
3. `prefill`: the model runs on that prefix once (vision tower included) and
   keeps its KV cache.
4. Logit mode: every suffix in one forward pass from that cache. With an
   attention implementation that takes a custom mask (sdpa, eager: the default)
   the suffixes are packed into one sequence behind the prefix (`packed_logits`:
   no copy of the cache at all); otherwise they are a padded batch over copies
   of the cache (`padded_logits`).
5. Generation: the suffixes as a padded batch decode greedily from copies of the
   cache (`generate`). Suffixes are left padded, so the padding sits between
   prefix and suffix: the attention mask hides it and position ids continue from
   the prefix as if it were not there.

In every layout each question is the same computation as its prompt alone
(equal up to float rounding: tests/inference/models/test_shared_prefix.py).

Anything this cannot do exactly (a processor that builds text-side tensors from
the image or does not report its image expansion, spliced prompts whose tokens
differ from the processor's, a common prefix that does not cover the image,
cache layers other than full attention) raises `PrefixUnsupported`; the caller
then answers the batch as a per-image batch. Which families run here is decided
by the caller (verified by the equality tests), not by this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Processor outputs computed from the text that this module cannot rebuild for spliced prompts.
_TEXT_SIDE_TENSORS = ("token_type_ids", "mm_token_type_ids", "cross_attention_mask")
_TEXT_KEYS = ("input_ids", "attention_mask", "text_replacement_offsets")


class PrefixUnsupported(Exception):
    """This batch cannot take the shared-prefix path (the message says why); answer it per question."""


@dataclass
class ImagePrompts:
    """The prompts of one image: full token ids (image tokens expanded) and the image tensors, made once."""

    ids: list[list[int]]
    image_inputs: dict[str, Any]  # what the processor returns for the image alone (pixel_values, image_sizes, ...)
    image_token_ids: frozenset[int]  # the tokens the image placeholder expands to

    def image_end(self) -> int:
        """Index just past the last image token of the first prompt."""
        last = max((i for i, t in enumerate(self.ids[0]) if t in self.image_token_ids), default=-1)
        return last + 1


def encode_image_once(processor, images_arg: list[Any], prompts: list[str]) -> ImagePrompts:
    """Preprocess the image once and tokenize every prompt with its placeholder expanded the same way.

    `images_arg` is what the processor takes for one prompt with one image
    (`[image]`, or `[[image]]` for processors that nest images per prompt).
    """
    token = getattr(processor, "image_token", None)
    if not token or any(p.count(token) != 1 for p in prompts):
        raise PrefixUnsupported("every prompt must hold the image placeholder exactly once")
    try:
        first = processor(images=images_arg, text=prompts[:1], return_text_replacement_offsets=True,
                          return_tensors="pt")
    except (TypeError, ValueError) as exc:  # a processor with its own __call__ that lacks the offsets option
        raise PrefixUnsupported(f"the processor does not report its image expansion ({exc})") from None
    offsets = first.get("text_replacement_offsets")
    if not offsets or len(offsets[0]) != 1 or offsets[0][0].get("type") != "image":
        raise PrefixUnsupported("the processor does not report its image expansion")
    if any(k in first for k in _TEXT_SIDE_TENSORS):
        raise PrefixUnsupported("the processor builds text-side tensors from the image")
    replacement = offsets[0][0]["replacement"]
    tok = processor.tokenizer
    ids = [list(x) for x in tok([p.replace(token, replacement) for p in prompts])["input_ids"]]
    if ids[0] != first["input_ids"][0].tolist():
        raise PrefixUnsupported("spliced prompt tokens differ from the processor's")
    image_token_ids = frozenset(tok(replacement, add_special_tokens=False)["input_ids"])
    image_inputs = {k: v for k, v in first.items() if k not in _TEXT_KEYS}
    return ImagePrompts(ids=ids, image_inputs=image_inputs, image_token_ids=image_token_ids)


def common_prefix_length(ids: list[list[int]]) -> int:
    """Length of the longest token prefix every prompt shares, leaving each at least one suffix token."""
    limit = min(len(x) for x in ids) - 1
    n = 0
    first = ids[0]
    while n < limit and all(x[n] == first[n] for x in ids):
        n += 1
    return n


def plan(prompts: ImagePrompts) -> int:
    """The prefix length to cache: the common prefix, which must hold the whole image."""
    prefix_len = common_prefix_length(prompts.ids)
    if prefix_len < prompts.image_end():
        raise PrefixUnsupported("the prompts diverge before the image ends (text before the image differs)")
    return prefix_len


def prefill(model, prompts: ImagePrompts, prefix_len: int, device):
    """Run the vision tower and the prefix once; returns the prefix KV cache (batch 1)."""
    import torch
    from transformers.cache_utils import DynamicLayer

    ids = torch.tensor([prompts.ids[0][:prefix_len]], dtype=torch.long, device=device)
    image = {k: (v.to(device) if hasattr(v, "to") else v) for k, v in prompts.image_inputs.items()}
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True, logits_to_keep=1, **image)
    cache = out.cache
    if any(type(layer) is not DynamicLayer for layer in cache.layers):  # sliding-window, quantised, linear layers
        raise PrefixUnsupported("the model's KV cache is not plain full attention")
    return cache


def packs_suffixes(model) -> bool:
    """True where the attention implementation takes a custom 4-D mask (sdpa, eager), so suffixes can be packed."""
    return getattr(model.config, "_attn_implementation", None) in ("sdpa", "eager")


def packed_logits(model, prompts: ImagePrompts, prefix_len: int, cache, device):
    """Logits at the first answer position of every prompt, all suffixes packed into one sequence.

    The suffixes follow the cached prefix one after another; a 4-D mask lets each
    token see the prefix and the earlier tokens of its own suffix only, and its
    position id continues from the prefix, so each suffix is computed as if it
    followed the prefix alone. No copy of the prefix cache is made (the cache is
    consumed: the packed tokens are appended to it).
    """
    import torch

    suffixes = [x[prefix_len:] for x in prompts.ids]
    lengths = torch.tensor([len(s) for s in suffixes])
    total = int(lengths.sum())
    segment = torch.repeat_interleave(torch.arange(len(suffixes)), lengths)
    within = torch.cat([torch.arange(len(s)) for s in suffixes])
    allowed = torch.ones((total, prefix_len + total), dtype=torch.bool)
    allowed[:, prefix_len:] = (segment[:, None] == segment[None, :]) & (within[None, :] <= within[:, None])
    dtype = model.dtype if model.dtype.is_floating_point else torch.float32
    mask = torch.zeros((1, 1, total, prefix_len + total), dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    ids = torch.tensor([[t for s in suffixes for t in s]], dtype=torch.long)
    out = model(input_ids=ids.to(device), attention_mask=mask.to(device),
                position_ids=(prefix_len + within)[None].to(device), cache=cache, use_cache=True,
                logits_to_keep=(lengths.cumsum(0) - 1).to(device))
    return out.logits[0]


@dataclass
class PaddedSuffixes:
    """The suffixes as a left-padded batch: padding sits between the prefix and each suffix."""

    prefix: Any  # (1, P)
    suffix: Any  # (n, S)
    attention_mask: Any  # (n, P + S): ones over the prefix, the suffix padding masked
    position_ids: Any  # (n, S): P, P+1, ... over each suffix's real tokens


def pad_suffixes(prompts: ImagePrompts, prefix_len: int, pad_id: int, device) -> PaddedSuffixes:
    """Each prompt's tokens after the shared prefix, left padded into one batch on `device`."""
    import torch

    suffixes = [x[prefix_len:] for x in prompts.ids]
    n, width = len(suffixes), max(len(s) for s in suffixes)
    suffix = torch.full((n, width), pad_id, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, s in enumerate(suffixes):
        suffix[i, width - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s):] = 1
    positions = (prefix_len + mask.cumsum(-1) - 1).clamp_min(prefix_len)
    full_mask = torch.cat([torch.ones((n, prefix_len), dtype=torch.long), mask], dim=1)
    prefix = torch.tensor([prompts.ids[0][:prefix_len]], dtype=torch.long)
    return PaddedSuffixes(prefix.to(device), suffix.to(device), full_mask.to(device), positions.to(device))


def repeat_cache(cache, n: int):
    """A new cache holding the prefix once per question (the prefix cache itself is left untouched)."""
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=[(layer.keys.expand(n, -1, -1, -1), layer.values.expand(n, -1, -1, -1))
                                        for layer in cache.layers])


def padded_logits(model, batch: PaddedSuffixes, cache):
    """Logits at the first answer position of every prompt: the padded suffixes over copies of the cache."""
    n = batch.suffix.shape[0]
    out = model(input_ids=batch.suffix, attention_mask=batch.attention_mask, position_ids=batch.position_ids,
                cache=repeat_cache(cache, n), use_cache=True, logits_to_keep=1)
    return out.logits[:, -1, :]


def static_copies(model, cache, n: int, max_cache_len: int):
    """The prefix once per question in a preallocated cache of `max_cache_len` positions (decoding then writes
    each new token in place instead of copying the whole cache at every step)."""
    from transformers import StaticCache

    static = StaticCache(config=model.config, max_cache_len=max_cache_len)
    for i, layer in enumerate(cache.layers):
        static.update(layer.keys.expand(n, -1, -1, -1), layer.values.expand(n, -1, -1, -1), i)
    return static


def generate(model, batch: PaddedSuffixes, cache, max_new_tokens: int):
    """Greedy continuation of every prompt from copies of the cached prefix; the new token ids (n, T)."""
    import torch

    n = batch.suffix.shape[0]
    input_ids = torch.cat([batch.prefix.expand(n, -1), batch.suffix], dim=1)
    copies = static_copies(model, cache, n, input_ids.shape[1] + max_new_tokens)
    # disable_compile: a static cache would otherwise compile the forward pass on a GPU, once per batch shape
    out = model.generate(input_ids=input_ids, attention_mask=batch.attention_mask, cache=copies,
                         max_new_tokens=max_new_tokens, do_sample=False, disable_compile=True)
    return out[:, input_ids.shape[1]:]
