"""The two training stages: `pretrain` (brief full training on a general split) and `adapt` (LoRA on one domain).

Both stages read the same question table and image records, split them by
patient (probmed.finetune.data), train with Lightning and log one MLflow run
each through Lightning's MLFlowLogger. The adapt run is tagged with the
pretrain run it starts from, and the transfer runs with the adapt run, so the
MLflow UI links the whole chain.

Outputs (all under `finetune.out_dir`):
- `pretrain/`: the pretrained model + processor (CPU default), or `base.json`
  naming the real checkpoint when `pretrain.enabled` is false (GPU profile);
- `adapter/`: the LoRA adapter only (adapter_config.json + weights), never the base;
- `splits.parquet`: image_id -> split, so transfer evaluates exactly the held-out images;
- `pretrain.json` / `adapt.json`: the stage summary (MLflow run id, timing, counts, losses).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from probmed.core.config import flatten, to_plain
from probmed.core.errors import ConfigError, MissingFileError
from probmed.finetune import data
from probmed.core.records import image_records_to_frame, read_image_records, read_questions
from probmed.core.io import write_json_atomic, write_parquet

STAGES: tuple[str, ...] = ("pretrain", "adapt")
PARENT_TAG = "probmed.parent_training_run"
BASE_POINTER = "base.json"


# --- configuration ---------------------------------------------------------------


def finetune_params(cfg: DictConfig) -> DictConfig:
    """The `finetune` section with its selected profile (`finetune.profile`) merged on top.

    A copy, completed from the top level: `seed` null means the top-level seed,
    and `mlflow` gains `tracking_uri` / `artifact_root` from `tracking.uri` /
    `tracking.artifact_root` (params.yaml holds each value once and no
    interpolation, which `dvc exp run -S` would resolve for good).
    """
    section = cfg.get("finetune")
    if section is None:
        raise ConfigError("params: section 'finetune' is missing")
    profile = str(section.get("profile", "cpu"))
    profiles = section.get("profiles") or {}
    if profile != "cpu" and profile not in profiles:
        raise ConfigError(f"finetune.profile = {profile!r}: no finetune.profiles.{profile} (have: cpu, {', '.join(profiles)})")
    section = OmegaConf.merge(section, profiles[profile] if profile != "cpu" else {})
    for key in ("domain", "split", "lora", "pretrain", "adapt", "trainer", "answer_texts", "mlflow"):
        if section.get(key) is None:
            raise ConfigError(f"params: required key 'finetune.{key}' is missing")
    if section.get("seed") is None:
        section.seed = int(cfg.get("seed") or 0)
    tracking = cfg.get("tracking") or {}
    section.mlflow.tracking_uri = str(tracking.get("uri") or "sqlite:///mlflow.db")
    section.mlflow.artifact_root = str(tracking.get("artifact_root") or "mlruns")
    return section


def prompt_set(cfg: DictConfig):
    """The evaluation prompts (params `settings`), so training sees what probing asks."""
    from probmed.inference.prompting import PromptSet

    return PromptSet.from_params(to_plain(cfg.get("settings")) if cfg.get("settings") is not None else None)


# --- inputs ----------------------------------------------------------------------


def read_records(records_paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Image records of one or more record tables (one per source), as one frame."""
    paths = [records_paths] if isinstance(records_paths, (str, Path)) else list(records_paths)
    if not paths:
        raise ConfigError("finetune.records: no image record table given")
    return pd.concat([image_records_to_frame(read_image_records(p)) for p in paths], ignore_index=True)


def load_split_questions(
    questions_path: str | Path, records_paths: str | Path | Sequence[str | Path], fcfg: DictConfig
) -> pd.DataFrame:
    """The question table joined with group keys, patient key and train/val/eval split.

    `eval` is held out from every training stage; `val` is a patient-level slice
    of the training patients used only for the validation loss.
    """
    questions = read_questions(questions_path)
    images = data.image_table(read_records(records_paths))
    seed = int(fcfg.seed)
    splits = data.assign_splits(images, float(fcfg.split.eval_fraction), seed)
    frame = data.attach_images(questions, images, splits)
    val_fraction = float(fcfg.split.get("val_fraction", 0.0) or 0.0)
    if val_fraction > 0:
        train_images = images[images["image_id"].isin(splits.index[splits == "train"])]
        inner = data.assign_splits(train_images, val_fraction, seed + 1)
        is_val = frame["image_id"].map(inner).eq("eval")
        frame.loc[is_val, "split"] = "val"
    return frame.reset_index(drop=True)


