"""What one released row holds, and which rows each config serves.

A row is one question: the question table's own columns (probmed.core.records.
QUESTION_COLUMNS) minus those that would tell a harness the answer or tie it to
this repository's layout (:data:`HIDDEN_COLUMNS`, each with its reason), plus
the image's modality and organ (read back from its image type) and the image
itself. ``answer`` and ``evidence`` are labels: a prompt shows only ``question``.

Configs are unions of disjoint partitions (licence allows commercial use or not,
image type in the paper's Table 1 or not), so every row is stored once and a
config is a list of files: ``all`` every partition, ``commercial`` the rows whose
licence allows commercial use (probmed.core.licences.commercial_use), ``paper``
the rows of the paper's twelve modality-organ image types (probmed.core.paper).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from probmed.core.licences import commercial_use
from probmed.core.paper import PAPER_TABLE1_IMAGES
from probmed.core.records import QUESTION_COLUMNS
from probmed.core.vocab import MODALITY_TYPE_NAMES, ORGAN_TYPE_NAMES

HIDDEN_COLUMNS: dict[str, str] = {
    "polarity": "gt / adversarial / single: tells the answer of most questions",
    "qa_type": "the original release's _gt / _hallu names tell the answer (test.json keeps them, as the original does)",
    "strategy": "'gt' marks every ground-truth question",
    "image_path": "a path in this repository; the image itself is embedded",
}
DERIVED_COLUMNS: tuple[str, ...] = ("modality", "organ")  # from image_type (vocab.image_type, read back)
IMAGE_COLUMN = "image"
TEXT_COLUMNS: tuple[str, ...] = tuple(c for c in QUESTION_COLUMNS if c not in HIDDEN_COLUMNS) + DERIVED_COLUMNS
RELEASE_COLUMNS: tuple[str, ...] = TEXT_COLUMNS + (IMAGE_COLUMN,)
SPLIT = "test"


@dataclass(frozen=True)
class Partition:
    """A disjoint slice of the rows: one Parquet file."""

    commercial: bool
    paper: bool

    @property
    def name(self) -> str:
        return f"{'commercial' if self.commercial else 'noncommercial'}-{'paper' if self.paper else 'other'}"

    @property
    def path(self) -> str:
        return f"data/{SPLIT}-{self.name}.parquet"


PARTITIONS: tuple[Partition, ...] = tuple(Partition(c, p) for c in (True, False) for p in (True, False))

# config -> which partitions it unites, and the glob of their files (Croissant's file sets).
CONFIGS: dict[str, tuple[Callable[[Partition], bool], str]] = {
    "all": (lambda part: True, f"data/{SPLIT}-*.parquet"),
    "commercial": (lambda part: part.commercial, f"data/{SPLIT}-commercial-*.parquet"),
    "paper": (lambda part: part.paper, f"data/{SPLIT}-*-paper.parquet"),
}
CONFIG_DESCRIPTIONS: dict[str, str] = {
    "all": "every question of the set",
    "commercial": "the questions on images whose licence allows commercial use (no CC BY-NC*, no MedICaT)",
    "paper": "the questions on images of the paper's twelve modality-organ image types (Table 1)",
}

_MODALITY_OF_TYPE = {v: k for k, v in MODALITY_TYPE_NAMES.items()}
_ORGAN_OF_TYPE = {v: k for k, v in ORGAN_TYPE_NAMES.items()}


def modality_and_organ(image_type: str) -> tuple[str, str]:
    """The vocabulary values behind an image type ("X-ray - Chest" -> x-ray, chest), the inverse of vocab.image_type."""
    mod, _, org = str(image_type).partition(" - ")
    return _MODALITY_OF_TYPE.get(mod, mod.lower()), _ORGAN_OF_TYPE.get(org, org.lower())


def text_rows(questions: pd.DataFrame) -> pd.DataFrame:
    """The released text columns of a question table, in its row order."""
    frame = questions[[c for c in TEXT_COLUMNS if c not in DERIVED_COLUMNS]].copy()
    pairs = [modality_and_organ(t) for t in frame["image_type"]]
    frame["modality"] = [m for m, _ in pairs]
    frame["organ"] = [o for _, o in pairs]
    return frame.fillna("").astype(str)[list(TEXT_COLUMNS)]


def partition_of(licence: str, image_type: str) -> Partition:
    """The partition of a row with this licence and image type."""
    return Partition(commercial=commercial_use(licence), paper=image_type in PAPER_TABLE1_IMAGES)


def partition_masks(questions: pd.DataFrame) -> dict[Partition, pd.Series]:
    """Row masks of the non-empty partitions, in PARTITIONS order."""
    parts = [partition_of(lic, t) for lic, t in zip(questions["licence"].fillna(""), questions["image_type"])]
    masks = {p: pd.Series([q == p for q in parts], index=questions.index) for p in PARTITIONS}
    return {p: m for p, m in masks.items() if m.any()}


def config_partitions(present: list[Partition]) -> dict[str, list[Partition]]:
    """Each config's partitions among those present; a config with none is left out."""
    out = {name: [p for p in present if member(p)] for name, (member, _) in CONFIGS.items()}
    return {name: parts for name, parts in out.items() if parts}


def release_order(questions: pd.DataFrame) -> list[int]:
    """Row positions in the order config ``all`` serves them (partition by partition, each in question order):
    the ``doc_id`` order of a harness that loads the release."""
    masks = partition_masks(questions.reset_index(drop=True))
    return [i for mask in masks.values() for i in mask.to_numpy().nonzero()[0].tolist()]
