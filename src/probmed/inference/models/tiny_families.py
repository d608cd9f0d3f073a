"""Tiny random-weight models of every vision-language family transformers ships.

None of the current checkpoints (MedGemma, Lingshu, LLaVA-Med, Qwen2.5-VL, ...)
can be downloaded here, but each architecture can be built from its config.
A builder here makes a ~100k-parameter model of one family with that family's
processor, image-token expansion and chat-template shape, and a sub-word
tokenizer trained in-process (tiny_tokenizers), and saves it so the Auto classes
load it like a hub checkpoint. Random weights answer noise; what they prove is
the code path: prompt building, image token placement, multimodal position ids,
generation, logit mode and LoRA loading. Image geometry is shrunk (a few image
tokens, not hundreds); the real figures are in the model table of docs/evaluate/models.md.

Deterministic for a given family and seed. The default tiny LLaVA of
`probmed build-tiny-model` (tiny.py, word-level tokenizer) is separate and
unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from probmed.inference.models.tiny_tokenizers import TokenizerSpec, build_bpe_tokenizer

H = 32  # hidden size of every tiny language model and vision tower
LAYERS = 2

# Chat templates of each family's shape for one user turn of images and text
# (the real templates also handle videos, tools and multi-turn edge cases).
LLAVA_TEMPLATE = (  # llava-hf/llava-1.5-*: "USER: <image>\n... ASSISTANT:"
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': ' }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] + ' ' }}{% else %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'text') %}{{ c['text'] + ' ' }}{% endfor %}"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
MISTRAL_TEMPLATE = (  # llava-hf/llava-v1.6-mistral-7b-hf: "[INST] <image>\n... [/INST]"
    "{% for message in messages %}{% if message['role'] == 'system' %}{{ '<<SYS>>\n' }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'text') %}{{ c['text'] }}{% endfor %}{% endif %}"
    "{% if message['role'] == 'system' %}{{ '\n<</SYS>>\n\n' }}{% elif message['role'] == 'user' %}{{ ' [/INST]' }}"
    "{% else %}{{ eos_token }}{% endif %}{% endfor %}"
)
ONEVISION_TEMPLATE = (  # llava-hf/llava-onevision-qwen2-*: "<|im_start|>user <image>\n...<|im_end|>"
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + ' ' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>' }}{% endfor %}"
    "{% for c in message['content'] | selectattr('type', 'equalto', 'text') %}{{ '\n' + c['text'] }}{% endfor %}"
    "{% endif %}{{ '<|im_end|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
QWEN_TEMPLATE = (  # Qwen/Qwen2-VL-*, Qwen2.5-VL-* (Lingshu, HuatuoGPT-Vision-Qwen2.5VL)
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' }}{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for c in message['content'] %}{% if c['type'] == 'image' %}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
GEMMA_TEMPLATE = (  # google/gemma-3-*-it, google/medgemma-4b-it: the system text opens the first user turn
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}"
    "{% set first = messages[0]['content'][0]['text'] + '\\n\\n' %}{% set turns = messages[1:] %}"
    "{% else %}{% set first = '' %}{% set turns = messages %}{% endif %}{% for message in turns %}"
    "{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\\n' }}"
    "{% if loop.first %}{{ first }}{% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '<start_of_image>' }}{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<end_of_turn>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)
IDEFICS3_TEMPLATE = (  # HuggingFaceM4/Idefics3-8B-Llama3 ("<|begin_of_text|>User:<image>...") and SmolVLM
    "{{ bos_token }}{% for message in messages %}{{ message['role'].capitalize() }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for c in message['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% else %}{{ '<image>' }}{% endif %}"
    "{% endfor %}{{ '<end_of_utterance>\n' }}{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
MLLAMA_TEMPLATE = (  # meta-llama/Llama-3.2-11B-Vision-Instruct (Llama-3 headers, one <|image|> token)
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}{{ '<|image|>' }}{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

LLAMA2_TOKENS = TokenizerSpec(  # SentencePiece-style ("▁"), bos prepended by the tokenizer
    style="metaspace", specials=("<image>",), pad="<pad>", eos="</s>", bos="<s>", unk="<unk>", add_bos=True,
    extra={"image_token": "<image>"},
)
QWEN_TOKENS = TokenizerSpec(
    style="bytelevel", pad="<|endoftext|>", eos="<|im_end|>",
    specials=("<|im_start|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"),
    extra={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"},
)
ONEVISION_TOKENS = TokenizerSpec(  # Qwen2 vocabulary plus LLaVA's "<image>" / "<video>" placeholders
    style="bytelevel", pad="<|endoftext|>", eos="<|im_end|>", specials=("<|im_start|>", "<image>", "<video>"),
    extra={"image_token": "<image>", "video_token": "<video>"},
)


def _seeded(seed: int, make: Callable[[], Any]):
    """Build a model under a fixed torch seed without disturbing the caller's random state."""
    import torch

    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = make()
    finally:
        torch.random.set_rng_state(state)
    return model.eval()