def select_training(frame: pd.DataFrame, stage: str, fcfg: DictConfig) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, val) question rows for a stage: all groups for pretrain, the domain for adapt; balanced, capped."""
    scfg = fcfg[stage]
    seed = int(fcfg.seed)
    if stage == "adapt":
        domain = to_plain(fcfg.domain)
        frame = frame[data.domain_mask(frame, domain)]
        if frame.empty:
            raise ConfigError(f"finetune.domain {domain} matches no question; check source/modality/organ spelling")
    parts = {}
    for split in ("train", "val"):
        part = frame[frame["split"] == split]
        if fcfg.get("balance", True):
            part = data.balance_answers(part, seed)
        part = _cap(part, scfg.get("max_per_group"), seed)
        limit = scfg.get("max_examples")  # caps the validation slice too
        if limit is not None and len(part) > int(limit):
            part = part.sample(n=int(limit), random_state=seed).sort_index()
        parts[split] = part
    if parts["train"].empty:
        raise ConfigError(
            f"fine-tuning {stage}: the training split is empty "
            f"(domain {to_plain(fcfg.domain) if stage == 'adapt' else 'all'}, eval_fraction {fcfg.split.eval_fraction})"
        )
    return parts["train"], parts["val"]


def _cap(frame: pd.DataFrame, per_group: Any, seed: int) -> pd.DataFrame:
    """At most `per_group` rows per (source, modality, organ), keeping the yes/no balance."""
    if per_group is None or frame.empty:
        return frame
    per_group = int(per_group)
    kept = []
    for _, group in frame.groupby(list(data.GROUP_KEYS), sort=True, dropna=False):
        if len(group) > per_group:
            group = data.balance_answers(group, seed)
            group = pd.concat(
                part.sample(n=min(len(part), per_group // 2), random_state=seed)
                for _, part in group.groupby("answer", sort=True)
            )
        kept.append(group)
    return pd.concat(kept).sort_index()


# --- base model --------------------------------------------------------------------


def resolve_base(pretrain_dir: str | Path) -> tuple[str, str | None]:
    """(model_id, revision) of the base model a pretrain stage produced."""
    pretrain_dir = Path(pretrain_dir)
    pointer = pretrain_dir / BASE_POINTER
    if pointer.is_file():
        spec = json.loads(pointer.read_text())
        return str(spec["model_id"]), spec.get("revision")
    model_dir = pretrain_dir / "model"
    if not (model_dir / "config.json").is_file():
        raise MissingFileError(f"no pretrained model in {pretrain_dir} (run `probmed finetune --stage pretrain` first)")
    return str(model_dir), None


# --- training ----------------------------------------------------------------------


@dataclass
class StageResult:
    stage: str
    out_dir: str
    run_id: str
    train_seconds: float
    n_train: int
    n_val: int
    trainable_params: int
    total_params: int
    epochs: int
    metrics: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def make_logger(fcfg: DictConfig, run_name: str, tags: Mapping[str, str]):
    """Lightning's MLflow logger, into an experiment marked as model development, under a unique run name."""
    from lightning.pytorch.loggers import MLFlowLogger
    from mlflow import MlflowClient

    from probmed.core.tracking_store import (DVC_EXPERIMENT_TAG, check_tracking_db, dvc_experiment, ensure_experiment,
                                            unique_run_name)

    m = fcfg.mlflow
    check_tracking_db(str(m.tracking_uri))  # an empty or corrupt tracking DB is refused, never replaced
    client = MlflowClient(tracking_uri=str(m.tracking_uri))
    experiment_id = ensure_experiment(client, str(m.experiment), str(m.artifact_root))
    extra = {DVC_EXPERIMENT_TAG: dvc_experiment()} if dvc_experiment() else {}
    return MLFlowLogger(
        experiment_name=str(m.experiment),
        run_name=unique_run_name(client, experiment_id, run_name),
        tracking_uri=str(m.tracking_uri),
        tags={**tags, **extra},
        artifact_location=Path(str(m.artifact_root)).resolve().as_uri(),
    )


