"""The tiny family models: the prompt each model sees is pinned, image tokens land where the family puts
them, builds are deterministic, and processors load without torchvision."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from probmed.cli import main
from probmed.inference.models.families import FAMILIES, family_of, load_processor
from probmed.inference.models.hf import chat_prompt, encode
from probmed.inference.models.tiny_families import BUILDERS, build_tiny_family

# family: (prompt without a system prompt, with system prompt "Be brief.", prompt tokens, image tokens) for
# "Is this an MRI?" about synpic100132.jpg (2321 x 1384 px). A template or geometry change must be deliberate.
SNAPSHOTS = {
    "llava": (
        "USER: <image>\nIs this an MRI? ASSISTANT:",
        "Be brief. USER: <image>\nIs this an MRI? ASSISTANT:",
        41, 16,
    ),
    "llava-next": (
        "[INST] <image>\nIs this an MRI? [/INST]",
        "<<SYS>>\nBe brief.\n<</SYS>>\n\n[INST] <image>\nIs this an MRI? [/INST]",
        68, 44,
    ),
    "llava-onevision": (
        "<|im_start|>user <image>\nIs this an MRI?<|im_end|><|im_start|>assistant\n",
        "<|im_start|>system \nBe brief.<|im_end|><|im_start|>user <image>\nIs this an MRI?<|im_end|>"
        "<|im_start|>assistant\n",
        67, 52,
    ),
    "qwen2-vl": (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|>Is this an MRI?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|>Is this an MRI?<|im_end|>\n<|im_start|>assistant\n",
        52, 15,
    ),
    "qwen2.5-vl": (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|>Is this an MRI?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
        "<|vision_start|><|image_pad|><|vision_end|>Is this an MRI?<|im_end|>\n<|im_start|>assistant\n",
        52, 15,
    ),
    "gemma3": (
        "<bos><start_of_turn>user\n<start_of_image>Is this an MRI?<end_of_turn>\n<start_of_turn>model\n",
        "<bos><start_of_turn>user\nBe brief.\n\n<start_of_image>Is this an MRI?<end_of_turn>\n<start_of_turn>model\n",
        29, 4,
    ),
    "idefics3": (
        "<|begin_of_text|>User:<image>Is this an MRI?<end_of_utterance>\nAssistant:",
        "<|begin_of_text|>System: Be brief.<end_of_utterance>\nUser:<image>Is this an MRI?<end_of_utterance>\n"
        "Assistant:",
        23, 4,
    ),
    "mllama": (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n<|image|>Is this an MRI?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n<|image|>Is this an MRI?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        20, 1,
    ),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("built")
    return {f: build_tiny_family(f, root / f) for f in BUILDERS}


def test_every_builder_has_a_snapshot_and_a_runtime_family():
    assert set(SNAPSHOTS) == set(BUILDERS)
    assert set(BUILDERS) <= set(FAMILIES)


@pytest.mark.parametrize("family", list(SNAPSHOTS))
def test_prompt_snapshot(family, built, shared_data):
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(built[family])
    assert family_of(config).name == family
    processor = load_processor(str(built[family]), config.model_type)
    plain, with_system, n_tokens, n_image = SNAPSHOTS[family]
    assert chat_prompt(processor, "Is this an MRI?") == plain
    assert chat_prompt(processor, "Is this an MRI?", system="Be brief.") == with_system
    with Image.open(shared_data / "vqa-rad" / "VQA_RAD Image Folder" / "synpic100132.jpg") as im:
        batch = encode(processor, family_of(config), [im.convert("RGB")], [plain])
    ids = batch["input_ids"][0].tolist()
    image_id = getattr(config, "image_token_id", None) or getattr(config, "image_token_index")
    assert (len(ids), ids.count(image_id)) == (n_tokens, n_image)
    if family_of(config).image_first:  # every question about one image shares the prompt up to the image
        assert plain.index(processor.image_token) < plain.index("Is this an MRI?")


@pytest.mark.parametrize("family", ["qwen2.5-vl", "gemma3"])
def test_builds_are_deterministic_per_seed(family, built, tmp_path):
    again = build_tiny_family(family, tmp_path / "again", seed=0)
    other = build_tiny_family(family, tmp_path / "other", seed=1)
    weights = (built[family] / "model.safetensors").read_bytes()
    assert (again / "model.safetensors").read_bytes() == weights
    assert (other / "model.safetensors").read_bytes() != weights
    assert (again / "tokenizer.json").read_text() == (built[family] / "tokenizer.json").read_text()


def test_video_capable_processors_load_image_only_without_torchvision(built):
    """Qwen2-VL and LLaVA-OneVision processors take a video processor, which needs torchvision."""
    from transformers import AutoConfig
    from transformers.utils import is_torchvision_available

    if is_torchvision_available():
        pytest.skip("torchvision is installed: AutoProcessor loads these processors itself")
    for family in ("qwen2-vl", "qwen2.5-vl", "llava-onevision"):
        config = AutoConfig.from_pretrained(built[family])
        processor = load_processor(str(built[family]), config.model_type)
        assert type(processor).__name__ == json.loads((built[family] / "processor_config.json").read_text())[
            "processor_class"]
        assert getattr(processor, "video_processor", None) is None


def test_cli_builds_a_family_model(tmp_path, capsys):
    assert main(["build-tiny-model", "--family", "gemma3", "--out", str(tmp_path / "g")]) == 0
    assert json.loads(capsys.readouterr().out)["family"] == "gemma3"
    assert (tmp_path / "g" / "model.safetensors").is_file()
    assert main(["build-tiny-model", "--family", "gpt5", "--out", str(tmp_path / "x")]) == 2
    assert "gpt5" in capsys.readouterr().err and not (tmp_path / "x").exists()