def _text_config(tokenizer, **extra) -> dict[str, Any]:
    """A Llama-shaped language model of H hidden units."""
    return {
        "vocab_size": len(tokenizer), "hidden_size": H, "intermediate_size": 2 * H, "num_hidden_layers": LAYERS,
        "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 2048,
        "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, **extra,
    }


def _clip_vision(image_size: int, patch: int) -> dict[str, Any]:
    return {"model_type": "clip_vision_model", "hidden_size": H, "intermediate_size": 2 * H,
            "num_hidden_layers": LAYERS, "num_attention_heads": 2, "image_size": image_size, "patch_size": patch,
            "projection_dim": H}


def _siglip_vision(image_size: int, patch: int) -> dict[str, Any]:
    return {"model_type": "siglip_vision_model", "hidden_size": H, "intermediate_size": 2 * H,
            "num_hidden_layers": LAYERS, "num_attention_heads": 2, "image_size": image_size, "patch_size": patch}


def _save(out: Path, model, processor, tokenizer) -> Path:
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        do_sample=False, max_new_tokens=16, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_llava(out: Path, seed: int, corpus, head_dim: int | None = None) -> Path:
    """LLaVA-1.5 (LLaVA-Med v1.5 HF conversion, HuatuoGPT-Vision-7B-hf): CLIP tower, MLP projector, Llama.
    `head_dim`: the language model's attention head size (H / 2 by default; vLLM's CPU attention needs >= 32)."""
    from transformers import CLIPImageProcessorPil, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tok = build_bpe_tokenizer(LLAMA2_TOKENS, corpus)
    text = _text_config(tok, **({"head_dim": head_dim} if head_dim else {}))
    config = LlavaConfig(
        vision_config=_clip_vision(32, 8), text_config={"model_type": "llama", **text},
        image_token_index=tok.convert_tokens_to_ids("<image>"), image_seq_length=16,
        vision_feature_select_strategy="default", vision_feature_layer=-2,
    )
    model = _seeded(seed, lambda: LlavaForConditionalGeneration(config))
    images = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(image_processor=images, tokenizer=tok, patch_size=8, chat_template=LLAVA_TEMPLATE,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1)
    return _save(out, model, processor, tok)


def build_llava_next(out: Path, seed: int, corpus) -> Path:
    """LLaVA-NeXT / v1.6 (Mistral): any-resolution tiles plus a base view, newline tokens between rows."""
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextImageProcessorPil, LlavaNextProcessor

    tok = build_bpe_tokenizer(LLAMA2_TOKENS, corpus)
    pinpoints = [[32, 32], [32, 64], [64, 32]]
    config = LlavaNextConfig(
        vision_config=_clip_vision(32, 8), text_config={"model_type": "mistral", **_text_config(tok)},
        image_token_index=tok.convert_tokens_to_ids("<image>"), image_grid_pinpoints=pinpoints,
        image_seq_length=16, vision_feature_select_strategy="default", vision_feature_layer=-2,
    )
    model = _seeded(seed, lambda: LlavaNextForConditionalGeneration(config))
    images = LlavaNextImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                        image_grid_pinpoints=pinpoints)
    processor = LlavaNextProcessor(image_processor=images, tokenizer=tok, patch_size=8, chat_template=MISTRAL_TEMPLATE,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1)
    return _save(out, model, processor, tok)


