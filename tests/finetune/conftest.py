"""Fixtures for the fine-tuning tests: a tiny LLaVA and probing questions over real images.

Questions are built here from ../shared/data (ChestX-ray14 thumbnails with their
patient ids, VQA-RAD images with their organ) so these tests do not depend on
the question generator; the shape is the project's question table.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from probmed.core.records import QUESTION_COLUMNS
from probmed.core.vocab import image_type

VQARAD_ORGANS = {"CHEST": ("x-ray", "chest"), "ABD": ("ct", "abdomen"), "HEAD": ("mri", "brain")}
MODALITY_WORDS = {"x-ray": "an X-ray", "ct": "a CT scan", "mri": "an MRI"}
OTHER_MODALITY = {"x-ray": "ct", "ct": "mri", "mri": "x-ray"}
OTHER_ORGAN = {"chest": "brain", "abdomen": "chest", "brain": "abdomen"}


def _qid(*parts: str) -> str:
    return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]


def probing_questions(images: pd.DataFrame) -> pd.DataFrame:
    """A modality pair and an organ pair per image (gt first), in the project's question shape."""
    rows = []
    for img in images.itertuples(index=False):
        itype = image_type(img.modality, img.organ)
        for category, gt, adv, text in (
            ("modality", img.modality, OTHER_MODALITY[img.modality], lambda v: f"Is this {MODALITY_WORDS[v]} image?"),
            ("organ", img.organ, OTHER_ORGAN[img.organ], lambda v: f"Is this an image of the {v}?"),
        ):
            pair = _qid(img.image_id, category)
            for polarity, entity, answer in (("gt", gt, "yes"), ("adversarial", adv, "no")):
                question = text(entity)
                kind = "modality" if category == "modality" else "body_part"
                rows.append(
                    {
                        "qid": _qid(img.image_id, category, polarity),
                        "image_id": img.image_id,
                        "image_path": img.image_path,
                        "source": img.source,
                        "category": category,
                        "polarity": polarity,
                        "pair_id": pair,
                        "question": question,
                        "answer": answer,
                        "entity": entity,
                        "image_type": itype,
                        "qa_type": f"{kind}_{'gt' if polarity == 'gt' else 'hallu'}",
                        "strategy": "gt" if polarity == "gt" else "random",
                        "evidence": "",
                    }
                )
    return pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))


@pytest.fixture(scope="session")
def image_records(shared_data: Path) -> pd.DataFrame:
    """Image records (the columns fine-tuning reads) for 24 ChestX-ray14 thumbnails and 12 VQA-RAD images.

    image_path is relative to ../shared/data, which the tests use as image root.
    ChestX-ray14 file names start with the patient id; several patients have
    two or more images here, so the patient split is really exercised.
    """
    thumbs = sorted((shared_data / "chestxray14" / "thumbnails_256").glob("*.png"))
    by_patient: dict[str, list[Path]] = {}
    for p in thumbs:
        by_patient.setdefault(p.name.split("_")[0], []).append(p)
    multi = [ps for ps in by_patient.values() if len(ps) >= 2][:8]
    single = [ps[:1] for ps in by_patient.values() if len(ps) == 1][:10]
    rows = []
    for ps in multi + single:
        for p in ps[:3]:
            rows.append(
                {
                    "image_id": f"cxr14:{p.stem}",
                    "image_path": f"chestxray14/thumbnails_256/{p.name}",
                    "source": "chestxray14",
                    "modality": "x-ray",
                    "organ": "chest",
                    "patient_id": p.name.split("_")[0],
                }
            )
    qa = json.loads((shared_data / "vqa-rad" / "VQA_RAD Dataset Public.json").read_text())
    organ_of = {}
    for rec in qa:
        organ_of.setdefault(rec["image_name"], rec["image_organ"].strip())
    per_organ: dict[str, int] = {}
    for name in sorted(organ_of):
        organ = organ_of[name]
        if per_organ.get(organ, 0) >= 4:
            continue
        per_organ[organ] = per_organ.get(organ, 0) + 1
        modality, org = VQARAD_ORGANS[organ]
        rows.append(
            {
                "image_id": f"vqarad:{Path(name).stem}",
                "image_path": f"vqa-rad/VQA_RAD Image Folder/{name}",
                "source": "vqa-rad",
                "modality": modality,
                "organ": org,
                "patient_id": None,
            }
        )
    return pd.DataFrame(rows)


@pytest.fixture(scope="session")
def questions(image_records: pd.DataFrame) -> pd.DataFrame:
    return probing_questions(image_records)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, questions: pd.DataFrame) -> Path:
    from probmed.inference.models.tiny import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("tiny") / "model", seed=0, corpus=questions["question"].tolist())


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, image_records: pd.DataFrame, questions: pd.DataFrame) -> dict[str, Path]:
    """Record and question tables on disk, as the pipeline writes them."""
    from probmed.core.records import ImageRecord, write_image_records, write_questions

    root = tmp_path_factory.mktemp("finetune-inputs")
    records = []
    for row in image_records.to_dict("records"):
        records.append(ImageRecord(**{**row, "source": row["source"]}))
    write_image_records(records, root / "records.parquet")
    write_questions(questions, root / "questions.parquet")
    return {"records": root / "records.parquet", "questions": root / "questions.parquet"}


@pytest.fixture(scope="session")
def small_overrides():
    """The function below, as a fixture (test modules do not import conftest)."""
    return _small_overrides


def _small_overrides(tmp: Path, **extra: str) -> list[str]:
    """params.yaml with tiny CPU settings and an MLflow store inside `tmp`."""
    base = {
        "finetune.domain.source": "chestxray14",
        "finetune.split.eval_fraction": "0.4",
        "finetune.split.val_fraction": "0.2",
        "finetune.pretrain.epochs": "2",
        "finetune.pretrain.batch_size": "16",
        "finetune.pretrain.lr": "0.01",
        "finetune.adapt.epochs": "2",
        "finetune.adapt.batch_size": "16",
        "finetune.adapt.lr": "0.01",
        "finetune.transfer.bootstrap_resamples": "20",
        "finetune.trainer.log_every_n_steps": "1",
        "tracking.uri": f"sqlite:///{tmp / 'mlflow.db'}",
        "tracking.artifact_root": str(tmp / "mlruns"),
    }
    base.update(extra)
    return [f"{k}={v}" for k, v in base.items()]
