"""The shared-prefix path answers exactly as the per-question path: P(yes) within 1e-4, identical greedy text.

Every question of a 20-image sample (real VQA-RAD images, the generator's questions), on the default tiny
model and on the model with LLaVA-1.5's token geometry (576 image tokens), in logit mode and in generation;
then the variants of the prompt (system text before the image, a description after it, a LoRA adapter), the
fallbacks, and that the path is counted.
"""

from __future__ import annotations

import shutil

import pytest

from probmed.core.errors import BackendError
from probmed.inference.models import hf, shared_prefix
from probmed.inference.models.base import Item
from probmed.inference.models.families import FAMILIES
from probmed.inference.models.registry import build_backend
from probmed.inference.models.tiny import REALISTIC, build_tiny_llava
from probmed.inference.models.tiny_families import BUILDERS, build_tiny_family
from probmed.inference.prompting import PromptSet

PROMPTS = PromptSet.from_params({})
P_YES_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def sample(shared_data):
    """Items for every generated question on 20 VQA-RAD images, in question-table order (random adversarial
    values, as the ProbMed release draws them: every image keeps its questions)."""
    from probmed.benchmark.questions import generate_questions
    from probmed.benchmark.sources.vqarad import load_vqarad

    records = [r for r in load_vqarad(shared_data / "vqa-rad", shared_data).records if r.image_path][:20]
    frame, _ = generate_questions(records, seed=0, strategy="random")
    assert frame["image_id"].nunique() == 20
    return [Item(qid=r.qid, image_id=r.image_id, image_path=shared_data / r.image_path,
                 prompt=PROMPTS.question_prompt("vanilla", r.question), question=r.question)
            for r in frame.itertuples()]


def by_image(items: list[Item]) -> list[list[Item]]:
    groups: dict[str, list[Item]] = {}
    for it in items:
        groups.setdefault(it.image_id, []).append(it)
    return list(groups.values())


def backend(model_dir, mode: str, prefix_cache: str, context=None, **extra):
    cfg = {"backend": "hf", "model_id": str(model_dir), "mode": mode, "max_new_tokens": 8,
           "prefix_cache": prefix_cache, "threads": 1, **extra}  # one thread: two-thread kernels stall on 2 busy cores
    return build_backend({"m": cfg}, "m", **(context or {}))


def per_question(model_dir, items: list[Item], max_new_tokens: int, context=None, **extra) -> list[tuple[str, float]]:
    """Each question alone, the per-question path: its own processor call and a greedy generation from the
    whole prompt; the first step's raw logits give P(yes) as logit mode computes it (one pass serves both modes)."""
    import torch

    gen = backend(model_dir, "generate", "off", context, max_new_tokens=max_new_tokens, **extra)
    logit = backend(model_dir, "logits", "off", context, **extra)
    model = gen.load()[0]
    logit.load()
    out = []
    for it in items:
        batch = gen._inputs([it])
        with torch.no_grad():
            run = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, output_logits=True,
                                 return_dict_in_generate=True)
        length = batch["input_ids"].shape[1]
        text = gen._text_answers(run.sequences[:, length:], [length], 0.0)[0].response
        out.append((text, logit._logit_answers(run.logits[0], [length], 0.0)[0].p_yes))
    return out


def shared(model_dir, items: list[Item], mode: str, max_new_tokens: int, context=None, **extra) -> list:
    b = backend(model_dir, mode, "on", context, max_new_tokens=max_new_tokens, **extra)
    answers = [a for group in by_image(items) for a in b.answer(group)]
    assert b.stats()["shared_prefix_questions"] == len(items)
    assert b.stats()["image_encodes"] == len(by_image(items))
    return answers


def assert_equal_to_per_question(model_dir, items: list[Item], max_new_tokens: int = 8, context=None, **extra):
    """Both modes of the shared-prefix path against the per-question path, question by question."""
    items = [it for group in by_image(items) for it in group]
    want = per_question(model_dir, items, max_new_tokens, context, **extra)
    by_logits = shared(model_dir, items, "logits", max_new_tokens, context, **extra)
    assert max(abs(a.p_yes - p) for a, (_, p) in zip(by_logits, want)) < P_YES_TOLERANCE
    by_text = shared(model_dir, items, "generate", max_new_tokens, context, **extra)
    assert [a.response for a in by_text] == [text for text, _ in want]