def quiet_lightning() -> None:
    """Lightning's INFO lines (GPU/TPU availability, tips, "Seed set to") off; its warnings stay.

    Lightning sets its loggers to INFO when imported, so this runs after the import.
    """
    import logging
    import warnings

    import lightning  # noqa: F401  (the import that sets the levels this overrides)

    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).setLevel(logging.WARNING)
    # Lightning 2.6 builds torch's deprecated LeafSpec inside its own pytree helper (torch 2.13 warns);
    # nothing the project calls, so that one message is silenced, every other warning stays
    warnings.filterwarnings("ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning)


def make_trainer(fcfg: DictConfig, epochs: int, logger):
    """A Lightning Trainer: a bar on a terminal, one line per epoch in a log (probmed.finetune.module.EpochLog)."""
    import lightning as L

    from probmed.core.progress import interactive
    from probmed.finetune.module import EpochLog

    quiet_lightning()
    t = fcfg.trainer
    bar = interactive()
    return L.Trainer(
        max_epochs=epochs,
        accelerator=str(t.accelerator),
        devices=t.devices,
        strategy=str(t.strategy),
        precision=str(t.precision),
        accumulate_grad_batches=int(t.get("accumulate_grad_batches", 1)),
        gradient_clip_val=t.get("gradient_clip_val"),
        logger=logger,
        enable_checkpointing=False,
        deterministic=_deterministic(t.get("deterministic", True)),
        log_every_n_steps=int(t.get("log_every_n_steps", 10)),
        num_sanity_val_steps=0,
        enable_model_summary=False,
        enable_progress_bar=bar,
        callbacks=[EpochLog(log_lines=not bar)],
    )


def _deterministic(value: Any) -> bool | str:
    """true / false, or "warn" (CUDA kernels without a deterministic variant only warn)."""
    return "warn" if str(value).lower() == "warn" else bool(value)


def _atomic_dir(final: Path) -> Path:
    """A fresh sibling temp directory; `_publish` renames it over `final` only when complete."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}."))


def _publish(tmp: Path, final: Path) -> None:
    tmp.chmod(0o755)  # mkdtemp makes it private
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)


def _stage_model(stage: str, fcfg: DictConfig, frame: pd.DataFrame, prompts: Any, staging: Path,
                 out_dir: Path) -> tuple[Path, str, dict[str, str]]:
    """(model directory, training mode, MLflow tags naming the parent run) of a stage."""
    if stage == "pretrain":
        describe = bool(fcfg[stage].get("describe", False))
        return _initial_model(fcfg, frame, prompts, staging / "init", describe), "full", {}
    model_dir, _revision = resolve_base(out_dir / "pretrain")
    parent_tags: dict[str, str] = {}
    summary = out_dir / "pretrain.json"
    if summary.is_file() and json.loads(summary.read_text()).get("run_id"):
        parent_tags[PARENT_TAG] = json.loads(summary.read_text())["run_id"]
    return model_dir, "lora", parent_tags


def _log_hyperparams(logger: Any, stage: str, mode: str, fcfg: DictConfig, prompts: Any, n_train: int, n_val: int,
                     trainable: int, total: int) -> None:
    logger.log_hyperparams(
        {
            "stage": stage,
            "mode": mode,
            "base_model": str(fcfg.base_model),
            "n_train": n_train,
            "n_val": n_val,
            "trainable_params": trainable,
            "total_params": total,
            "prompt_version": prompts.version,
            **{f"finetune.{k}": v for k, v in flatten(to_plain(fcfg)).items() if not k.startswith("profiles")},
        }
    )


def _fit(trainer: Any, module: Any, dm: Any, logger: Any) -> float:
    """Train; returns the seconds it took. A failed fit marks the MLflow run FAILED, not RUNNING."""
    import torch

    dm.setup()
    start = time.perf_counter()
    try:
        trainer.fit(module, datamodule=dm)
    except BaseException:
        logger.finalize("failed")
        raise
    seconds = time.perf_counter() - start
    torch.set_grad_enabled(True)
    return seconds


def _publish_stage(stage: str, module: Any, processor: Any, staging: Path, out_dir: Path, logger: Any) -> Path:
    """Save the trained weights (the full model, or the adapter only) and move them into place."""
    if stage == "pretrain":
        module.save(staging / "model")
        processor.save_pretrained(staging / "model")
        shutil.rmtree(staging / "init")
    else:
        module.save(staging)
    final = out_dir / stage if stage == "pretrain" else out_dir / "adapter"
    _publish(staging, final)
    logger.experiment.log_artifacts(logger.run_id, str(final), "model" if stage == "pretrain" else "adapter")
    return final


def run_stage(
    cfg: DictConfig,
    stage: str,
    questions_path: str | Path,
    records_paths: str | Path | Sequence[str | Path],
    image_root: str | Path,
    out_dir: str | Path,
) -> StageResult:
    """Train one stage end to end; every check (config, split, targets) happens before the first step."""
    import lightning as L

    if stage not in STAGES:
        raise ConfigError(f"fine-tuning stage {stage!r} not in {STAGES}")
    fcfg = finetune_params(cfg)
    out_dir = Path(out_dir)
    frame = load_split_questions(questions_path, records_paths, fcfg)
    prompts = prompt_set(cfg)
    if stage == "pretrain" and not fcfg[stage].get("enabled", True):
        return _point_at_checkpoint(fcfg, frame, out_dir)
    train_rows, val_rows = select_training(frame, stage, fcfg)
    if stage == "adapt":
        check_same_split(frame, out_dir)
    quiet_lightning()
    L.seed_everything(int(fcfg.seed), workers=True, verbose=False)
    staging = _atomic_dir(out_dir / stage if stage == "pretrain" else out_dir / "adapter")
    try:
        return _train_stage(stage, fcfg, frame, prompts, train_rows, val_rows, image_root, out_dir, staging)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _train_stage(stage: str, fcfg: DictConfig, frame: pd.DataFrame, prompts: Any, train_rows: pd.DataFrame,
                 val_rows: pd.DataFrame, image_root: str | Path, out_dir: Path, staging: Path) -> StageResult:
    """Build the model and data, train, publish, log: the part of a stage that writes into ``staging``."""
    from transformers import AutoProcessor

    from probmed.finetune.module import VisionLanguageFineTuner, count_parameters, load_base_model

    scfg, seed = fcfg[stage], int(fcfg.seed)
    model_dir, mode, parent_tags = _stage_model(stage, fcfg, frame, prompts, staging, out_dir)
    processor = AutoProcessor.from_pretrained(model_dir)
    model = load_base_model(model_dir, fcfg.get("dtype"))
    train_examples, val_examples = training_examples(stage, scfg, train_rows, val_rows, prompts)
    dm = data.ProbingDataModule(
        train_examples,
        val_examples,
        processor,
        image_root,
        to_plain(fcfg.answer_texts),
        batch_size=int(scfg.batch_size),
        seed=seed,
        num_workers=int(fcfg.trainer.get("num_workers", 0)),
    )
    module = VisionLanguageFineTuner(
        model, mode, lr=float(scfg.lr), weight_decay=float(scfg.get("weight_decay", 0.0)),
        lora=to_plain(fcfg.lora) if mode == "lora" else None, answer_ids=dm.answer_ids,
    )
    trainable, total = count_parameters(module.model)
    logger = make_logger(fcfg, f"finetune/{stage}", {"probmed.kind": f"finetune-{stage}", "probmed.stage": stage,
                                                     **parent_tags})
    _log_hyperparams(logger, stage, mode, fcfg, prompts, len(train_rows), len(val_rows), trainable, total)
    trainer = make_trainer(fcfg, int(scfg.epochs), logger)
    seconds = _fit(trainer, module, dm, logger)
    counts = (len(train_rows), len(val_rows), trainable, total, int(scfg.epochs))
    if not trainer.is_global_zero:  # multi-GPU: rank 0 alone saves, publishes and logs
        return StageResult(stage, "", "", round(seconds, 2), *counts, {})
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1}
    logger.log_metrics({"train_seconds": seconds})
    final = _publish_stage(stage, module, processor, staging, out_dir, logger)
    result = StageResult(stage, str(final), logger.run_id, round(seconds, 2), *counts, metrics)
    if stage == "pretrain":
        _write_splits(frame, out_dir)
    write_json_atomic(result.to_json(), out_dir / f"{stage}.json")
    logger.experiment.log_artifact(logger.run_id, str(out_dir / f"{stage}.json"))
    logger.finalize("success")
    return result


SPLIT_COLUMNS = ["image_id", "source", "modality", "organ", "patient_key", "split"]


def _write_splits(frame: pd.DataFrame, out_dir: Path) -> None:
    """The pretrain stage owns the split table; adapt and transfer read it."""
    write_parquet(frame[SPLIT_COLUMNS].drop_duplicates("image_id").reset_index(drop=True), out_dir / "splits.parquet")


def check_same_split(frame: pd.DataFrame, out_dir: Path) -> None:
    """Adapt must train on the pretrain stage's split; a changed split param means pretrain is stale."""
    saved_path = out_dir / "splits.parquet"
    if not saved_path.is_file():
        return
    saved = pd.read_parquet(saved_path).set_index("image_id")["split"]
    now = frame.drop_duplicates("image_id").set_index("image_id")["split"]
    common = now.index.intersection(saved.index)
    if len(common) != len(now) or not (saved.loc[common] == now.loc[common]).all():
        raise ConfigError(
            f"{saved_path}: the split differs from the current finetune.split / question set; re-run the pretrain stage"
        )


def training_examples(stage: str, scfg: DictConfig, train_rows: pd.DataFrame, val_rows: pd.DataFrame, prompts
                      ) -> tuple[list[data.Example], list[data.Example]]:
    """(train, val) examples: the questions, plus one description per image when
    `finetune.pretrain.describe` is set (pretrain only), so the model learns to describe images."""
    train = data.examples_from_questions(train_rows, prompts)
    val = data.examples_from_questions(val_rows, prompts)
    if stage == "pretrain" and scfg.get("describe", False):
        train += data.description_examples(train_rows, prompts)
        val += data.description_examples(val_rows, prompts)
    return train, val


def _initial_model(fcfg: DictConfig, frame: pd.DataFrame, prompts, where: Path, describe: bool = False) -> str:
    """The model the pretrain stage starts from: the tiny LLaVA built from config, or a checkpoint.

    The tiny model's word-level vocabulary is trained on the prompts it will see (and, with the
    description task, on the describe prompt and the records' descriptions)."""
    base = str(fcfg.base_model)
    if base == "tiny":
        from probmed.inference.models.tiny import build_tiny_llava

        corpus = [prompts.question_prompt("vanilla", q) for q in frame["question"].drop_duplicates()]
        if describe:
            corpus += [prompts.describe, *frame["description"].drop_duplicates()]
        return str(build_tiny_llava(where, seed=int(fcfg.seed), corpus=corpus))
    return base


def _point_at_checkpoint(fcfg: DictConfig, frame: pd.DataFrame, out_dir: Path) -> StageResult:
    """GPU profile: the real checkpoint already answers; record which one instead of training."""
    final = out_dir / "pretrain"
    staging = _atomic_dir(final)
    spec = {"model_id": str(fcfg.base_model), "revision": fcfg.get("revision")}
    write_json_atomic(spec, staging / BASE_POINTER)
    _publish(staging, final)
    _write_splits(frame, out_dir)
    result = StageResult("pretrain", str(final), "", 0.0, 0, 0, 0, 0, 0, {})
    write_json_atomic(result.to_json(), out_dir / "pretrain.json")
    return result