def build_llava_onevision(out: Path, seed: int, corpus) -> Path:
    """LLaVA-OneVision (Qwen2 language model, SigLIP tower, any-resolution up to 9 tiles)."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessorPil,
        LlavaOnevisionProcessor,
    )

    from probmed.inference.models.families import image_only

    tok = build_bpe_tokenizer(ONEVISION_TOKENS, corpus)
    pinpoints = [[32, 32], [32, 64], [64, 32], [64, 64]]
    config = LlavaOnevisionConfig(
        vision_config=_siglip_vision(32, 8), text_config={"model_type": "qwen2", **_text_config(tok)},
        image_token_index=tok.convert_tokens_to_ids("<image>"), video_token_index=tok.convert_tokens_to_ids("<video>"),
        image_grid_pinpoints=pinpoints, vision_feature_select_strategy="full", vision_feature_layer=-1,
    )
    model = _seeded(seed, lambda: LlavaOnevisionForConditionalGeneration(config))
    images = LlavaOnevisionImageProcessorPil(size={"height": 32, "width": 32}, image_grid_pinpoints=pinpoints)
    processor = image_only(LlavaOnevisionProcessor)(
        image_processor=images, tokenizer=tok, num_image_tokens=16, vision_feature_select_strategy="full",
        chat_template=ONEVISION_TEMPLATE,
    )
    return _save(out, model, processor, tok)


def _build_qwen(out: Path, seed: int, corpus, version: str) -> Path:
    """Qwen2-VL / Qwen2.5-VL: native-resolution 14 px patches merged 2x2 (28 px per image token, at most
    112 x 112 px here: up to 16 tokens, by aspect ratio), M-RoPE positions."""
    import transformers

    from probmed.inference.models.families import image_only

    prefix = "Qwen2VL" if version == "2" else "Qwen2_5_VL"
    tok = build_bpe_tokenizer(QWEN_TOKENS, corpus)
    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>",
                                                      "<|vision_end|>")}
    vision: dict[str, Any] = {"depth": LAYERS, "hidden_size": H, "num_heads": 2, "patch_size": 14,
                              "spatial_merge_size": 2, "temporal_patch_size": 2}
    if version == "2":
        vision.update(embed_dim=H, mlp_ratio=2)
    else:
        vision.update(intermediate_size=2 * H, out_hidden_size=H, window_size=56, fullatt_block_indexes=[1])
    text = _text_config(tok, rope_parameters={"rope_type": "default", "mrope_section": [2, 3, 3], "rope_theta": 1e6})
    config = getattr(transformers, f"{prefix}Config")(
        text_config=text, vision_config=vision, image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    model = _seeded(seed, lambda: getattr(transformers, f"{prefix}ForConditionalGeneration")(config))
    images = transformers.Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=112 * 112, patch_size=14,
                                                   temporal_patch_size=2, merge_size=2)
    processor = image_only(getattr(transformers, f"{prefix}Processor"))(
        image_processor=images, tokenizer=tok, chat_template=QWEN_TEMPLATE
    )
    return _save(out, model, processor, tok)


def build_qwen2_vl(out: Path, seed: int, corpus) -> Path:
    """Qwen2-VL: the Qwen vision tower without windowed attention, M-RoPE positions."""
    return _build_qwen(out, seed, corpus, "2")


def build_qwen2_5_vl(out: Path, seed: int, corpus) -> Path:
    """Qwen2.5-VL: the architecture of Lingshu-7B and HuatuoGPT-Vision-7B-Qwen2.5VL (windowed vision attention)."""
    return _build_qwen(out, seed, corpus, "2.5")


def build_gemma3(out: Path, seed: int, corpus) -> Path:
    """Gemma 3 (MedGemma): SigLIP tower pooled to a fixed token count, "<start_of_image>" expanded by the processor."""
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessorPil, Gemma3Processor

    spec = TokenizerSpec(
        style="metaspace", pad="<pad>", eos="<eos>", bos="<bos>", unk="<unk>",
        specials=("<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"),
        extra={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"},
    )
    tok = build_bpe_tokenizer(spec, corpus)
    text = _text_config(tok, model_type="gemma3_text", head_dim=16, query_pre_attn_scalar=16, sliding_window=64,
                        layer_types=["sliding_attention", "full_attention"])
    config = Gemma3Config(
        text_config=text, vision_config=_siglip_vision(32, 8), mm_tokens_per_image=4,
        boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
        eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
        image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
    )
    model = _seeded(seed, lambda: Gemma3ForConditionalGeneration(config))
    images = Gemma3ImageProcessorPil(size={"height": 32, "width": 32})
    processor = Gemma3Processor(image_processor=images, tokenizer=tok, chat_template=GEMMA_TEMPLATE, image_seq_length=4)
    return _save(out, model, processor, tok)


def _idefics_tokens(bos: str) -> TokenizerSpec:
    grid = tuple(f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7))
    return TokenizerSpec(
        style="bytelevel", pad="<pad>", eos="<end_of_utterance>", bos=bos,
        specials=("<fake_token_around_image>", "<image>", "<global-img>") + grid,
        extra={"image_token": "<image>"},
    )


def _build_idefics(out: Path, seed: int, corpus, smol: bool) -> Path:
    """Idefics3 / SmolVLM: SigLIP-style tower, pixel shuffle (scale 2) -> 4 tokens per 32 px image, no splitting."""
    import transformers

    from probmed.inference.models.families import image_only

    prefix = "SmolVLM" if smol else "Idefics3"
    tok = build_bpe_tokenizer(_idefics_tokens("<|im_start|>" if smol else "<|begin_of_text|>"), corpus)
    vision = {"hidden_size": H, "intermediate_size": 2 * H, "num_hidden_layers": LAYERS, "num_attention_heads": 2,
              "image_size": 32, "patch_size": 8}
    config = getattr(transformers, f"{prefix}Config")(
        vision_config=vision, text_config={"model_type": "llama", **_text_config(tok)}, scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )
    model = _seeded(seed, lambda: getattr(transformers, f"{prefix}ForConditionalGeneration")(config))
    images = getattr(transformers, f"{prefix}ImageProcessorPil")(
        do_image_splitting=False, size={"longest_edge": 32}, max_image_size={"longest_edge": 32}
    )
    processor = image_only(getattr(transformers, f"{prefix}Processor"))(
        image_processor=images, tokenizer=tok, image_seq_len=4, chat_template=IDEFICS3_TEMPLATE
    )
    return _save(out, model, processor, tok)


def build_idefics3(out: Path, seed: int, corpus) -> Path:
    """Idefics3 (Llama text model): the Idefics3 processor's prompt and image-token layout."""
    return _build_idefics(out, seed, corpus, smol=False)