def test_tiny_model_every_question_of_20_images(tiny_dir, sample):
    assert_equal_to_per_question(tiny_dir, sample)


@pytest.fixture(scope="module")
def realistic_dir(tmp_path_factory):
    return build_tiny_llava(tmp_path_factory.mktemp("realistic") / "m", geometry=REALISTIC)


@pytest.mark.slow
def test_llava15_geometry_every_question_of_20_images(realistic_dir, sample):
    assert_equal_to_per_question(realistic_dir, sample, max_new_tokens=3)


VERIFIED = [f for f in BUILDERS if FAMILIES[f].shared_prefix_verified]
UNVERIFIED = [f for f in BUILDERS if not FAMILIES[f].shared_prefix_verified]


@pytest.fixture(scope="module")
def family_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    return {f: build_tiny_family(f, root / f) for f in BUILDERS}


@pytest.mark.slow
@pytest.mark.parametrize("family", VERIFIED)
def test_verified_family_every_question_of_20_images(family, family_dirs, sample):
    """What marks a family verified: its tiny model (that family's processor, template, image expansion and
    language model) answers every question of the sample the same on both paths."""
    assert_equal_to_per_question(family_dirs[family], sample, max_new_tokens=4)


@pytest.mark.slow
@pytest.mark.parametrize("family", UNVERIFIED)
def test_other_families_take_the_per_image_batch(family, family_dirs, sample):
    """Qwen2-VL/2.5-VL and Gemma 3 build text-side tensors from the image (M-RoPE positions, token types),
    Mllama cross-attends to the image, LLaVA-NeXT's Mistral has sliding-window cache layers: per-image batch."""
    group = by_image(sample)[0]
    b = backend(family_dirs[family], "logits", "auto")
    assert len(b.answer(group)) == len(group)
    assert b.stats()["per_image_batch_questions"] == len(group)
    assert b.run_info()["path"] == "per-image-batch"
    assert b.run_info()["fallbacks"] == {f"the {family} family is not verified for the shared-prefix path": len(group)}


def test_llava15_geometry_prefix_is_the_image(realistic_dir, sample):
    """576 image tokens and the template before them are the shared prefix; the question is the suffix."""
    b = backend(realistic_dir, "logits", "on")
    processor = b.load()[1]
    group = by_image(sample)[0]
    prompts = b._prompts(group)
    encoded = shared_prefix.encode_image_once(processor, [b._image(group[0])], prompts)
    prefix_len = shared_prefix.plan(encoded)
    assert len(encoded.image_token_ids) == 1 and encoded.image_end() - 576 >= 1
    assert encoded.image_end() <= prefix_len < min(len(x) for x in encoded.ids)
    assert list(encoded.image_inputs) == ["pixel_values"]


