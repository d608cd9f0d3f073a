"""Hugging Face backend: any AutoModelForImageTextToText checkpoint with its processor.

A hub id must come with a pinned `revision` (a result must name the exact
weights); a local directory is fingerprinted by the content of its weights, so
retraining a local model in place re-asks its questions. Checkpoints that ship
their own modelling code run only with `trust_remote_code: true` (and, from the
hub, a pinned revision, so the code that runs is the code that was reviewed).
Greedy decoding only. `mode: logits` reads P(yes) and P(no) at the first answer
position from a single forward pass instead of generating, summing over every
token that starts a "yes" / "no" (answer_tokens); descriptions
(`task="describe"`) are always generated.

The questions of one image are answered together, one of two ways (the path is
a speed detail, never part of an answer's key; `stats()` counts both and
`run_info()` records them with the run):
- shared prefix (`shared_prefix`): the image is decoded, preprocessed and
  encoded once, the prompt prefix it shares with the other questions (template
  text + image tokens) is prefilled once, and the question suffixes run in one
  pass from that KV cache. Used for the families whose answers on this path are
  proven equal to the per-question path (`Family.shared_prefix_verified`),
  unless `prefix_cache: off`;
- per-image batch: every question is a full prompt with its own copy of the
  image, padded into one batch (any other family, or a batch the shared path
  cannot take exactly).

What differs between model families (how images are passed, where image tokens
go, which processor loads without torchvision) lives in `families`; the prompt
for one question is `chat_prompt`, the processor inputs for a batch are
`encode`; both paths use both.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from probmed.core.errors import BackendError, ConfigError, MissingFileError
from probmed.core.params_schema import PositiveInt
from probmed.inference.models import shared_prefix
from probmed.inference.models.answer_tokens import AnswerTokens, answer_tokens
from probmed.inference.models.base import Answer, Backend, Item
from probmed.inference.models.config import BackendConfig, answer_field, run_field
from probmed.inference.models.families import GENERIC, Family, family_of, load_processor, processor_images
from probmed.inference.models.hub import is_hub_id, pin_problem
from probmed.infra.cpu_kernels import configure_torch

# auto: the shared-prefix path where the family is verified; on: the same, and an error where it cannot run
PREFIX_CACHE_MODES = ("auto", "on", "off")


@contextlib.contextmanager
def peft_quietly() -> Iterator[None]:
    """Wrap a model in peft without the FutureWarning peft's own code raises.

    peft 0.21 reads transformers' deprecated ``is_gradient_checkpointing`` inside
    ``PeftModel`` (transformers 5 warns); no argument of ours avoids it, so the
    one message is silenced here and nothing else.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning)
        yield


