"""Helpers for the per-family tests: built models whose first answer token is a yes or a no."""

from __future__ import annotations

from pathlib import Path


def boost_answers(model_dir: Path, out_dir: Path, seed: int = 1) -> Path:
    """A copy of a random model whose output head favours every yes / no spelling over all other tokens.

    Opposite rows for the two answers: whichever side of the direction a hidden
    state falls on, a yes or a no spelling wins, so generation starts with an
    answer the parser reads and logit mode has something to agree with. All
    spellings of one answer get the same row, so the argmax spelling's answer is
    also the answer with the larger summed probability. Every other row is zero,
    so an answer wins even where a hidden state is nearly orthogonal to the direction.
    """
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    from probmed.inference.models.answer_tokens import answer_tokens
    from probmed.inference.models.families import load_processor

    config = AutoConfig.from_pretrained(model_dir)
    model = AutoModelForImageTextToText.from_pretrained(model_dir)
    processor = load_processor(str(model_dir), config.model_type)
    counted = answer_tokens(processor.tokenizer)
    head = model.get_output_embeddings().weight
    direction = torch.randn(head.shape[1], generator=torch.Generator().manual_seed(seed))
    direction = direction / direction.norm() * 40
    with torch.no_grad():
        head.zero_()
        head[list(counted.yes)] = direction
        head[list(counted.no)] = -direction
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
    return out_dir


def params_yaml(path: Path, family: str, model_dir: Path, work: Path, **model_extra) -> Path:
    """A params file with one HF model entry named after the family."""
    import yaml

    params = {
        "seed": 0,
        "model": family,
        "setting": "vanilla",
        "predict": {"store_dir": str(work / "answers"), "describe_dir": str(work / "descriptions"),
                    "out_dir": str(work / "predictions"), "fsync": False},
        "settings": {"describe_max_new_tokens": 6},
        "models": {family: {"backend": "hf", "model_id": str(model_dir), "dtype": "float32", "device": "cpu",
                            "mode": "generate", "max_new_tokens": 4, "threads": 1, **model_extra}},
    }
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path
