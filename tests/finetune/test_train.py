"""Training stages: config and split errors stop before training; the full chain pretrain -> adapt -> transfer."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from probmed.core.config import load_params, to_plain
from probmed.core.errors import ConfigError
from probmed.core.params_schema import Params, parse_params
from probmed.finetune.train import BASE_POINTER, PARENT_TAG, finetune_params, run_stage


@pytest.fixture()
def params(repo_root: Path, small_overrides):
    """load_params(params.yaml) with the small CPU overrides plus the test's own, typed."""

    def load(tmp: Path, **extra: str):
        return typed(load_params(repo_root / "params.yaml", small_overrides(tmp, **extra)))

    return load


def typed(cfg) -> Params:
    """The typed params the fine-tuning entry points take."""
    return parse_params(to_plain(cfg))


def point_at(model_dir: Path, out_dir: Path) -> None:
    """A pretrain directory that names an existing checkpoint (the GPU profile's way)."""
    (out_dir / "pretrain").mkdir(parents=True)
    (out_dir / "pretrain" / BASE_POINTER).write_text(json.dumps({"model_id": str(model_dir), "revision": None}))


def test_gpu_profile_merges_over_defaults(repo_root: Path):
    cfg = typed(load_params(repo_root / "params.yaml", ["finetune.profile=gpu"]))
    f = finetune_params(cfg)
    assert f.trainer.accelerator == "gpu" and f.trainer.precision == "bf16-mixed"
    assert f.pretrain.enabled is False
    assert f.split.eval_fraction == finetune_params(typed(load_params(repo_root / "params.yaml"))).split.eval_fraction
    with pytest.raises(ConfigError, match="finetune.profiles.tpu"):
        finetune_params(typed(load_params(repo_root / "params.yaml", ["finetune.profile=tpu"])))


def test_unknown_target_module_fails_before_training(params, tmp_path, workspace, shared_data, tiny_model_dir):
    out = tmp_path / "ft"
    point_at(tiny_model_dir, out)
    cfg = params(tmp_path, **{"finetune.lora.target_modules": "[q_proj,attn_qkv]"})
    with pytest.raises(ConfigError, match=r"\['attn_qkv'\] not found in the model"):
        run_stage(cfg, "adapt", workspace["questions"], workspace["records"], shared_data, out)
    assert not (out / "adapter").exists()
    assert not (tmp_path / "mlflow.db").exists()  # no MLflow run was opened
    assert [p.name for p in out.iterdir()] == ["pretrain"]  # no staging debris


def test_domain_without_questions_fails_before_training(params, tmp_path, workspace, shared_data, tiny_model_dir):
    out = tmp_path / "ft"
    point_at(tiny_model_dir, out)
    cfg = params(tmp_path, **{"finetune.domain.source": "MIMIC-CXR"})
    with pytest.raises(ConfigError, match="matches no question"):
        run_stage(cfg, "adapt", workspace["questions"], workspace["records"], shared_data, out)
    assert not (out / "adapter").exists() and not (tmp_path / "mlflow.db").exists()


def test_empty_training_split_fails_before_training(params, tmp_path, workspace, shared_data, tiny_model_dir):
    out = tmp_path / "ft"
    point_at(tiny_model_dir, out)
    # every patient of every group with two or more patients is held out: nothing left to train on
    cfg = params(tmp_path, **{"finetune.split.eval_fraction": "0.99"})
    with pytest.raises(ConfigError, match="training split is empty"):
        run_stage(cfg, "adapt", workspace["questions"], workspace["records"], shared_data, out)
    assert not (out / "adapter").exists() and not (tmp_path / "mlflow.db").exists()


