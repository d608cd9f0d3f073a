"""The tiny LLaVA builds offline, loads with the Auto classes and generates."""

from __future__ import annotations

import json

import torch
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

from probmed.inference.models.tiny import build_tiny_llava, count_parameters


def _generate(model_dir, image_path, question="Is this a CT scan of the chest?"):
    model = AutoModelForImageTextToText.from_pretrained(model_dir)
    processor = AutoProcessor.from_pretrained(model_dir)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True)
    inputs = processor(images=[Image.open(image_path)], text=[prompt], return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=6, do_sample=False)
    return model, processor, inputs, out


def test_tiny_llava_loads_and_generates(tiny_dir, vqarad_images):
    model, processor, inputs, out = _generate(tiny_dir, vqarad_images[0])
    assert type(model).__name__ == "LlavaForConditionalGeneration"
    assert 50_000 < count_parameters(model) < 200_000
    tokens = processor.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert tokens.count("<image>") == model.config.image_seq_length
    assert "chest" in tokens and "<unk>" not in tokens
    assert out.shape[1] > inputs["input_ids"].shape[1]


def test_tiny_llava_is_deterministic_per_seed(tmp_path, tiny_dir):
    again = build_tiny_llava(tmp_path / "again", seed=0)
    other = build_tiny_llava(tmp_path / "other", seed=1)
    same = (again / "model.safetensors").read_bytes() == (tiny_dir / "model.safetensors").read_bytes()
    assert same
    assert (other / "model.safetensors").read_bytes() != (tiny_dir / "model.safetensors").read_bytes()
    assert json.loads((again / "tokenizer.json").read_text()) == json.loads((tiny_dir / "tokenizer.json").read_text())


def test_extra_corpus_extends_vocabulary(tmp_path):
    out = build_tiny_llava(tmp_path / "m", corpus=["pneumoperitoneum xyzzy"])
    tok = AutoProcessor.from_pretrained(out).tokenizer
    assert tok.convert_tokens_to_ids("xyzzy") != tok.unk_token_id


def test_chat_prompt_snapshot(tiny_dir):
    """The rendered prompt is part of what the model sees: a template change must be deliberate."""
    processor = AutoProcessor.from_pretrained(tiny_dir)
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Is this an MRI?"}]},
    ]
    prompt = processor.apply_chat_template(messages, add_generation_prompt=True)
    assert prompt == "system: Be brief.\nuser: <image> Is this an MRI?\nassistant:"
