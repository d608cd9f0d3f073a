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
- `pretrain.json` / `adapt.json`: the stage summary (counts, losses, the CPU kernels in force): DVC-tracked,
  so nothing in it differs between two identical runs;
- `pretrain.run.json` / `adapt.run.json`: what does differ (the MLflow run id, the training seconds), untracked.

CPU training is bit-reproducible across x86-64 CPUs with ``finetune.trainer.cpu_kernels: portable``
(probmed.infra.cpu_kernels, put in force by `probmed finetune` before torch loads).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from probmed.core.config import flatten
from probmed.core.errors import ConfigError, MissingFileError
from probmed.core.params_schema import FinetuneProfile, Params, Tracking, TrainStage, as_mapping, selected_finetune
from probmed.core.records import (
    image_records_to_frame,
    read_image_records,
    read_questions,
)
from probmed.finetune import data
from probmed.finetune.stages import BASE_STAGE, StageSpec, run_file, stage_spec
from probmed.infra.cpu_kernels import configure_torch, kernels_in_force
from probmed.infra.io import write_json_atomic, write_parquet

PARENT_TAG = "probmed.parent_training_run"
BASE_POINTER = "base.json"


# --- configuration ---------------------------------------------------------------


def finetune_params(params: Params) -> FinetuneProfile:
    """The `finetune` section with its selected profile (`finetune.profile`) merged on top, its seed resolved.

    `seed` null means the top-level seed (params.yaml holds each value once and no
    interpolation, which `dvc exp run -S` would resolve for good).
    """
    profile = selected_finetune(params.finetune)
    return dataclasses.replace(profile, seed=params.seed if profile.seed is None else profile.seed)


def seed_of(fcfg: FinetuneProfile) -> int:
    """The profile's seed (:func:`finetune_params` resolves a null one to the top-level seed)."""
    if fcfg.seed is None:
        raise ConfigError("finetune.seed is unresolved: read the section with finetune_params")
    return fcfg.seed


def _stage_params(fcfg: FinetuneProfile, spec: StageSpec) -> TrainStage:
    """The stage's section, ``finetune.<stage name>``."""
    stage: TrainStage = getattr(fcfg, spec.name)
    return stage


def prompt_set(params: Params):
    """The evaluation prompts (params `settings`), so training sees what probing asks."""
    from probmed.inference.prompting import PromptSet

    return PromptSet.from_params(as_mapping(params.settings))


# --- inputs ----------------------------------------------------------------------


def read_records(records_paths: str | Path | Sequence[str | Path]) -> pd.DataFrame:
    """Image records of one or more record tables (one per source), as one frame."""
    paths = [records_paths] if isinstance(records_paths, (str, Path)) else list(records_paths)
    if not paths:
        raise ConfigError("finetune.records: no image record table given")
    return pd.concat([image_records_to_frame(read_image_records(p)) for p in paths], ignore_index=True)


def load_split_questions(
    questions_path: str | Path, records_paths: str | Path | Sequence[str | Path], fcfg: FinetuneProfile
) -> pd.DataFrame:
    """The question table joined with group keys, patient key and train/val/eval split.

    `eval` is held out from every training stage; `val` is a patient-level slice
    of the training patients used only for the validation loss.
    """
    questions = read_questions(questions_path)
    images = data.image_table(read_records(records_paths))
    seed = seed_of(fcfg)
    splits = data.assign_splits(images, float(fcfg.split.eval_fraction), seed)
    frame = data.attach_images(questions, images, splits)
    val_fraction = float(fcfg.split.val_fraction)
    if val_fraction > 0:
        train_images = images[images["image_id"].isin(splits.index[splits == "train"])]
        inner = data.assign_splits(train_images, val_fraction, seed + 1)
        is_val = frame["image_id"].map(inner).eq("eval")
        frame.loc[is_val, "split"] = "val"
    return frame.reset_index(drop=True)


