"""Hugging Face backend: any AutoModelForImageTextToText checkpoint with its processor.

A hub id must come with a pinned `revision` (a result must name the exact
weights); a local directory is fingerprinted by the content of its weights, so
retraining a local model in place re-asks its questions. Checkpoints that ship
their own modelling code run only with `trust_remote_code: true` (and, from the
hub, a pinned revision, so the code that runs is the code that was reviewed).
Greedy decoding only. The questions of one image are one batch (the image is
encoded once per row but loaded once). `mode: logits` reads P(yes) and P(no) at
the first answer position from a single forward pass instead of generating,
summing over every token that starts a "yes" / "no" (answer_tokens);
descriptions (`task="describe"`) are always generated.

What differs between model families (how images are passed, where image tokens
go, which processor loads without torchvision) lives in `families`; the prompt
for one question is `chat_prompt`, the processor inputs for a batch are
`encode`, so a shared-prefix path (prefill system text + image once per image)
can reuse both.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from probmed.core.errors import BackendError, ConfigError, MissingFileError
from probmed.inference.models.answer_tokens import AnswerTokens, answer_tokens
from probmed.inference.models.base import Answer, Backend, Item
from probmed.inference.models.config import BackendConfig, answer_field, run_field
from probmed.inference.models.families import GENERIC, Family, family_of, load_processor, processor_images
from probmed.inference.models.hub import pin_problem


@dataclasses.dataclass(frozen=True, kw_only=True)
class HFConfig(BackendConfig):
    model_id: str = answer_field(hash_as="weights")  # hub id, or a local directory keyed by its content
    revision: str | None = answer_field(None)  # the commit sha a hub id is pinned to
    adapter: str | None = answer_field(None, hash_as="adapter")  # a LoRA directory, keyed by its content
    dtype: str = answer_field("float32")
    mode: str = answer_field("generate")  # generate | logits
    max_new_tokens: int = answer_field(16)
    trust_remote_code: bool = answer_field(False, when_set=True)  # run the checkpoint's own modelling code
    device: str = run_field("cpu")  # cpu, cuda, or auto (device_map)
    threads: int | None = run_field(None)  # torch CPU threads


def yes_probability(logits, tokens: AnswerTokens):
    """P(yes | yes or no) per row of first-answer-position logits, with the raw yes / no masses."""
    import torch

    probs = torch.softmax(logits.float(), dim=-1)
    p_y = probs[:, list(tokens.yes)].sum(-1)
    p_n = probs[:, list(tokens.no)].sum(-1)
    return p_y / (p_y + p_n).clamp_min(1e-30), p_y, p_n


def chat_prompt(processor, text: str, system: str | None = None) -> str:
    """The prompt the model sees for one question about one image, rendered by its own chat template."""
    messages = []
    if system:
        messages.append({"role": "system", "content": [{"type": "text", "text": system}]})
    messages.append({"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]})
    return processor.apply_chat_template(messages, add_generation_prompt=True)


def encode(processor, family: Family, images: list[Any], prompts: list[str]):
    """Processor inputs for a batch of prompts, one image each (left padded: answers start in the last column)."""
    return processor(images=processor_images(family, images), text=prompts, padding=True, return_tensors="pt")


class HFBackend(Backend):
    kind = "hf"
    config_class = HFConfig
    sends_system_prompt = True

    def __init__(self, name, cfg, context=None):
        super().__init__(name, cfg, context)
        self.model_id = self.config.model_id
        self.local = Path(self.model_id).exists()
        self.revision = self.config.revision
        self.trust_remote_code = self.config.trust_remote_code
        problem = pin_problem(name, {"backend": self.kind, **cfg})
        if problem:
            raise ConfigError(problem)
        self.adapter = self.config.adapter
        if self.adapter and not Path(self.adapter).exists():
            raise ConfigError(f"models.{name}.adapter: directory {self.adapter} not found")
        self.mode = self.config.mode
        if self.mode not in ("generate", "logits"):
            raise ConfigError(f"models.{name}.mode = {self.mode!r}, expected 'generate' or 'logits'")
        self.max_new_tokens = self.config.max_new_tokens
        self._model = None
        self._processor = None
        self.family: Family = GENERIC
        self.answer_tokens: AnswerTokens | None = None

    def run_info(self) -> dict[str, Any]:
        """How the run answered: the model family, the prompt path, and in logit mode the counted token ids."""
        try:
            self.processor()  # a fully cached run never loaded it
        except BackendError as exc:  # the answers are safe in the store; say why the facts are missing
            return {"family": "unknown", "path": "per-question", "error": str(exc)}
        info: dict[str, Any] = {"family": self.family.name, "path": "per-question"}
        if self.answer_tokens is not None:
            info["answer_tokens"] = self.answer_tokens.record()
        return info

    # --- loading -------------------------------------------------------------

    def _hub_kwargs(self) -> dict[str, Any]:
        """What every from_pretrained call of this checkpoint needs: the pinned revision, the code opt-in."""
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        if self.revision:
            kwargs["revision"] = self.revision
        return kwargs

    def _load_error(self, exc: Exception) -> BackendError:
        hint = ""
        if "trust_remote_code" in str(exc) and not self.trust_remote_code:
            hint = (f" (the checkpoint ships its own code: it runs only with "
                    f"models.{self.name}.trust_remote_code=true and a pinned revision)")
        return BackendError(f"model {self.name}: cannot load {self.model_id!r}: {exc}{hint}")

    def processor(self):
        """The processor (and family, and in logit mode the answer tokens), without loading the weights."""
        if self._processor is not None:
            return self._processor
        from transformers import AutoConfig

        try:
            config = AutoConfig.from_pretrained(self.model_id, **self._hub_kwargs())
            processor = load_processor(self.model_id, config.model_type, **self._hub_kwargs())
        except (OSError, ValueError) as exc:
            raise self._load_error(exc) from None
        self.family = family_of(config)
        tok = processor.tokenizer
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        if self.mode == "logits":
            self.answer_tokens = answer_tokens(tok)
        self._processor = processor
        return processor

    def load(self):
        if self._model is not None:
            return self._model, self._processor
        import torch
        from transformers import AutoModelForImageTextToText

        processor = self.processor()
        dtype_name = self.config.dtype
        dtype = "auto" if dtype_name == "auto" else getattr(torch, dtype_name, None)
        if dtype is None:
            raise ConfigError(f"models.{self.name}.dtype = {dtype_name!r} is not a torch dtype")
        device = self.config.device
        threads = self.config.threads
        if threads:  # on a shared CPU, oversubscribed intra-op threads stall for seconds per call
            torch.set_num_threads(int(threads))
        kwargs: dict[str, Any] = {"dtype": dtype, **self._hub_kwargs()}
        if device == "auto":
            kwargs["device_map"] = "auto"
        try:
            model = AutoModelForImageTextToText.from_pretrained(self.model_id, **kwargs)
        except (OSError, ValueError) as exc:
            raise self._load_error(exc) from None
        if device != "auto":
            model = model.to(device)
        if self.adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, self.adapter)
        model.eval()
        self._model = model
        return model, processor

    @property
    def device(self):
        model, _ = self.load()
        return next(model.parameters()).device

    # --- answering -------------------------------------------------------------

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
        system = self.context.get("system_prompt")
        prompts = [chat_prompt(processor, it.prompt, system) for it in items]
        batch = encode(processor, self.family, [images[str(it.image_path)] for it in items], prompts)
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
        assert self.answer_tokens is not None  # set by load() in logit mode
        p_yes_t, p_y, p_n = yes_probability(logits, self.answer_tokens)
        p_yes = p_yes_t.tolist()
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
