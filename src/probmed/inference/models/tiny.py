"""A tiny LLaVA-architecture model built offline from configs.

There is no model hub here, yet every code path that touches a real vision-
language model (generation, logit mode, LoRA, `transformers serve`, fine-tuning)
needs one. This builds a ~100k-parameter LlavaForConditionalGeneration (tiny
CLIP vision tower + tiny Llama language model) with a word-level tokenizer
trained in-process and a LlavaProcessor with a small chat template, saved so the
Auto classes load it like any hub checkpoint. Untrained it answers noise; the
fine-tuning stage teaches it yes/no.

`REALISTIC` is the same architecture with LLaVA-1.5's token geometry (336 px
images, 14 px patches: 576 image tokens before the question) and a small
language model, so the split of a prompt into a shared image prefix and a
per-question suffix, and so the cost of each, is that of the real model
(benchmarks/predict_speed.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from probmed.core import vocab


@dataclass(frozen=True)
class LlavaGeometry:
    """Sizes of a LLaVA built from config: the image grid, the vision tower, the language model."""

    image_size: int = 32
    patch_size: int = 8
    vision_hidden: int = 48
    vision_layers: int = 2
    hidden: int = 48
    layers: int = 2
    heads: int = 2
    intermediate: int = 96

    @property
    def image_tokens(self) -> int:
        return (self.image_size // self.patch_size) ** 2


TINY = LlavaGeometry()
# LLaVA-1.5's token geometry: CLIP ViT-L/14 at 336 px, so 576 image tokens before the question. The vision
# tower and language model are a few narrow layers so it runs on a CPU, in LLaVA-1.5-7B's proportions where they
# decide the prefix/suffix split: the vision tower costs about a tenth of the prefill (a few percent in 7B), and
# the output layer over the (word-level) vocabulary a few percent of a token (2% in 7B, over 32,064 words).
REALISTIC = LlavaGeometry(image_size=336, patch_size=14, vision_hidden=128, vision_layers=2, hidden=256, layers=4,
                          heads=4, intermediate=688)

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


def build_tiny_llava(
    out_dir: str | Path, seed: int = 0, corpus: Iterable[str] = (), geometry: LlavaGeometry = TINY
) -> Path:
    """Build, save and return the directory of a tiny LLaVA (model + processor).

    Deterministic for a given seed, corpus and geometry; loadable with
    AutoModelForImageTextToText / AutoProcessor and servable by `transformers serve`.
    `corpus` adds words (e.g. the question texts) to the tokenizer vocabulary.
    """
    import torch
    from transformers import GenerationConfig, LlavaForConditionalGeneration

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(corpus)
    config = tiny_llava_config(tokenizer, geometry)
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
    model.save_pretrained(out)
    tiny_processor(tokenizer, geometry).save_pretrained(out)
    return out


def tiny_llava_config(tokenizer, g: LlavaGeometry = TINY):
    """A LlavaConfig over a tiny CLIP vision tower and a tiny Llama, sized to the tokenizer and the geometry."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    vision = CLIPVisionConfig(
        hidden_size=g.vision_hidden,
        intermediate_size=2 * g.vision_hidden,
        num_hidden_layers=g.vision_layers,
        num_attention_heads=2,
        image_size=g.image_size,
        patch_size=g.patch_size,
        projection_dim=g.vision_hidden,
        num_channels=3,
    )
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=g.hidden,
        intermediate_size=g.intermediate,
        num_hidden_layers=g.layers,
        num_attention_heads=g.heads,
        num_key_value_heads=g.heads,
        max_position_embeddings=max(512, 2 * g.image_tokens),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        tie_word_embeddings=False,
    )
    return LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_seq_length=g.image_tokens,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )


def tiny_processor(tokenizer, g: LlavaGeometry = TINY):
    """The LlavaProcessor of the tiny model: CLIP preprocessing at the geometry's image size and a small chat template."""
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    image_processor = CLIPImageProcessorPil(
        size={"shortest_edge": g.image_size},
        crop_size={"height": g.image_size, "width": g.image_size},
        do_center_crop=True,
        do_convert_rgb=True,
    )
    return LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=g.patch_size,
        vision_feature_select_strategy="default",
        chat_template=CHAT_TEMPLATE,
        image_token="<image>",
        num_additional_image_tokens=1,
    )


def count_parameters(model) -> int:
    """All parameters of a model, trainable or not (the tiny model's size is checked against it)."""
    return sum(p.numel() for p in model.parameters())
