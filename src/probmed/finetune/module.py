"""The Lightning module: a Hugging Face image-text-to-text model, trained in full or through LoRA.

`full` trains every weight (the CPU default's brief general training of the
tiny model, so that it already answers); `lora` freezes the base and trains a
peft adapter on the configured modules only. The loss is the model's own causal
LM loss over the answer tokens (the collator masks everything else). Target
modules are checked against the model before any training starts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import lightning as L
import torch

from probmed.core.errors import ConfigError

MODES: tuple[str, ...] = ("full", "lora")


def linear_module_names(model: torch.nn.Module) -> list[str]:
    """Fully qualified names of the Linear layers LoRA can wrap."""
    return [name for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)]


def resolve_target_modules(model: torch.nn.Module, target: str | Sequence[str]) -> list[str]:
    """The Linear layers `target` selects, with peft's semantics; a target that selects nothing is an error.

    A string is a regular expression matched against the whole module name; a
    list holds name suffixes (``q_proj`` matches ``...self_attn.q_proj``), each
    of which must match at least one Linear layer.
    """
    names = linear_module_names(model)
    suffixes = sorted({n.rsplit(".", 1)[-1] for n in names})
    if isinstance(target, str):
        try:
            pattern = re.compile(target)
        except re.error as exc:
            raise ConfigError(f"finetune.lora.target_modules: invalid regular expression {target!r}: {exc}") from exc
        chosen = [n for n in names if pattern.fullmatch(n)]
        if not chosen:
            raise ConfigError(
                f"finetune.lora.target_modules: {target!r} matches no Linear module of the model "
                f"(Linear layer names end in {suffixes})"
            )
        return chosen
    target = [str(t) for t in target]
    if not target:
        raise ConfigError("finetune.lora.target_modules is empty")
    missing = [t for t in target if not any(n == t or n.endswith("." + t) for n in names)]
    if missing:
        raise ConfigError(
            f"finetune.lora.target_modules: {missing} not found in the model (Linear layer names end in {suffixes})"
        )
    return [n for n in names if any(n == t or n.endswith("." + t) for t in target)]


def lora_config(lora: Mapping[str, Any]):
    """A peft LoraConfig from the params.yaml `finetune.lora` block."""
    from peft import LoraConfig

    target = lora["target_modules"]
    target = target if isinstance(target, str) else list(target)
    return LoraConfig(
        r=int(lora["r"]),
        lora_alpha=int(lora["alpha"]),
        lora_dropout=float(lora["dropout"]),
        target_modules=target,
        bias="none",
    )


def attach_lora(model: torch.nn.Module, lora: Mapping[str, Any]) -> torch.nn.Module:
    """Validate the targets, then wrap the model in a peft adapter (base weights frozen)."""
    from peft import get_peft_model

    from probmed.inference.models.hf import peft_quietly

    resolve_target_modules(model, lora["target_modules"])
    if int(lora["r"]) < 1:
        raise ConfigError(f"finetune.lora.r must be >= 1, got {lora['r']}")
    with peft_quietly():
        return get_peft_model(model, lora_config(lora))


def count_parameters(model: torch.nn.Module) -> tuple[int, int]:
    """(trainable, total) parameter counts."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    return trainable, total


def load_base_model(model_dir: str | Path, dtype: str | None = None) -> torch.nn.Module:
    """The saved model without an adapter, in `dtype` when one is named (else as transformers loads it)."""
    from transformers import AutoModelForImageTextToText

    kwargs: dict[str, Any] = {}
    if dtype:
        kwargs["dtype"] = getattr(torch, dtype)
    return AutoModelForImageTextToText.from_pretrained(str(model_dir), **kwargs)


def load_adapted_model(model_dir: str | Path, adapter_dir: str | Path, dtype: str | None = None) -> torch.nn.Module:
    """The base model with a saved LoRA adapter applied (eval mode)."""
    from peft import PeftModel

    from probmed.inference.models.hf import peft_quietly

    with peft_quietly():
        model = PeftModel.from_pretrained(load_base_model(model_dir, dtype), str(adapter_dir))
    model.eval()
    return model


