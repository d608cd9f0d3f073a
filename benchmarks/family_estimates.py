"""Memory and speed facts per model family: measured image tokens, estimated GPU questions/s.

No GPU and no real weights here, so the speeds are estimates, derived from the
prefix accounting of a ProbMed evaluation:

- image tokens per image are *measured*: each family's real processor class with
  the real checkpoint's image geometry (patch size, tiles, resolution limits)
  runs on a sample of the ProbMed source images (ChestX-ray14 1024 px
  radiographs, MedICaT figures) from ../shared/data;
- per question (one prompt per question, the image encoded per row; the path of unverified families):
  vision FLOPs + 2 * N_lm * (prefix text + image tokens + question suffix);
- shared prefix (the HF backend's path for verified families: vision encode and prefill of
  system text + image tokens once per image, then the question suffix only):
  (vision + prefix prefill) / questions per image + 2 * N_lm * suffix;
- throughput: one A100-80GB at 40% of its 312 TFLOP/s bf16 peak (prefill is
  compute-bound); logit mode (one forward pass, no decoding). Generation adds
  about one weight read per new token and step (batch = one image's questions).

    python benchmarks/family_estimates.py [--data ../shared/data] [--images 6] [--quick]

--quick: one image per source and two families (one of fixed geometry, one measured by its processor).
"""

from __future__ import annotations

import argparse
import os
import statistics
import warnings
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

RELEASE_QUESTIONS, RELEASE_IMAGES = 57_132, 6_303  # the ProbMed release (paper, section 3)
EFFECTIVE_FLOPS = 0.40 * 312e12  # A100 bf16 dense peak at 40% utilisation
PREFIX_TEXT, SUFFIX_TEXT = 20, 35  # tokens: system/role header; question + instruction + assistant header


@dataclass(frozen=True)
class Spec:
    """One family's real checkpoint sizes, the inputs of its FLOP and memory estimates."""

    family: str
    checkpoint: str  # the registry model whose geometry and sizes these are
    lm_params: float  # language model parameters (the per-token prefill cost)
    total_params: float  # everything loaded (bf16 memory = 2 bytes each)
    vision_params: float
    vision_positions: str  # how many patches the vision tower sees per image, as a function name below


SPECS = (
    Spec("llava", "llava-1.5 / llava-med (LLaVA-1.5 7B, Mistral-7B)", 6.74e9, 7.06e9, 0.30e9, "per_image_token"),
    Spec("llava-next", "llava-1.6 (LLaVA-NeXT Mistral-7B)", 7.24e9, 7.57e9, 0.30e9, "per_image_token"),
    Spec("llava-onevision", "LLaVA-OneVision-Qwen2-7B", 7.62e9, 8.03e9, 0.40e9, "per_image_token"),
    Spec("qwen2.5-vl", "qwen2.5-vl-7b / lingshu-7b / huatuogpt-vision-7b (qwen2-vl: same sizes)", 7.62e9, 8.29e9,
         0.67e9, "four_per_token"),
    Spec("gemma3", "medgemma-4b (Gemma 3 4B)", 3.88e9, 4.30e9, 0.42e9, "gemma"),
    Spec("idefics3", "Idefics3-8B-Llama3", 8.03e9, 8.46e9, 0.43e9, "four_per_token"),
    Spec("mllama", "Llama-3.2-11B-Vision (cross-attention)", 9.78e9, 10.67e9, 0.85e9, "mllama"),
)


def real_geometry_processor(family: str):
    """The family's processor class with the real checkpoint's image settings and a stand-in tokenizer."""
    import transformers

    from probmed.inference.models import tiny_families as tf
    from probmed.inference.models.families import image_only

    if family == "llava":
        return None  # fixed: 336 px / 14 px patches = 576 tokens
    if family == "llava-next":
        tok = tf.build_bpe_tokenizer(tf.LLAMA2_TOKENS)
        return transformers.LlavaNextProcessor(image_processor=transformers.LlavaNextImageProcessorPil(
            size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}), tokenizer=tok, patch_size=14,
            vision_feature_select_strategy="default", chat_template=tf.MISTRAL_TEMPLATE)
    if family == "llava-onevision":
        tok = tf.build_bpe_tokenizer(tf.ONEVISION_TOKENS)
        return image_only(transformers.LlavaOnevisionProcessor)(
            image_processor=transformers.LlavaOnevisionImageProcessorPil(), tokenizer=tok, num_image_tokens=729,
            vision_feature_select_strategy="full", chat_template=tf.ONEVISION_TEMPLATE)
    if family == "qwen2.5-vl":
        tok = tf.build_bpe_tokenizer(tf.QWEN_TOKENS)
        images = transformers.Qwen2VLImageProcessorPil(min_pixels=3136, max_pixels=12845056)
        return image_only(transformers.Qwen2_5_VLProcessor)(image_processor=images, tokenizer=tok,
                                                             chat_template=tf.QWEN_TEMPLATE)
    if family == "idefics3":
        tok = tf.build_bpe_tokenizer(tf._idefics_tokens("<|begin_of_text|>"))
        return transformers.Idefics3Processor(image_processor=transformers.Idefics3ImageProcessorPil(),
                                              tokenizer=tok, image_seq_len=169, chat_template=tf.IDEFICS3_TEMPLATE)
    return None  # gemma3: 256 fixed; mllama: one placeholder, cross-attention over the tiles


