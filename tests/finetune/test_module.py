"""LoRA placement and parameter counts, learning on a fixed batch, adapter round trip, bad targets."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from probmed.core.errors import ConfigError
from probmed.finetune import data
from probmed.finetune.module import (
    VisionLanguageFineTuner,
    count_parameters,
    load_adapted_model,
    load_base_model,
    resolve_target_modules,
)

LORA = {"r": 4, "alpha": 8, "dropout": 0.0, "target_modules": r".*language_model.*\.(q_proj|v_proj)"}


@pytest.fixture()
def batch(shared_data: Path, questions, tiny_model_dir):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_model_dir)
    examples = data.examples_from_questions(questions.iloc[:8])
    encoded = data.encode_examples(examples, processor, shared_data)
    answer_ids = data.answer_token_ids(processor, {"yes": "yes", "no": "no"})
    tok = processor.tokenizer
    return data.collate(encoded, tok.pad_token_id, answer_ids, tok.eos_token_id), answer_ids


def test_lora_attaches_only_to_configured_modules_and_trains_only_adapters(tiny_model_dir):
    base = load_base_model(tiny_model_dir)
    _, total_base = count_parameters(base)
    targets = resolve_target_modules(base, LORA["target_modules"])
    # the tiny model: 2 language layers x (q_proj, v_proj); the vision tower's q/v are not targets
    assert len(targets) == 4
    assert all("language_model" in t for t in targets)
    wanted = {(t, dict(base.named_modules())[t].in_features, dict(base.named_modules())[t].out_features) for t in targets}

    module = VisionLanguageFineTuner(base, "lora", lr=1e-3, lora=LORA)
    wrapped = [n for n, m in module.model.named_modules() if hasattr(m, "lora_A") and n.endswith(("q_proj", "v_proj"))]
    assert sorted(w.split("base_model.model.", 1)[1] for w in wrapped) == sorted(targets)
    assert not any("vision_tower" in n for n, _ in module.model.named_modules() if "lora_A" in n)

    trainable_names = [n for n, p in module.model.named_parameters() if p.requires_grad]
    assert trainable_names and all("lora_" in n for n in trainable_names)
    trainable, total = count_parameters(module.model)
    expected = sum(LORA["r"] * (i + o) for _, i, o in wanted)  # A: r x in, B: out x r
    assert trainable == expected
    assert total == total_base + expected


def test_full_mode_trains_everything(tiny_model_dir):
    module = VisionLanguageFineTuner(load_base_model(tiny_model_dir), "full", lr=1e-3)
    trainable, total = count_parameters(module.model)
    assert trainable == total > 50_000


@pytest.mark.parametrize(
    "target, message",
    [
        (["q_proj", "gate_proj", "not_a_layer"], r"\['not_a_layer'\] not found in the model"),
        (r".*language_model.*\.qkv", "matches no Linear module"),
        ([], "target_modules is empty"),
    ],
)
def test_bad_target_modules_fail_before_training(tiny_model_dir, target, message):
    model = load_base_model(tiny_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    with pytest.raises(ConfigError, match=message):
        VisionLanguageFineTuner(model, "lora", lr=1e-3, lora={**LORA, "target_modules": target})
    # nothing was wrapped or changed
    assert not any("lora_" in n for n, _ in model.named_modules())
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters())


@pytest.mark.parametrize("mode", ["lora", "full"])
def test_loss_decreases_on_a_fixed_batch(tiny_model_dir, batch, mode):
    torch.manual_seed(0)
    tensors, answer_ids = batch
    # A freshly initialised model's output head is near zero, so adapters on attention alone
    # cannot move its logits; on this untrained base the head is adapted as well.
    targets = LORA["target_modules"] + "|lm_head"
    lora = {**LORA, "r": 8, "alpha": 16, "target_modules": targets} if mode == "lora" else None
    module = VisionLanguageFineTuner(load_base_model(tiny_model_dir), mode, lr=1e-2, lora=lora, answer_ids=answer_ids)
    optimizer = module.configure_optimizers()
    module.model.train()
    losses = []
    for _ in range(25):
        optimizer.zero_grad()
        loss = module.model(**tensors).loss
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert max(losses[-3:]) < 0.5 * losses[0], losses


def test_adapter_save_reload_gives_identical_logits(tmp_path, tiny_model_dir, batch):
    torch.manual_seed(0)
    tensors, answer_ids = batch
    module = VisionLanguageFineTuner(load_base_model(tiny_model_dir), "lora", lr=1e-2, lora=LORA, answer_ids=answer_ids)
    optimizer = module.configure_optimizers()
    for _ in range(5):  # move the adapter away from its zero initialisation
        optimizer.zero_grad()
        module.model(**tensors).loss.backward()
        optimizer.step()
    module.model.eval()
    inputs = {k: v for k, v in tensors.items() if k != "labels"}
    with torch.no_grad():
        trained = module.model(**inputs).logits
        base_logits = load_base_model(tiny_model_dir)(**inputs).logits
    out = module.save(tmp_path / "adapter")
    files = sorted(p.name for p in out.iterdir())
    assert "adapter_config.json" in files and "adapter_model.safetensors" in files
    assert not any(name.startswith("model") for name in files)  # the base weights are not saved
    reloaded = load_adapted_model(tiny_model_dir, out)
    with torch.no_grad():
        again = reloaded(**inputs).logits
    assert torch.equal(trained, again)
    assert not torch.allclose(trained, base_logits)  # the adapter changed the model


def test_the_optimizer_is_the_fused_kernel(tiny_model_dir):
    """Only the fused AdamW keeps MKL's CPU-dependent vector math out of the update."""
    optimizer = VisionLanguageFineTuner(load_base_model(tiny_model_dir), "full", lr=1e-3).configure_optimizers()
    assert optimizer.defaults["fused"] is True