def build_mllama(out: Path, seed: int, corpus) -> Path:
    """Mllama (Llama 3.2 Vision): one "<|image|>" token; the image enters through cross-attention layers."""
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaImageProcessorPil, MllamaProcessor

    spec = TokenizerSpec(
        style="bytelevel", pad="<|finetune_right_pad_id|>", eos="<|eot_id|>", bos="<|begin_of_text|>",
        specials=("<|start_header_id|>", "<|end_header_id|>", "<|image|>", "<|python_tag|>"),
        extra={"image_token": "<|image|>"},
    )
    tok = build_bpe_tokenizer(spec, corpus)
    vision = {"hidden_size": H, "intermediate_size": 2 * H, "num_hidden_layers": LAYERS, "num_global_layers": 1,
              "attention_heads": 2, "image_size": 16, "patch_size": 8, "max_num_tiles": 2,
              "intermediate_layers_indices": [0], "vision_output_dim": 2 * H,
              "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]}
    text = _text_config(tok, cross_attention_layers=[1], rope_parameters={"rope_type": "default", "rope_theta": 5e5})
    config = MllamaConfig(vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids("<|image|>"))
    model = _seeded(seed, lambda: MllamaForConditionalGeneration(config))
    images = MllamaImageProcessorPil(size={"height": 16, "width": 16}, max_image_tiles=2)
    processor = MllamaProcessor(image_processor=images, tokenizer=tok, chat_template=MLLAMA_TEMPLATE)
    return _save(out, model, processor, tok)


BUILDERS: dict[str, Callable[[Path, int, Any], Path]] = {
    "llava": build_llava,
    "llava-next": build_llava_next,
    "llava-onevision": build_llava_onevision,
    "qwen2-vl": build_qwen2_vl,
    "qwen2.5-vl": build_qwen2_5_vl,
    "gemma3": build_gemma3,
    "idefics3": build_idefics3,
    "mllama": build_mllama,
}


def build_tiny_family(family: str, out_dir: str | Path, seed: int = 0, corpus=()) -> Path:
    """Build, save and return the directory of a tiny random-weight model of `family`."""
    if family not in BUILDERS:
        raise ValueError(f"unknown model family {family!r}; known: {', '.join(BUILDERS)}")
    return BUILDERS[family](Path(out_dir), seed, list(corpus))
