"""A tiny LLaVA-architecture model built offline from configs.

There is no model hub here, yet every code path that touches a real vision-
language model (generation, logit mode, LoRA, `transformers serve`, fine-tuning)
needs one. This builds a ~100k-parameter LlavaForConditionalGeneration (tiny
CLIP vision tower + tiny Llama language model) with a word-level tokenizer
trained in-process and a LlavaProcessor with a small chat template, saved so the
Auto classes load it like any hub checkpoint. Untrained it answers noise; the
fine-tuning stage teaches it yes/no.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from probmed.core import vocab

IMAGE_SIZE = 32
PATCH_SIZE = 8
HIDDEN = 48
SPECIAL_TOKENS = ("<pad>", "<unk>", "<s>", "</s>", "<image>")

# Plain text the word-level vocabulary is trained on: the words the question
# generator, the prompts and the answers use. Anything else maps to <unk>.
BASE_CORPUS: tuple[str, ...] = (
    "yes no Yes No . , ? ! : ; ' \" ( ) - / the answer is not a an of in on at to with and or this that these",
    "user assistant system Answer with a single word yes or no Question Description Describe image",
    "Is Are Does Do Can there any evidence sign signs shown seen visible present image scan picture photo",
    "is are does do can which what where how show shows showing appear appears located location",
    "x-ray X-ray ct CT scan MRI mri ultrasound radiograph chest abdomen brain spine head lung lungs heart",
    "left right bilateral central upper middle lower zone lobe side both field fields hemithorax",
    "abnormality abnormal normal finding findings condition disease lesion patient organ modality",
    "Atelectasis Effusion Cardiomegaly Infiltrate Infiltration Pneumonia Pneumothorax Mass Nodule",
    "Consolidation Edema Emphysema Fibrosis Pleural Thickening Hernia pleural effusion thickening",
    "fracture tumor hemorrhage infarct stroke cyst calcification obstruction free air fluid enlarged",
    "kidney liver spleen bowel colon stomach pancreas gallbladder bladder vertebra vertebral disc cord",
    "it I cannot determine from consult radiologist sorry unable think see looks like likely",
)


def _corpus_words(extra: Iterable[str]) -> list[str]:
    lines = list(BASE_CORPUS)
    lines += [" ".join(vocab.MODALITY_QUESTION_NAMES.values()), " ".join(vocab.ORGAN_QUESTION_NAMES.values())]
    lines += list(extra)
    return lines


CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'] }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image> "
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tokenizer(corpus: Iterable[str] = ()):
    """A lower-cased word-level tokenizer over the corpus, wrapped for transformers."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=list(SPECIAL_TOKENS), min_frequency=1)
    tok.train_from_iterator(_corpus_words(corpus), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        extra_special_tokens={"image_token": "<image>"},
        padding_side="left",
    )
    return fast


def build_tiny_llava(out_dir: str | Path, seed: int = 0, corpus: Iterable[str] = ()) -> Path:
    """Build, save and return the directory of a tiny LLaVA (model + processor).

    Deterministic for a given seed and corpus; loadable with
    AutoModelForImageTextToText / AutoProcessor and servable by `transformers serve`.
    `corpus` adds words (e.g. the question texts) to the tokenizer vocabulary.
    """
    import torch
    from transformers import (
        CLIPImageProcessorPil,
        CLIPVisionConfig,
        GenerationConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(corpus)
    image_token_id = tokenizer.convert_tokens_to_ids("<image>")
    vision = CLIPVisionConfig(
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=IMAGE_SIZE,
        patch_size=PATCH_SIZE,
        projection_dim=HIDDEN,
        num_channels=3,
    )
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        intermediate_size=2 * HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    n_patches = (IMAGE_SIZE // PATCH_SIZE) ** 2
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=image_token_id,
        image_seq_length=n_patches,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        model = LlavaForConditionalGeneration(config)
    finally:
        torch.random.set_rng_state(state)
    model.eval()
    model.generation_config = GenerationConfig(
        do_sample=False,
        max_new_tokens=16,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_center_crop=True,
        do_convert_rgb=True,
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE,
        image_token="<image>",
        num_additional_image_tokens=1,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())