def image_tokens(family: str, processor, image) -> int:
    """Tokens the language model reads for one image (placeholders expanded)."""
    from probmed.inference.models.families import FAMILIES
    from probmed.inference.models.hf import chat_prompt, encode

    fixed = {"llava": 576, "gemma3": 256, "mllama": 1}
    if family in fixed:
        return fixed[family]
    prompt = chat_prompt(processor, "Is this a CT scan?")
    fam = FAMILIES["qwen2.5-vl" if family == "qwen2.5-vl" else family]
    ids = encode(processor, fam, [image], [prompt])["input_ids"][0].tolist()
    token = processor.image_token if hasattr(processor, "image_token") else "<image>"
    return ids.count(processor.tokenizer.convert_tokens_to_ids(token))


def vision_positions(spec: Spec, n_tokens: float) -> float:
    """Patches the vision tower runs over for one image."""
    if spec.vision_positions == "four_per_token":  # 2x2 merge (Qwen) / pixel shuffle by 2 (Idefics3)
        return 4 * n_tokens
    if spec.vision_positions == "gemma":
        return 4096  # 896 px / 14 px, pooled 4x4 to 256 tokens
    if spec.vision_positions == "mllama":
        return 4 * 1601  # up to 4 tiles of 560 px / 14 px (+1 class token each)
    return n_tokens


def estimate(spec: Spec, n_tokens: float) -> dict[str, float]:
    per_image_q = RELEASE_QUESTIONS / RELEASE_IMAGES
    vision = 2 * spec.vision_params * vision_positions(spec, n_tokens)
    prefix = PREFIX_TEXT + n_tokens
    per_question = vision + 2 * spec.lm_params * (prefix + SUFFIX_TEXT)
    shared = (vision + 2 * spec.lm_params * prefix) / per_image_q + 2 * spec.lm_params * SUFFIX_TEXT
    qps_now, qps_shared = EFFECTIVE_FLOPS / per_question, EFFECTIVE_FLOPS / shared
    return {"qps_now": qps_now, "qps_shared": qps_shared, "hours_now": RELEASE_QUESTIONS / qps_now / 3600,
            "hours_shared": RELEASE_QUESTIONS / qps_shared / 3600}


QUICK_FAMILIES = ("llava", "qwen2.5-vl")


def sample_images(data: Path, n: int) -> list[Path]:
    cxr = sorted((data / "chestxray14" / "images").glob("*.png"))[:n]
    medicat = sorted((data / "medicat-sample" / "figures").glob("*.*"))[:n]
    return cxr + medicat


def main() -> None:
    from PIL import Image

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--images", type=int, default=6, help="images per source (ChestX-ray14, MedICaT)")
    ap.add_argument("--quick", action="store_true", help=f"one image per source, families {QUICK_FAMILIES}")
    args = ap.parse_args()
    if args.quick:
        args.images = 1
    specs = [s for s in SPECS if s.family in QUICK_FAMILIES] if args.quick else list(SPECS)
    paths = sample_images(Path(args.data), args.images)
    images = [Image.open(p).convert("RGB") for p in paths]
    print(f"{len(images)} images ({args.images} ChestX-ray14, {args.images} MedICaT); A100 at 40% of bf16 peak; "
          f"{RELEASE_QUESTIONS:,} questions on {RELEASE_IMAGES:,} images\n")
    print("| family | checkpoint | params | bf16 weights | image tokens (CXR / MedICaT) | q/s now | q/s shared prefix "
          "| release now | release shared |")
    print("|---|---|---|---|---|---|---|---|---|")
    for spec in specs:
        processor = real_geometry_processor(spec.family)
        counts = [image_tokens(spec.family, processor, im) for im in images]
        cxr, med = statistics.mean(counts[: args.images]), statistics.mean(counts[args.images:])
        est = estimate(spec, statistics.mean(counts))
        print(f"| {spec.family} | {spec.checkpoint} | {spec.total_params / 1e9:.2f}B | "
              f"{2 * spec.total_params / 1e9:.1f} GB | {cxr:,.0f} / {med:,.0f} | {est['qps_now']:.1f} | "
              f"{est['qps_shared']:.1f} | {est['hours_now']:.1f} h | {est['hours_shared']:.2f} h |")


if __name__ == "__main__":
    main()