def select_training(frame: pd.DataFrame, stage: str, fcfg: FinetuneProfile) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, val) question rows for a stage: all groups for pretrain, the domain for adapt; balanced, capped."""
    spec = stage_spec(stage)
    scfg = _stage_params(fcfg, spec)
    seed = seed_of(fcfg)
    if spec.domain_only:
        domain = as_mapping(fcfg.domain)
        frame = frame[data.domain_mask(frame, domain)]
        if frame.empty:
            raise ConfigError(f"finetune.domain {domain} matches no question; check source/modality/organ spelling")
    parts = {}
    for split in ("train", "val"):
        part = frame[frame["split"] == split]
        if fcfg.balance:
            part = data.balance_answers(part, seed)
        part = _cap(part, scfg.max_per_group, seed)
        limit = scfg.max_examples  # caps the validation slice too
        if limit is not None and len(part) > int(limit):
            part = part.sample(n=int(limit), random_state=seed).sort_index()
        parts[split] = part
    if parts["train"].empty:
        raise ConfigError(
            f"fine-tuning {stage}: the training split is empty "
            f"(domain {as_mapping(fcfg.domain) if spec.domain_only else 'all'}, eval_fraction {fcfg.split.eval_fraction})"
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
    model_dir = pretrain_dir / BASE_STAGE.weights_dir
    if not (model_dir / "config.json").is_file():
        raise MissingFileError(
            f"no pretrained model in {pretrain_dir} (run `probmed finetune --stage {BASE_STAGE.name}` first)")
    return str(model_dir), None


# --- training ----------------------------------------------------------------------


@dataclass
class StageResult:
    """What one training stage produced: the model's directory, its MLflow run and the counts written to <stage>.json."""

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
    cpu_kernels: str = ""  # probmed.infra.cpu_kernels: portable | native

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> dict[str, Any]:
        """What <stage>.json (DVC-tracked) holds: everything two identical runs share, so no run id, no timing."""
        return {k: v for k, v in self.to_json().items() if k not in ("run_id", "train_seconds")}

    def run_record(self) -> dict[str, Any]:
        """What <stage>.run.json (untracked) holds: the MLflow run and the seconds, which differ per run."""
        return {"run_id": self.run_id, "train_seconds": self.train_seconds}