class VisionLanguageFineTuner(L.LightningModule):
    """Wraps the model; logs train/val loss and the answer accuracy at the first answer token."""

    def __init__(
        self,
        model: torch.nn.Module,
        mode: str,
        lr: float,
        weight_decay: float = 0.0,
        lora: Mapping[str, Any] | None = None,
        answer_ids: Mapping[str, Sequence[int]] | None = None,
    ):
        super().__init__()
        if mode not in MODES:
            raise ConfigError(f"fine-tuning mode {mode!r} not in {MODES}")
        if mode == "lora":
            if lora is None:
                raise ConfigError("fine-tuning mode 'lora' needs finetune.lora")
            model = attach_lora(model, lora)
        else:
            for p in model.parameters():
                p.requires_grad_(True)
        model.train()  # from_pretrained returns eval mode; LoRA dropout must be active while training
        self.model = model
        self.mode = mode
        self.lr, self.weight_decay = float(lr), float(weight_decay)
        self.answer_first = None
        if answer_ids is not None:
            self.answer_first = (int(answer_ids["yes"][0]), int(answer_ids["no"][0]))
        self.save_hyperparameters({"mode": mode, "lr": self.lr, "weight_decay": self.weight_decay})

    def forward(self, **batch: torch.Tensor):
        return self.model(**batch)

    def _step(self, batch: dict[str, torch.Tensor], stage: str) -> torch.Tensor:
        out = self.model(**batch)
        n = batch["input_ids"].shape[0]
        self.log(f"{stage}_loss", out.loss, prog_bar=True, batch_size=n, on_step=stage == "train", on_epoch=True)
        if self.answer_first is not None:
            accuracy = answer_accuracy(out.logits, batch["labels"], self.answer_first)
            if not torch.isnan(accuracy):  # a batch of descriptions only has no yes/no answer
                self.log(f"{stage}_answer_acc", accuracy, batch_size=n, on_epoch=True)
        return out.loss

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._step(batch, "val")

    def configure_optimizers(self):
        # fused: ATen's own AdamW kernel. The for-loop and foreach paths take `exp_avg_sq.sqrt()`
        # from MKL's vector math library on the CPU, whose last bits depend on the CPU even under
        # MKL_CBWR=COMPATIBLE: the same training gave other weights on an AMD EPYC than on an Intel Xeon.
        params = [p for p in self.model.parameters() if p.requires_grad]
        return torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay, fused=True)

    def save(self, out_dir: str | Path) -> Path:
        """Save the adapter only (lora) or the whole model (full)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(out))
        return out


def answer_accuracy(logits: torch.Tensor, labels: torch.Tensor, yes_no: tuple[int, int]) -> torch.Tensor:
    """Share of yes/no rows whose first answer token prefers the right one of (yes, no); rows of
    another task (descriptions) are left out (NaN when a batch has none)."""
    first = (labels != -100).float().argmax(dim=-1)  # position of the first answer token
    rows = torch.arange(labels.shape[0], device=labels.device)
    target = labels[rows, first]
    closed = (target == yes_no[0]) | (target == yes_no[1])
    pred_logits = logits[rows, first - 1][:, list(yes_no)]
    truth = (target == yes_no[1]).long()  # 0 = yes, 1 = no
    return (pred_logits.argmax(-1) == truth)[closed].float().mean()


class EpochLog(L.Callback):
    """Console hygiene for training: a logging interval no longer than an epoch, and one line per epoch in logs.

    Lightning warns when `log_every_n_steps` exceeds the batches of an epoch (the
    smoke-scale default has a handful); the interval is clamped to the epoch
    instead. Off a terminal the progress bar is off and each epoch ends with
    ``training: epoch 2/10, 33 steps, train_loss 0.69, val_loss 0.70, 4.1 s``.
    """

    def __init__(self, log_lines: bool = True) -> None:
        self.log_lines = log_lines
        self._started = 0.0

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        """Before Lightning sizes the epoch (and would warn): the interval at most one epoch of batches."""
        import math

        datamodule = getattr(trainer, "datamodule", None)
        if stage != "fit" or datamodule is None:
            return
        try:
            batches = math.ceil(len(datamodule.train_dataloader()) / max(1, trainer.world_size))
        except TypeError:  # an iterable dataset has no length
            return
        if batches > 0:
            trainer.log_every_n_steps = max(1, min(trainer.log_every_n_steps, batches))

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        import time

        self._started = time.monotonic()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        import sys
        import time

        if not self.log_lines or not trainer.is_global_zero:
            return
        values = trainer.callback_metrics
        shown = [f"{k} {float(values[k]):.4g}" for k in ("train_loss", "val_loss", "val_answer_acc") if k in values]
        print(", ".join([f"training: epoch {trainer.current_epoch + 1}/{trainer.max_epochs}",
                         f"{trainer.global_step} steps", *shown, f"{time.monotonic() - self._started:.1f} s"]),
              file=sys.stderr, flush=True)