@dataclasses.dataclass(frozen=True, kw_only=True)
class HFConfig(BackendConfig):
    """The keys of a transformers checkpoint entry: what is answered (answer fields) and where it runs."""

    model_id: str = answer_field(hash_as="weights")  # hub id, or a local directory keyed by its content
    revision: str | None = answer_field(None)  # the commit sha a hub id is pinned to
    adapter: str | None = answer_field(None, hash_as="adapter")  # a LoRA directory, keyed by its content
    dtype: str = answer_field("float32")
    mode: str = answer_field("generate")  # generate | logits
    max_new_tokens: PositiveInt = answer_field(16)
    trust_remote_code: bool = answer_field(False, when_set=True)  # run the checkpoint's own modelling code
    device: str = run_field("cpu")  # cpu, cuda, or auto (device_map)
    threads: PositiveInt | None = run_field(None)  # torch CPU threads
    prefix_cache: str = run_field("auto")  # auto | on | off: the shared-prefix path (a speed detail, never a key)


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
    """A local transformers vision-language checkpoint, answering in generate or logit mode."""

    kind = "hf"
    config_class = HFConfig
    config: HFConfig  # built from config_class by Backend.__init__
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
        self.prefix_cache = self.config.prefix_cache
        if self.prefix_cache not in PREFIX_CACHE_MODES:
            raise ConfigError(f"models.{name}.prefix_cache = {self.prefix_cache!r}, expected one of {PREFIX_CACHE_MODES}")
        self.counters: Counter[str] = Counter()  # questions per path, image encodes, prefill tokens
        self.fallbacks: Counter[str] = Counter()  # why questions did not take the shared-prefix path
        self._model = None
        self._processor = None
        self.family: Family = GENERIC
        self.answer_tokens: AnswerTokens | None = None

    def run_info(self) -> dict[str, Any]:
        """How the run answered: the model family, the path each question took (with the reasons for any
        fallback), and in logit mode the counted token ids."""
        paths = {"prefix_cache": self.prefix_cache,
                 "questions_by_path": {p.replace("_", "-"): self.counters[f"{p}_questions"]
                                       for p in ("shared_prefix", "per_image_batch")
                                       if self.counters[f"{p}_questions"]}}
        taken = list(paths["questions_by_path"])
        paths["path"] = " + ".join(taken) if taken else "none (every answer was in the store)"
        if self.fallbacks:
            paths["fallbacks"] = dict(self.fallbacks)
        try:
            self.processor()  # a fully cached run never loaded it
        except BackendError as exc:  # the answers are safe in the store; say why the facts are missing
            return {"family": "unknown", **paths, "error": str(exc)}
        info: dict[str, Any] = {"family": self.family.name, **paths}
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

    def _require_local_directory(self) -> None:
        """A local model id that is not there yet (the default tiny model before its pretraining) is named with
        what builds it, instead of Hugging Face's complaint that it is no repository id."""
        if is_hub_id(self.model_id) or Path(self.model_id).exists():
            return
        raise BackendError(f"model {self.name}: local model directory {self.model_id} (models.{self.name}.model_id) "
                           "not found: run `probmed finetune --stage pretrain` (or dvc repro) to build the default "
                           "tiny model, or point model_id at a checkpoint")

    def processor(self):
        """The processor (and family, and in logit mode the answer tokens), without loading the weights."""
        if self._processor is not None:
            return self._processor
        from transformers import AutoConfig

        self._require_local_directory()
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
        configure_torch()  # the portable kernels' torch half, when `probmed` put them in force
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

            with peft_quietly():
                model = PeftModel.from_pretrained(model, self.adapter)
        model.eval()
        self._model = model
        return model, processor

    @property
    def device(self):
        model, _ = self.load()
        return next(model.parameters()).device

    # --- answering -------------------------------------------------------------

    def _image(self, item: Item):
        """The item's image, decoded and converted to RGB."""
        from PIL import Image

        if item.image_path is None:
            raise MissingFileError(f"image {item.image_id}: the question has no image path")
        try:
            with Image.open(item.image_path) as im:
                return im.convert("RGB")
        except (OSError, ValueError) as exc:
            raise MissingFileError(f"image {item.image_id}: cannot read {item.image_path}: {exc}") from None

    def _prompts(self, items: list[Item]) -> list[str]:
        return [chat_prompt(self.processor(), it.prompt, self.context.get("system_prompt")) for it in items]

    def _inputs(self, items: list[Item]):
        """Processor inputs for a per-image batch: every prompt with its own copy of its image, left padded."""
        model, processor = self.load()
        images: dict[str, Any] = {}
        for it in items:
            if str(it.image_path) not in images:
                images[str(it.image_path)] = self._image(it)
        batch = encode(processor, self.family, [images[str(it.image_path)] for it in items], self._prompts(items))
        return batch.to(self.device)

    def _answer(self, items: list[Item]) -> list[Answer]:
        out: list[Answer | None] = [None] * len(items)
        groups: dict[tuple[bool, int, str], list[int]] = {}
        for i, it in enumerate(items):
            generate = self.mode == "generate" or it.task != "answer"
            groups.setdefault((generate, it.max_new_tokens or self.max_new_tokens, str(it.image_path)), []).append(i)
        for (generate, max_new, _), idx in groups.items():
            answers = self._answer_image([items[i] for i in idx], generate, max_new)
            for i, a in zip(idx, answers):
                out[i] = a
        return [a for a in out if a is not None]

    def _answer_image(self, items: list[Item], generate: bool, max_new: int) -> list[Answer]:
        """The questions of one image: the shared-prefix path where it is verified and exact, else a per-image batch."""
        if self.prefix_cache != "off" and len(items) > 1:
            self.load()
            if self.family.shared_prefix_verified:
                try:
                    return self._shared_prefix(items, generate, max_new)
                except shared_prefix.PrefixUnsupported as exc:
                    reason = str(exc)
            else:
                reason = f"the {self.family.name} family is not verified for the shared-prefix path"
            if self.prefix_cache == "on":
                raise BackendError(f"model {self.name}: prefix_cache=on but {reason}")
            self.fallbacks[reason] += len(items)
        return self.generate(items, max_new) if generate else self.logits(items)

    def _shared_prefix(self, items: list[Item], generate: bool, max_new: int) -> list[Answer]:
        """One image decode, vision encode and prefix prefill; the question suffixes in one pass."""
        import torch

        model, processor = self.load()
        image = processor_images(self.family, [self._image(items[0])])
        encoded = shared_prefix.encode_image_once(processor, image, self._prompts(items))
        prefix_len = shared_prefix.plan(encoded)
        lengths = [len(x) for x in encoded.ids]
        t0 = time.perf_counter()
        with torch.no_grad():
            cache = shared_prefix.prefill(model, encoded, prefix_len, self.device)
            if generate or not shared_prefix.packs_suffixes(model):
                batch = shared_prefix.pad_suffixes(encoded, prefix_len, processor.tokenizer.pad_token_id, self.device)
                suffix_tokens = batch.suffix.numel()
                if generate:
                    new = shared_prefix.generate(model, batch, cache, max_new)
                else:
                    last = shared_prefix.padded_logits(model, batch, cache)
            else:
                last = shared_prefix.packed_logits(model, encoded, prefix_len, cache, self.device)
                suffix_tokens = sum(lengths) - prefix_len * len(lengths)
        dt = (time.perf_counter() - t0) / len(items)
        self._count("shared_prefix", len(items), encodes=1, prefill=prefix_len + suffix_tokens)
        return self._text_answers(new, lengths, dt) if generate else self._logit_answers(last, lengths, dt)

    def _count(self, path: str, questions: int, encodes: int, prefill: int) -> None:
        self.counters[f"{path}_questions"] += questions
        self.counters["image_encodes"] += encodes  # image preprocessing and vision tower runs
        self.counters["prefill_tokens"] += prefill  # prompt positions run through the language model

    def stats(self) -> dict[str, Any]:
        return dict(self.counters)

    def generate(self, items: list[Item], max_new_tokens: int | None = None) -> list[Answer]:
        """Greedy generation for a per-image batch; one Answer per item."""
        import torch

        model, _ = self.load()
        batch = self._inputs(items)
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**batch, max_new_tokens=max_new_tokens or self.max_new_tokens, do_sample=False)
        dt = (time.perf_counter() - t0) / len(items)
        self._count("per_image_batch", len(items), encodes=len(items), prefill=batch["input_ids"].numel())
        lengths = [int(m.sum()) for m in batch["attention_mask"]]
        return self._text_answers(out[:, batch["input_ids"].shape[1] :], lengths, dt)

    def _text_answers(self, new_tokens, prompt_lengths: list[int], dt: float) -> list[Answer]:
        """Decoded continuations, each cut at its first end-of-sequence or padding token."""
        tok = self.processor().tokenizer
        answers = []
        for row, length in zip(new_tokens, prompt_lengths):
            ids = row.tolist()
            n = len(ids)
            for j, t in enumerate(ids):
                if t == tok.eos_token_id or t == tok.pad_token_id:
                    n = j
                    break
            text = tok.decode(ids[:n], skip_special_tokens=True).strip()
            answers.append(Answer(response=text, latency_s=dt, prompt_tokens=length, completion_tokens=n))
        return answers

    def logits(self, items: list[Item]) -> list[Answer]:
        """P(yes) from one forward pass of a per-image batch: softmax at the first answer position."""
        import torch

        model, _ = self.load()
        batch = self._inputs(items)
        t0 = time.perf_counter()
        with torch.no_grad():
            last = model(**batch, logits_to_keep=1).logits[:, -1, :]
        dt = (time.perf_counter() - t0) / len(items)
        self._count("per_image_batch", len(items), encodes=len(items), prefill=batch["input_ids"].numel())
        return self._logit_answers(last, [int(m.sum()) for m in batch["attention_mask"]], dt)

    def _logit_answers(self, last_logits, prompt_lengths: list[int], dt: float) -> list[Answer]:
        """Every spelling of yes vs no at the first answer position -> P(yes) and a label."""
        assert self.answer_tokens is not None  # set by processor() in logit mode
        p_yes, p_y, p_n = yes_probability(last_logits, self.answer_tokens)
        return [
            Answer(
                response="",
                label="yes" if p >= 0.5 else "no",
                p_yes=float(p),
                latency_s=dt,
                prompt_tokens=length,
                extra={"p_yes_raw": float(a), "p_no_raw": float(b)},
            )
            for p, length, a, b in zip(p_yes.tolist(), prompt_lengths, p_y.tolist(), p_n.tolist())
        ]

    def close(self) -> None:
        self._model = None
        self._processor = None
