"""What differs between vision-language model families when the HF backend runs them.

The backend speaks one protocol (chat messages -> processor -> model) to every
`AutoModelForImageTextToText` checkpoint; the differences it must know live
here, keyed by the checkpoint's `config.model_type`:

- how the processor wants images (one flat list, or one list per prompt);
- whether the prompt puts the image before the question text, so every question
  about one image shares a prefix (system text + image tokens) that a
  shared-prefix KV cache computes once (`shared_prefix`); that path is used only
  for families whose answers on it are proven equal to the per-question path
  (`shared_prefix_verified`: tests/inference/models/test_shared_prefix.py);
- how image tokens reach the language model (expanded placeholder tokens, or
  cross-attention with one placeholder: Mllama), and whether positions are
  multimodal (Qwen's M-RoPE: 3-D position ids computed from `image_grid_thw`).

`load_processor` also works around a transformers limitation: processors that
accept a video processor (Qwen2-VL, Qwen2.5-VL, LLaVA-OneVision, SmolVLM) cannot
be constructed without torchvision, which this project does not install; image
questions never need it, so they are loaded image-only.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Family:
    """Runtime facts of one model family."""

    name: str
    model_types: tuple[str, ...]
    nested_images: bool = False  # processor takes [[img], [img], ...]: one list per prompt
    image_first: bool = True  # the chat template renders the image before the question text
    image_tokens: str = "expanded"  # "expanded": N placeholder tokens in the prompt | "cross-attention"
    positions: str = "1d"  # "mrope": 3-D multimodal rotary positions (Qwen2-VL family)
    shared_prefix_verified: bool = False  # set when the shared-prefix path is proven equal on this family


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("llava", ("llava",), shared_prefix_verified=True),
        Family("llava-next", ("llava_next",)),
        Family("llava-onevision", ("llava_onevision",), shared_prefix_verified=True),
        Family("qwen2-vl", ("qwen2_vl",), positions="mrope"),
        Family("qwen2.5-vl", ("qwen2_5_vl",), positions="mrope"),
        Family("gemma3", ("gemma3",), nested_images=True),
        Family("idefics3", ("idefics3",), nested_images=True, shared_prefix_verified=True),
        Family("smolvlm", ("smolvlm",), nested_images=True),
        Family("mllama", ("mllama",), nested_images=True, image_tokens="cross-attention"),
    )
}
GENERIC = Family("other", ())


def family_of(config: Any) -> Family:
    """The family of a loaded model's config (unknown architectures run with the generic defaults)."""
    model_type = str(getattr(config, "model_type", ""))
    for fam in FAMILIES.values():
        if model_type in fam.model_types:
            return fam
    return GENERIC


def processor_images(family: Family, images: list[Any]) -> list[Any]:
    """The images argument for a batch of prompts that each show one image."""
    return [[im] for im in images] if family.nested_images else list(images)


@functools.cache
def image_only(cls: type[Any]) -> type[Any]:
    """`cls` without its video processor argument.

    Same class name (a saved processor stays loadable by AutoProcessor) and the
    same other arguments, spelled out in a generated `__init__`: transformers
    reads a processor's argument names from its `__init__` code to save and load it.
    """
    signature = inspect.signature(cls.__init__)
    if "video_processor" not in signature.parameters:
        return cls
    names = [p.name for p in list(signature.parameters.values())[1:]
             if p.kind is p.POSITIONAL_OR_KEYWORD and p.name != "video_processor"]
    defaults = {n: signature.parameters[n].default for n in names}
    args = ", ".join(f"{n}=_defaults[{n!r}]" for n in names)
    passed = ", ".join(f"{n}={n}" for n in names)
    source = f"def __init__(self, {args}, **kwargs):\n    _cls.__init__(self, video_processor=None, {passed}, **kwargs)\n"
    namespace: dict[str, Any] = {"_cls": cls, "_defaults": defaults}
    exec(compile(source, f"<image-only {cls.__name__}>", "exec"), namespace)  # noqa: S102 - generated from a signature
    return type(cls.__name__, (cls,), {"__init__": namespace["__init__"], "__module__": cls.__module__,
                                        "__doc__": cls.__doc__})


def load_processor(model_id: str, model_type: str, **kwargs: Any):
    """AutoProcessor, or the image-only variant of the family's processor when torchvision is missing."""
    import transformers
    from transformers import AutoProcessor
    from transformers.models.auto.processing_auto import PROCESSOR_MAPPING_NAMES
    from transformers.utils import is_torchvision_available

    name = PROCESSOR_MAPPING_NAMES.get(model_type)
    cls = getattr(transformers, name, None) if isinstance(name, str) else None
    if cls is not None and not is_torchvision_available() and image_only(cls) is not cls:
        return image_only(cls).from_pretrained(model_id, **kwargs)
    return AutoProcessor.from_pretrained(model_id, **kwargs)