def make_logger(fcfg: FinetuneProfile, tracking: Tracking, run_name: str, tags: Mapping[str, str]):
    """Lightning's MLflow logger, into an experiment marked as model development, under a unique run name."""
    from lightning.pytorch.loggers import MLFlowLogger
    from mlflow import MlflowClient

    from probmed.infra.tracking_store import (
        DVC_EXPERIMENT_TAG,
        dvc_experiment,
        ensure_experiment,
        open_tracking_db,
        tracking_lock,
        unique_run_name,
    )

    m = fcfg.mlflow
    client = MlflowClient(tracking_uri=tracking.uri)
    with tracking_lock(tracking.uri):
        open_tracking_db(tracking.uri, tracking.artifact_root)  # never replaced; follows a moved project
        experiment_id = ensure_experiment(client, m.experiment, tracking.artifact_root)
    extra = {DVC_EXPERIMENT_TAG: dvc_experiment()} if dvc_experiment() else {}
    return MLFlowLogger(
        experiment_name=m.experiment,
        run_name=unique_run_name(client, experiment_id, run_name),
        tracking_uri=tracking.uri,
        tags={**tags, **extra},
        artifact_location=Path(tracking.artifact_root).resolve().as_uri(),
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


def make_trainer(fcfg: FinetuneProfile, epochs: int, logger):
    """A Lightning Trainer: a bar on a terminal, one line per epoch in a log (probmed.finetune.module.EpochLog)."""
    import lightning as L

    from probmed.finetune.module import EpochLog
    from probmed.infra.progress import interactive

    quiet_lightning()
    t = fcfg.trainer
    bar = interactive()
    return L.Trainer(
        max_epochs=epochs,
        accelerator=t.accelerator,
        devices=t.devices,
        strategy=t.strategy,
        precision=t.precision,
        accumulate_grad_batches=t.accumulate_grad_batches,
        gradient_clip_val=t.gradient_clip_val,
        logger=logger,
        enable_checkpointing=False,
        deterministic=_deterministic(t.deterministic),
        log_every_n_steps=t.log_every_n_steps,
        num_sanity_val_steps=0,
        enable_model_summary=False,
        enable_progress_bar=bar,
        callbacks=[EpochLog(log_lines=not bar)],
    )


def _deterministic(value: Any) -> bool | str:
    """Lightning's `deterministic`: True / False, or "warn" (CUDA kernels without a deterministic variant only warn)."""
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


def _stage_model(spec: StageSpec, fcfg: FinetuneProfile, frame: pd.DataFrame, prompts: Any, staging: Path,
                 out_dir: Path) -> tuple[Path | str, dict[str, str]]:
    """(model directory, MLflow tags naming the parent run) of a stage."""
    if spec.builds_base:
        describe = _stage_params(fcfg, spec).describe
        return _initial_model(fcfg, frame, prompts, staging / "init", describe), {}
    model_dir, _revision = resolve_base(out_dir / BASE_STAGE.output)
    parent_tags: dict[str, str] = {}
    record = run_file(out_dir, BASE_STAGE.name)
    if record.is_file() and json.loads(record.read_text()).get("run_id"):
        parent_tags[PARENT_TAG] = json.loads(record.read_text())["run_id"]
    return model_dir, parent_tags


def _log_hyperparams(logger: Any, stage: str, mode: str, fcfg: FinetuneProfile, tracking: Tracking, prompts: Any, n_train: int, n_val: int,
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
            **{f"finetune.{k}": v for k, v in flatten(as_mapping(fcfg)).items()},
            "finetune.mlflow.tracking_uri": tracking.uri,
            "finetune.mlflow.artifact_root": tracking.artifact_root,
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


def _publish_stage(spec: StageSpec, module: Any, processor: Any, staging: Path, out_dir: Path, logger: Any) -> Path:
    """Save the trained weights (the full model with its processor, or the adapter only) and move them into place."""
    module.save(staging / spec.weights_dir)
    if spec.mode == "full":
        processor.save_pretrained(staging / spec.weights_dir)
    if (staging / "init").exists():  # the model a base stage was built from
        shutil.rmtree(staging / "init")
    final = out_dir / spec.output
    _publish(staging, final)
    logger.experiment.log_artifacts(logger.run_id, str(final), spec.artifact)
    return final


def run_stage(
    params: Params,
    stage: str,
    questions_path: str | Path,
    records_paths: str | Path | Sequence[str | Path],
    image_root: str | Path,
    out_dir: str | Path,
) -> StageResult:
    """Train one stage end to end; every check (config, split, targets) happens before the first step."""
    import lightning as L

    spec = stage_spec(stage)
    fcfg = finetune_params(params)
    out_dir = Path(out_dir)
    frame = load_split_questions(questions_path, records_paths, fcfg)
    prompts = prompt_set(params)
    if spec.builds_base and not _stage_params(fcfg, spec).enabled:
        return _point_at_checkpoint(spec, fcfg, frame, out_dir)
    train_rows, val_rows = select_training(frame, spec.name, fcfg)
    if not spec.owns_split:
        check_same_split(frame, out_dir)
    quiet_lightning()
    configure_torch()
    L.seed_everything(seed_of(fcfg), workers=True, verbose=False)
    staging = _atomic_dir(out_dir / spec.output)
    try:
        return _train_stage(spec, fcfg, params.tracking, frame, prompts, train_rows, val_rows, image_root, out_dir,
                            staging)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


def _train_stage(spec: StageSpec, fcfg: FinetuneProfile, tracking: Tracking, frame: pd.DataFrame, prompts: Any, train_rows: pd.DataFrame,
                 val_rows: pd.DataFrame, image_root: str | Path, out_dir: Path, staging: Path) -> StageResult:
    """Build the model and data, train, publish, log: the part of a stage that writes into ``staging``."""
    from transformers import AutoProcessor

    from probmed.finetune.module import (
        VisionLanguageFineTuner,
        count_parameters,
        load_base_model,
    )

    stage, scfg, seed = spec.name, _stage_params(fcfg, spec), seed_of(fcfg)
    model_dir, parent_tags = _stage_model(spec, fcfg, frame, prompts, staging, out_dir)
    processor = AutoProcessor.from_pretrained(model_dir)
    model = load_base_model(model_dir, fcfg.dtype)
    train_examples, val_examples = training_examples(stage, scfg, train_rows, val_rows, prompts)
    dm = data.ProbingDataModule(
        train_examples,
        val_examples,
        processor,
        image_root,
        as_mapping(fcfg.answer_texts),
        batch_size=scfg.batch_size,
        seed=seed,
        num_workers=fcfg.trainer.num_workers,
    )
    module = VisionLanguageFineTuner(
        model, spec.mode, lr=float(scfg.lr), weight_decay=float(scfg.weight_decay),
        lora=as_mapping(fcfg.lora) if spec.mode == "lora" else None, answer_ids=dm.answer_ids,
    )
    trainable, total = count_parameters(module.model)
    logger = make_logger(fcfg, tracking, f"finetune/{stage}", {"probmed.kind": f"finetune-{stage}", "probmed.stage": stage,
                                                     **parent_tags})
    _log_hyperparams(logger, stage, spec.mode, fcfg, tracking, prompts, len(train_rows), len(val_rows), trainable, total)
    trainer = make_trainer(fcfg, scfg.epochs, logger)
    seconds = _fit(trainer, module, dm, logger)
    counts = (len(train_rows), len(val_rows), trainable, total, scfg.epochs)
    kernels = kernels_in_force()
    if not trainer.is_global_zero:  # multi-GPU: rank 0 alone saves, publishes and logs
        return StageResult(stage, "", "", round(seconds, 2), *counts, {}, kernels)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if v.numel() == 1}
    logger.log_metrics({"train_seconds": seconds})
    final = _publish_stage(spec, module, processor, staging, out_dir, logger)
    result = StageResult(stage, str(final), logger.run_id, round(seconds, 2), *counts, metrics, kernels)
    if spec.owns_split:
        _write_splits(frame, out_dir)
    write_json_atomic(result.summary(), out_dir / f"{stage}.json")
    write_json_atomic(result.run_record(), run_file(out_dir, stage))
    logger.experiment.log_artifact(logger.run_id, str(out_dir / f"{stage}.json"))
    logger.finalize("success")
    return result


SPLIT_COLUMNS = ["image_id", "source", "modality", "organ", "patient_key", "split"]


def _write_splits(frame: pd.DataFrame, out_dir: Path) -> None:
    """The stage that owns the split table writes it (StageSpec.owns_split); the others and transfer read it."""
    write_parquet(frame[SPLIT_COLUMNS].drop_duplicates("image_id").reset_index(drop=True), out_dir / "splits.parquet")


def check_same_split(frame: pd.DataFrame, out_dir: Path) -> None:
    """A later stage must train on the base stage's split; a changed split param means that stage is stale."""
    saved_path = out_dir / "splits.parquet"
    if not saved_path.is_file():
        return
    saved = pd.read_parquet(saved_path).set_index("image_id")["split"]
    now = frame.drop_duplicates("image_id").set_index("image_id")["split"]
    common = now.index.intersection(saved.index)
    if len(common) != len(now) or not (saved.loc[common] == now.loc[common]).all():
        raise ConfigError(
            f"{saved_path}: the split differs from the current finetune.split / question set; re-run the {BASE_STAGE.name} stage"
        )


def training_examples(stage: str, scfg: TrainStage, train_rows: pd.DataFrame, val_rows: pd.DataFrame, prompts
                      ) -> tuple[list[data.Example], list[data.Example]]:
    """(train, val) examples: the questions, plus one description per image when
    `finetune.pretrain.describe` is set (pretrain only), so the model learns to describe images."""
    train = data.examples_from_questions(train_rows, prompts)
    val = data.examples_from_questions(val_rows, prompts)
    if stage_spec(stage).builds_base and scfg.describe:
        train += data.description_examples(train_rows, prompts)
        val += data.description_examples(val_rows, prompts)
    return train, val


def _initial_model(fcfg: FinetuneProfile, frame: pd.DataFrame, prompts, where: Path, describe: bool = False) -> str:
    """The model the pretrain stage starts from: the tiny LLaVA built from config, or a checkpoint.

    The tiny model's word-level vocabulary is trained on the prompts it will see (and, with the
    description task, on the describe prompt and the records' descriptions)."""
    base = fcfg.base_model
    if base == "tiny":
        from probmed.inference.models.tiny import build_tiny_llava

        corpus = [prompts.question_prompt("vanilla", q) for q in frame["question"].drop_duplicates()]
        if describe:
            corpus += [prompts.describe, *frame["description"].drop_duplicates()]
        return str(build_tiny_llava(where, seed=seed_of(fcfg), corpus=corpus))
    return base


def _point_at_checkpoint(spec: StageSpec, fcfg: FinetuneProfile, frame: pd.DataFrame, out_dir: Path) -> StageResult:
    """GPU profile: the real checkpoint already answers; record which one instead of training."""
    final = out_dir / spec.output
    staging = _atomic_dir(final)
    pointer = {"model_id": fcfg.base_model, "revision": fcfg.revision}
    write_json_atomic(pointer, staging / BASE_POINTER)
    _publish(staging, final)
    _write_splits(frame, out_dir)
    result = StageResult(spec.name, str(final), "", 0.0, 0, 0, 0, 0, 0, {})
    write_json_atomic(result.summary(), out_dir / f"{spec.name}.json")
    return result