def test_system_prompt_description_and_adapter(tmp_path, tiny_dir, sample):
    """Text before the image joins the prefix; a description after it is part of each suffix; LoRA weights too."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    few = [it for group in by_image(sample)[:3] for it in group]
    assert_equal_to_per_question(tiny_dir, few, context={"system_prompt": "You are a radiologist."})
    described = [Item(qid=it.qid, image_id=it.image_id, image_path=it.image_path, question=it.question,
                      prompt=PROMPTS.question_prompt("described", it.question, "A chest radiograph, no effusion."))
                 for it in few]
    assert_equal_to_per_question(tiny_dir, described)
    torch.manual_seed(0)
    model = get_peft_model(AutoModelForImageTextToText.from_pretrained(tiny_dir),
                           LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    model.save_pretrained(tmp_path / "adapter")
    assert_equal_to_per_question(tiny_dir, few, adapter=str(tmp_path / "adapter"))


def test_padded_suffixes_where_a_custom_mask_is_not_taken(tiny_dir, sample, monkeypatch):
    """With an attention implementation that takes no 4-D mask, logit mode uses the padded layout: same answers."""
    monkeypatch.setattr(shared_prefix, "packs_suffixes", lambda model: False)
    few = [it for g in by_image(sample)[:4] for it in g]
    want = per_question(tiny_dir, few, 1)
    got = shared(tiny_dir, few, "logits", 1)
    assert max(abs(a.p_yes - p) for a, (_, p) in zip(got, want)) < P_YES_TOLERANCE


@pytest.fixture(scope="module")
def question_first_dir(tmp_path_factory, tiny_dir):
    """The tiny model with a chat template that puts the question before the image."""
    from transformers import AutoProcessor

    out = tmp_path_factory.mktemp("question-first") / "m"
    shutil.copytree(tiny_dir, out)
    processor = AutoProcessor.from_pretrained(out)
    processor.chat_template = processor.chat_template.replace(
        "{% for item in message['content'] %}", "{% for item in message['content'] | reverse %}")
    processor.save_pretrained(out)
    return out


def test_prompts_that_diverge_before_the_image_fall_back(question_first_dir, sample):
    few = [it for group in by_image(sample)[:2] for it in group]
    b = backend(question_first_dir, "logits", "auto")
    prompt = b._prompts(few[:1])[0]
    assert prompt.index("<image>") > prompt.index(few[0].question)  # the template really is question-first
    got = [a for group in by_image(few) for a in b.answer(group)]
    want = [backend(question_first_dir, "logits", "off").answer([it])[0] for it in few]
    assert max(abs(a.p_yes - w.p_yes) for a, w in zip(got, want)) < P_YES_TOLERANCE
    assert b.stats()["per_image_batch_questions"] == len(few) and "shared_prefix_questions" not in b.stats()
    assert list(b.fallbacks) == ["the prompts diverge before the image ends (text before the image differs)"]
    with pytest.raises(BackendError, match="prefix_cache=on but the prompts diverge before the image"):
        backend(question_first_dir, "logits", "on").answer(by_image(few)[0])


def test_unverified_family_takes_the_per_image_batch(tiny_dir, sample, monkeypatch):
    import dataclasses

    family_of = hf.family_of
    monkeypatch.setattr(hf, "family_of", lambda config: dataclasses.replace(family_of(config),
                                                                            shared_prefix_verified=False))
    group = by_image(sample)[0]
    b = backend(tiny_dir, "logits", "auto")
    b.answer(group)
    assert b.stats() == {"per_image_batch_questions": len(group), "image_encodes": len(group),
                         "prefill_tokens": b.stats()["prefill_tokens"]}
    assert list(b.fallbacks) == ["the llava family is not verified for the shared-prefix path"]
    with pytest.raises(BackendError, match="prefix_cache=on but the llava family is not verified"):
        backend(tiny_dir, "logits", "on").answer(group)


def test_off_never_takes_the_shared_prefix(tiny_dir, sample):
    group = by_image(sample)[0]
    b = backend(tiny_dir, "generate", "off")
    b.answer(group)
    assert "shared_prefix_questions" not in b.stats() and not b.fallbacks


def test_mixed_batch_keeps_item_order(tiny_dir, sample):
    """Items of several images and tasks in one call: grouped per image inside, answered in the caller's order."""
    a, b2 = by_image(sample)[:2]
    mixed = [a[0], b2[0], a[1], b2[1]]
    mixed.append(Item(qid="d", image_id=a[0].image_id, image_path=a[0].image_path, prompt=PROMPTS.describe,
                      question="", task="describe", max_new_tokens=5))
    got = backend(tiny_dir, "logits", "on").answer(mixed)
    single = backend(tiny_dir, "logits", "off")
    want = [single.answer([it])[0] for it in mixed]
    assert [g.p_yes for g in got[:4]] == pytest.approx([w.p_yes for w in want[:4]], abs=P_YES_TOLERANCE)
    assert got[4].p_yes is None and got[4].response == want[4].response


def test_prefix_cache_is_validated_and_not_part_of_the_key(tiny_dir):
    from probmed.core.errors import ConfigError

    with pytest.raises(ConfigError, match="prefix_cache = 'sometimes'"):
        backend(tiny_dir, "logits", "sometimes")
    assert backend(tiny_dir, "logits", "on").fingerprint() == backend(tiny_dir, "logits", "off").fingerprint()
