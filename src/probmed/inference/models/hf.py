"""Hugging Face backend: any AutoModelForImageTextToText checkpoint with its processor.

A hub id must come with a pinned `revision` (a result must name the exact
weights); a local directory is fingerprinted by the content of its weights, so
retraining a local model in place re-asks its questions. Greedy decoding only.
The questions of one image are one batch (the image is encoded once per row
but loaded once). `mode: logits` reads P(yes) and P(no) at the first answer
position from a single forward pass instead of generating; descriptions
(`task="describe"`) are always generated.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

from probmed.core.errors import BackendError, ConfigError, MissingFileError
from probmed.inference.models.base import Answer, Backend, Item

YES_WORDS = ("yes", "Yes", "YES", " yes", " Yes")
NO_WORDS = ("no", "No", "NO", " no", " No")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".json", ".jinja", ".model", ".txt")


def directory_fingerprint(path: Path) -> str:
    """Content hash of a model or adapter directory (weights, configs, tokenizer)."""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _WEIGHT_SUFFIXES):
        h.update(str(f.relative_to(path)).encode())
        size = f.stat().st_size
        h.update(str(size).encode())
        with open(f, "rb") as fh:
            if size <= 512 * 1024 * 1024:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            else:  # multi-GB shards: size plus head and tail
                h.update(fh.read(1 << 20))
                fh.seek(-(1 << 20), 2)
                h.update(fh.read(1 << 20))
    return h.hexdigest()


def answer_token_ids(tokenizer, words: tuple[str, ...]) -> list[int]:
    """Ids of the single tokens that begin the given spellings of one answer word."""
    ids: set[int] = set()
    target = words[0].strip().lower()
    for w in words:
        enc = tokenizer.encode(w, add_special_tokens=False)
        if enc and tokenizer.decode([enc[0]]).strip().lower() == target:
            ids.add(int(enc[0]))
    if not ids:
        raise BackendError(f"the tokenizer has no single token for {target!r}; logit mode is unavailable")
    return sorted(ids)


class HFBackend(Backend):
    kind = "hf"

    def __init__(self, name, cfg, context=None):
        super().__init__(name, cfg, context)
        model_id = cfg.get("model_id")
        if not model_id:
            raise ConfigError(f"models.{name}.model_id is required")
        self.model_id = str(model_id)
        self.local = Path(self.model_id).exists()
        self.revision = cfg.get("revision")
        if not self.local and not self.revision:
            raise ConfigError(
                f"models.{name}: {self.model_id!r} is not a local directory, and a hub id needs a pinned "
                f"models.{name}.revision (a commit sha)"
            )
        self.adapter = cfg.get("adapter")
        if self.adapter and not Path(self.adapter).exists():
            raise ConfigError(f"models.{name}.adapter: directory {self.adapter} not found")
        self.mode = cfg.get("mode", "generate")
        if self.mode not in ("generate", "logits"):
            raise ConfigError(f"models.{name}.mode = {self.mode!r}, expected 'generate' or 'logits'")
        self.max_new_tokens = int(cfg.get("max_new_tokens", 16))
        self._model = None
        self._processor = None
        self._yes_ids: list[int] = []
        self._no_ids: list[int] = []
        self._fp: dict[str, Any] | None = None

    def fingerprint(self) -> dict[str, Any]:
        if self._fp is None:
            fp = {
                "backend": self.kind,
                "model_id": self.model_id,
                "revision": self.revision,
                "adapter": None,
                "dtype": str(self.cfg.get("dtype", "float32")),
                "mode": self.mode,
                "max_new_tokens": self.max_new_tokens,
                "system_prompt": self.context.get("system_prompt"),
            }
            if self.local:
                fp["weights"] = directory_fingerprint(Path(self.model_id))
            if self.adapter:
                fp["adapter"] = directory_fingerprint(Path(self.adapter))
            self._fp = fp
        return self._fp

    # --- loading -------------------------------------------------------------

    def load(self):
        if self._model is not None:
            return self._model, self._processor
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        dtype_name = str(self.cfg.get("dtype", "float32"))
        dtype = "auto" if dtype_name == "auto" else getattr(torch, dtype_name, None)
        if dtype is None:
            raise ConfigError(f"models.{self.name}.dtype = {dtype_name!r} is not a torch dtype")
        device = str(self.cfg.get("device", "cpu"))
        threads = self.cfg.get("threads")
        if threads:  # on a shared CPU, oversubscribed intra-op threads stall for seconds per call
            torch.set_num_threads(int(threads))
        kwargs: dict[str, Any] = {"dtype": dtype}
        if self.revision:
            kwargs["revision"] = self.revision
        if device == "auto":
            kwargs["device_map"] = "auto"
        try:
            model = AutoModelForImageTextToText.from_pretrained(self.model_id, **kwargs)
            processor = AutoProcessor.from_pretrained(self.model_id, **({"revision": self.revision} if self.revision else {}))
        except (OSError, ValueError) as exc:
            raise BackendError(f"model {self.name}: cannot load {self.model_id!r}: {exc}") from None
        if device != "auto":
            model = model.to(device)
        if self.adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.adapter)
        model.eval()
        tok = processor.tokenizer
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        self._model, self._processor = model, processor
        if self.mode == "logits":
            self._yes_ids = answer_token_ids(tok, YES_WORDS)
            self._no_ids = answer_token_ids(tok, NO_WORDS)
        return model, processor

    @property
    def device(self):
        model, _ = self.load()
        return next(model.parameters()).device

    # --- answering -------------------------------------------------------------

    def _prompt(self, processor, text: str) -> str:
        messages = []
        system = self.context.get("system_prompt")
        if system:
            messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
        messages.append({"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]})
        return processor.apply_chat_template(messages, add_generation_prompt=True)

    def _inputs(self, items: list[Item]):
        from PIL import Image

        model, processor = self.load()
        images = {}
        for it in items:
            key = str(it.image_path)
            if key not in images:
                try:
                    with Image.open(it.image_path) as im:
                        images[key] = im.convert("RGB")
                except (OSError, ValueError) as exc:
                    raise MissingFileError(f"image {it.image_id}: cannot read {it.image_path}: {exc}") from None
        prompts = [self._prompt(processor, it.prompt) for it in items]
        batch = processor(
            images=[images[str(it.image_path)] for it in items], text=prompts, padding=True, return_tensors="pt"
        )
        return batch.to(self.device)

    def _answer(self, items: list[Item]) -> list[Answer]:
        out: list[Answer | None] = [None] * len(items)
        groups: dict[tuple[bool, int], list[int]] = {}
        for i, it in enumerate(items):
            generate = self.mode == "generate" or it.task != "answer"
            groups.setdefault((generate, it.max_new_tokens or self.max_new_tokens), []).append(i)
        for (generate, max_new), idx in groups.items():
            sub = [items[i] for i in idx]
            answers = self.generate(sub, max_new) if generate else self.logits(sub)
            for i, a in zip(idx, answers):
                out[i] = a
        return [a for a in out if a is not None]

    def generate(self, items: list[Item], max_new_tokens: int | None = None) -> list[Answer]:
        """Greedy generation for a batch; one Answer per item."""
        import torch

        model, processor = self.load()
        batch = self._inputs(items)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=max_new_tokens or self.max_new_tokens, do_sample=False)
        dt = (time.perf_counter() - t0) / len(items)
        new = out[:, batch["input_ids"].shape[1] :]
        tok = processor.tokenizer
        answers = []
        for row, mask in zip(new, batch["attention_mask"]):
            ids = row.tolist()
            n = len(ids)
            for j, t in enumerate(ids):
                if t == tok.eos_token_id or t == tok.pad_token_id:
                    n = j
                    break
            text = tok.decode(ids[:n], skip_special_tokens=True).strip()
            answers.append(
                Answer(response=text, latency_s=dt, prompt_tokens=int(mask.sum()), completion_tokens=n)
            )
        return answers

    def logits(self, items: list[Item]) -> list[Answer]:
        """P(yes) from one forward pass: softmax at the first answer position, yes vs no spellings."""
        import torch

        model, _ = self.load()
        batch = self._inputs(items)
        t0 = time.perf_counter()
        with torch.no_grad():
            logits = model(**batch).logits[:, -1, :].float()
        probs = torch.softmax(logits, dim=-1)
        p_y = probs[:, self._yes_ids].sum(-1)
        p_n = probs[:, self._no_ids].sum(-1)
        p_yes = (p_y / (p_y + p_n).clamp_min(1e-30)).tolist()
        dt = (time.perf_counter() - t0) / len(items)
        return [
            Answer(
                response="",
                label="yes" if p >= 0.5 else "no",
                p_yes=float(p),
                latency_s=dt,
                prompt_tokens=int(m.sum()),
                extra={"p_yes_raw": float(a), "p_no_raw": float(b)},
            )
            for p, m, a, b in zip(p_yes, batch["attention_mask"], p_y.tolist(), p_n.tolist())
        ]

    def close(self) -> None:
        self._model = None
        self._processor = None