def test_cli_reports_config_error_with_exit_2(
    repo_root, tmp_path, workspace, shared_data, tiny_model_dir, capsys, small_overrides
):
    from probmed.cli import main

    out = tmp_path / "ft"
    point_at(tiny_model_dir, out)
    code = main(
        ["finetune", "--stage", "adapt", "--params", str(repo_root / "params.yaml"),
         "--questions", str(workspace["questions"]), "--records", str(workspace["records"]),
         "--image-root", str(shared_data), "--out-dir", str(out),
         *small_overrides(tmp_path, **{"finetune.lora.target_modules": "[nope]"})]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "probmed finetune: error:" in err and "['nope'] not found" in err and "Traceback" not in err


@pytest.mark.slow
def test_pretrain_adapt_transfer_chain(params, tmp_path, workspace, shared_data):
    """The whole study on 36 real images: outputs, split hygiene, MLflow links, cached re-run."""
    from mlflow import MlflowClient

    from probmed.finetune.transfer import MODELS, run_transfer

    out = tmp_path / "ft"
    cfg = params(tmp_path)
    pre = run_stage(cfg, "pretrain", workspace["questions"], workspace["records"], shared_data, out)
    assert pre.trainable_params == pre.total_params > 50_000  # full training
    assert (out / "pretrain" / "model" / "config.json").is_file()

    ada = run_stage(cfg, "adapt", workspace["questions"], workspace["records"], shared_data, out)
    assert 0 < ada.trainable_params < ada.total_params / 10
    assert sorted(p.name for p in (out / "adapter").iterdir() if p.suffix != ".md") == [
        "adapter_config.json", "adapter_model.safetensors"]

    splits = pd.read_parquet(out / "splits.parquet")
    assert (splits.groupby("patient_key")["split"].nunique() == 1).all()

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    adapt_run = client.get_run(ada.run_id)
    assert adapt_run.data.tags[PARENT_TAG] == pre.run_id
    assert "train_loss_epoch" in adapt_run.data.metrics and "train_seconds" in adapt_run.data.metrics
    artifacts = {a.path for a in client.list_artifacts(ada.run_id, "adapter")}
    assert "adapter/adapter_model.safetensors" in artifacts
    # the DVC-tracked summaries hold nothing that differs between identical runs: no run id, no timing
    for stage in ("pretrain", "adapt"):
        summary = json.loads((out / f"{stage}.json").read_text())
        assert "run_id" not in summary and "train_seconds" not in summary and summary["epochs"] >= 1
    assert json.loads((out / "adapt.run.json").read_text())["run_id"] == ada.run_id

    result = run_transfer(cfg, workspace["questions"], shared_data, out, out / "transfer", progress=False)
    table = result.table
    assert {"in-domain (held-out patients)", "same modality and organ, other source",
            "other modality and organ"} <= set(table["comparison"])
    assert set(table["category"]) == {"modality", "organ"}
    assert table["base_accuracy_adv_pairs"].notna().all() and table["adapted_accuracy_adv_pairs"].notna().all()
    for name in ("transfer.csv", "transfer.md", "transfer.json", "transfer.png"):
        assert (out / "transfer" / name).stat().st_size > 0
    # probed images are exactly the held-out ones
    preds = pd.read_parquet(out / "transfer" / "predictions" / f"{MODELS[1]}.parquet")
    questions = pd.read_parquet(workspace["questions"])
    probed = set(questions.loc[questions["qid"].isin(preds["qid"]), "image_id"])
    assert probed == set(splits.loc[splits["split"] == "eval", "image_id"])
    assert preds["p_yes"].between(0, 1).all() and set(preds["label"]) <= {"yes", "no"}
    for run_id in result.run_ids.values():
        run = client.get_run(run_id)
        assert run.data.tags[PARENT_TAG] == ada.run_id
        assert run.data.tags["mlflow.parentRunId"] == ada.run_id

    again = run_transfer(cfg, workspace["questions"], shared_data, out, out / "transfer", progress=False)
    assert again.run_ids == result.run_ids  # updated in place, no duplicate runs
    pd.testing.assert_frame_equal(again.table, table)  # answers came from the store


@pytest.mark.slow
def test_gpu_profile_code_path_on_cpu(params, tmp_path, workspace, shared_data, tiny_model_dir):
    """The GPU profile end to end with only the hardware keys set back to CPU: no pretrain, a pointer, LoRA."""
    out = tmp_path / "ft"
    cfg = params(
        tmp_path,
        **{
            "finetune.profile": "gpu",
            "finetune.profiles.gpu.base_model": str(tiny_model_dir),
            "finetune.profiles.gpu.dtype": "float32",
            "finetune.profiles.gpu.trainer.accelerator": "cpu",
            "finetune.profiles.gpu.trainer.devices": "1",
            "finetune.profiles.gpu.trainer.strategy": "auto",
            "finetune.profiles.gpu.trainer.precision": "32-true",
            "finetune.profiles.gpu.trainer.num_workers": "0",
            "finetune.profiles.gpu.adapt.epochs": "1",
        },
    )
    pre = run_stage(cfg, "pretrain", workspace["questions"], workspace["records"], shared_data, out)
    assert pre.run_id == "" and pre.train_seconds == 0.0  # nothing trained
    assert json.loads((out / "pretrain" / BASE_POINTER).read_text())["model_id"] == str(tiny_model_dir)
    ada = run_stage(cfg, "adapt", workspace["questions"], workspace["records"], shared_data, out)
    config = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert config["r"] == 16 and "gate_proj" in config["target_modules"]
    assert config["base_model_name_or_path"] == str(tiny_model_dir)
    assert 0 < ada.trainable_params < ada.total_params


def test_pretrain_also_teaches_descriptions(params, tmp_path, workspace):
    """finetune.pretrain.describe adds one description example per training image (pretrain only)."""
    from probmed.finetune.train import load_split_questions, prompt_set, select_training, training_examples

    cfg = params(tmp_path)
    fcfg = finetune_params(cfg)
    frame = load_split_questions(workspace["questions"], workspace["records"], fcfg)
    train, val = select_training(frame, "pretrain", fcfg)
    examples, _ = training_examples("pretrain", fcfg.pretrain, train, val, prompt_set(cfg))
    described = [e for e in examples if e.task == "describe"]
    assert len(described) == train["image_id"].nunique() and len(examples) == len(train) + len(described)
    assert {e.answer.split(".")[0] for e in described} == {"x-ray of the chest", "ct scan of the abdomen", "mri of the brain"}
    adapt_examples, _ = training_examples("adapt", fcfg.adapt, train, val, prompt_set(cfg))
    assert all(e.task == "answer" for e in adapt_examples)
    off = finetune_params(params(tmp_path, **{"finetune.pretrain.describe": "false"}))
    assert all(e.task == "answer" for e in training_examples("pretrain", off.pretrain, train, val, prompt_set(cfg))[0])
