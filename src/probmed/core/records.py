"""The three records that flow through the pipeline, and their Parquet IO.

ImageRecord (one per image: the paper's D_i) -> question (closed yes/no, paired
with an adversarial twin) -> prediction (one model answer). Questions and
predictions live as tables (QUESTION_COLUMNS, PREDICTION_COLUMNS), checked on
read and write; image records as dataclasses. Tables are Parquet; nested fields
of ImageRecord (findings, known-absent conditions, provenance) are stored as
JSON strings so any Parquet reader sees plain columns.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pandas as pd

from probmed.core.categories import CATEGORIES
from probmed.core.errors import MissingFileError, RecordError
from probmed.core.vocab import LABELS, MODALITIES, ORGANS, POLARITIES
from probmed.infra.io import write_parquet
from probmed.infra.tables import read_parquet


@dataclass(frozen=True)
class Finding:
    """One condition seen in an image, with its position when the source states one."""

    condition: str
    position: str | None = None


@dataclass
class ImageRecord:
    """One image and what its source says about it (the paper's D_i); vocabulary fields checked on creation."""

    image_id: str
    source: str
    modality: str = "unknown"
    organ: str = "unknown"
    abnormal: bool | None = None
    findings: list[Finding] = field(default_factory=list)
    absent_conditions: list[str] = field(default_factory=list)
    image_path: str | None = None
    split: str = "test"
    patient_id: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    licence: str | None = None  # the image's licence as its source states it (core.licences)

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise RecordError(f"image {self.image_id}: modality {self.modality!r} not in {MODALITIES}")
        if self.organ not in ORGANS:
            raise RecordError(f"image {self.image_id}: organ {self.organ!r} not in {ORGANS}")
        self.findings = [f if isinstance(f, Finding) else Finding(**f) for f in self.findings]


IMAGE_JSON_FIELDS = ("findings", "absent_conditions", "provenance")


def image_records_to_frame(records: Iterable[ImageRecord]) -> pd.DataFrame:
    """Records as a table of plain columns (nested fields as JSON strings, so any Parquet reader sees them)."""
    rows = []
    for rec in records:
        row = asdict(rec)
        for name in IMAGE_JSON_FIELDS:
            row[name] = json.dumps(row[name], sort_keys=True)
        rows.append(row)
    columns = [f.name for f in fields(ImageRecord)]
    frame = pd.DataFrame(rows, columns=columns)
    frame["abnormal"] = frame["abnormal"].astype("object")
    return frame


def image_records_from_frame(frame: pd.DataFrame) -> list[ImageRecord]:
    """The inverse of :func:`image_records_to_frame` (Parquet's NaN for an absent value read as None)."""
    records = []
    for row in frame.to_dict("records"):
        for name in IMAGE_JSON_FIELDS:
            row[name] = json.loads(row[name])
        for name in ("image_path", "patient_id", "abnormal", "licence"):
            if row.get(name) is not None and pd.isna(row[name]):
                row[name] = None
        records.append(ImageRecord(**row))
    return records


def write_image_records(records: Iterable[ImageRecord], path: str | Path) -> None:
    """Write a record table atomically."""
    write_parquet(image_records_to_frame(records), path)


def read_image_records(path: str | Path) -> list[ImageRecord]:
    """Read a record table; a missing file is named."""
    return image_records_from_frame(read_parquet(path, "record table"))


# --- Questions -----------------------------------------------------------------

QUESTION_COLUMNS: tuple[str, ...] = (
    "qid",  # stable hash of (image_id, qa_type, question)
    "image_id",
    "image_path",
    "source",
    "category",  # one of CATEGORIES
    "polarity",  # gt | adversarial | single
    "pair_id",  # shared by a gt question and its adversary; own id for singles
    "question",
    "answer",  # yes | no
    "entity",  # the modality / organ / condition / position asked about
    "image_type",  # "X-ray - Chest"
    "qa_type",  # the original release's qa_type
    "strategy",  # random | popular | adversarial | gt
    "evidence",  # why the adversarial entity is believed absent
    "licence",  # the image's licence, so non-commercial rows can be filtered (core.licences)
    "contrast_id",  # shared by one text's "yes" on one image and its "no" on another (benchmark.contrast); null: none
)
# Columns a table written before they existed may lack: read as empty (licence "") or null (contrast_id).
OPTIONAL_QUESTION_COLUMNS: tuple[str, ...] = ("licence", "contrast_id")


def image_path_problem(path: Any) -> str | None:
    """Why an ``image_path`` cannot be a path inside the image root, or None (absent is allowed here).

    Image paths are relative to the image root and stay inside it: no absolute path, no home
    directory, no ``..`` component, no NUL. (Symlinks are checked where the root is known:
    probmed.inference.images.resolve_image.)
    """
    if path is None or (isinstance(path, float) and pd.isna(path)) or path == "":
        return None
    if not isinstance(path, str):
        return f"expected a string, got {type(path).__name__}"
    if "\x00" in path:
        return "contains a NUL character"
    parts = path.replace("\\", "/").split("/")
    if path.startswith(("/", "\\", "~")) or (len(path) > 1 and path[1] == ":"):
        return "is an absolute path; image paths are relative to the image root"
    if ".." in parts:
        return "leaves the image root ('..'); image paths are relative to the image root and stay inside it"
    return None


def check_image_paths(frame: pd.DataFrame, where: str = "questions") -> None:
    """RecordError naming the first record whose image_path would leave the image root."""
    if "image_path" not in frame.columns:
        return
    problems = {p: image_path_problem(p) for p in pd.unique(frame["image_path"].to_numpy(dtype=object))}
    bad = {p: why for p, why in problems.items() if why}
    if not bad:
        return
    i = int(frame["image_path"].isin(list(bad)).to_numpy().nonzero()[0][0])
    path = frame["image_path"].iat[i]
    raise RecordError(f"{where}: record {i} (image {frame['image_id'].iat[i]}): field 'image_path' = {path!r} {bad[path]}")


def check_one_path_per_image(frame: pd.DataFrame, where: str = "questions") -> None:
    """RecordError naming the first image id whose rows give two image paths, and both paths.

    One image id is one image: predict decodes each image once (the first path it meets), so a second
    path would have its questions asked with another image's pixels, and scores group by image id.
    """
    if "image_path" not in frame.columns or "image_id" not in frame.columns:
        return
    pairs = frame[["image_id", "image_path"]].reset_index(drop=True).drop_duplicates()
    clash = pairs["image_id"].duplicated()
    if not clash.any():
        return
    image = pairs["image_id"][clash].iat[0]
    first, second = pairs.index[pairs["image_id"] == image][:2]
    raise RecordError(
        f"{where}: image {image!r} has two image paths: {pairs['image_path'][first]!r} (record {first}) and "
        f"{pairs['image_path'][second]!r} (record {second}); one image id names one image file"
    )


def validate_question_frame(frame: pd.DataFrame, where: str = "questions") -> pd.DataFrame:
    """Check a question table strictly; raise RecordError naming row, image and field.

    Optional columns a table lacks (older tables have no licence) are added empty."""
    if "licence" not in frame.columns:
        frame = frame.assign(licence="")
    if "contrast_id" not in frame.columns:
        frame = frame.assign(contrast_id=pd.array([None] * len(frame), dtype="string"))
    elif frame["contrast_id"].dtype != "string":  # one type however the table was built (NaN, None, str)
        frame = frame.assign(contrast_id=frame["contrast_id"].astype("string"))
    missing = [c for c in QUESTION_COLUMNS if c not in frame.columns]
    if missing:
        raise RecordError(f"{where}: missing column(s) {missing}")
    check_image_paths(frame, where)
    check_one_path_per_image(frame, where)
    checks = (
        ("category", CATEGORIES),
        ("polarity", POLARITIES),
        ("answer", ("yes", "no")),
    )
    for column, allowed in checks:
        bad = ~frame[column].isin(allowed)
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise RecordError(
                f"{where}: record {i} (image {frame['image_id'].iat[i]}): "
                f"field {column!r} = {frame[column].iat[i]!r}, expected one of {list(allowed)}"
            )
    dup = frame["qid"].duplicated()
    if dup.any():
        i = int(dup.to_numpy().nonzero()[0][0])
        raise RecordError(
            f"{where}: record {i} (image {frame['image_id'].iat[i]}): duplicate qid {frame['qid'].iat[i]!r}"
        )
    check_contrast_pairs(frame, where)
    return frame


def check_contrast_pairs(frame: pd.DataFrame, where: str = "questions") -> None:
    """RecordError naming the first record whose contrast_id is on more than two questions, or on two that are not
    one "yes" and one "no" on two images. An id on one question (a filtered table left its partner out) is allowed:
    the scorer counts only pairs it holds whole, and subsets draw their own pairs (benchmark.contrast)."""
    ids = frame["contrast_id"]
    has = ids.notna().to_numpy(dtype=bool)
    if not has.any():
        return
    rows = np.flatnonzero(has)
    code = pd.factorize(ids.iloc[rows])[0]  # integer arrays, not a groupby: ~650,000 rows per 100k images
    held = np.bincount(code)
    yes = np.bincount(code, weights=(frame["answer"].iloc[rows] == "yes").to_numpy(dtype=float))
    order = np.argsort(code, kind="stable")
    c, image = code[order], pd.factorize(frame["image_id"])[0][rows][order]
    same = (c[1:] == c[:-1]) & (image[1:] == image[:-1])
    one_image = np.zeros(len(held), dtype=bool)
    one_image[c[1:][same]] = True
    bad = (held > 2) | ((held == 2) & ((yes != 1) | one_image))
    if not bad.any():
        return
    i = int(rows[int(np.flatnonzero(bad[code])[0])])
    raise RecordError(
        f"{where}: record {i} (image {frame['image_id'].iat[i]}): field 'contrast_id' = {ids.iat[i]!r} names "
        "a contrast pair: at most two questions, one answered yes and one no, on two images (draw the pairs with "
        "benchmark.contrast.assign_contrast_pairs)"
    )


def write_questions(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a question table atomically, checked as strictly as it will be read."""
    frame = validate_question_frame(frame, str(path))
    write_parquet(frame[list(QUESTION_COLUMNS)], path)


QUESTIONS_HINT = "run `probmed generate` (or `dvc repro`, which writes build/questions/<set>.parquet)"
"""What a missing question file's message suggests: every reader of a question set says it."""


def missing_questions(path: str | Path) -> MissingFileError:
    """The error for a question set that is not there, with what builds one."""
    return MissingFileError(f"question file {path} not found: {QUESTIONS_HINT}")


def read_questions(path: str | Path) -> pd.DataFrame:
    """Read a question table, checked strictly (:func:`validate_question_frame`)."""
    if not Path(path).is_file():
        raise missing_questions(path)
    return validate_question_frame(read_parquet(path, "question table"), str(path))


# --- Predictions ---------------------------------------------------------------

PREDICTION_COLUMNS: tuple[str, ...] = (
    "qid",
    "model",  # registry name of the model
    "setting",  # a name of probmed.core.settings.SETTINGS
    "response",  # raw text ("" when scored by logits or failed)
    "label",  # yes | no | refusal | unparsed (parsed from response or from p_yes)
    "p_yes",  # P(yes) / (P(yes) + P(no)) in logit mode; NaN otherwise
    # no latency_s: a timing differs between two runs of the same questions, and the table is a DVC output
    # that must not; each answer's latency goes to its store's timing log (answer_store.timing_log_dir)
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "cache_key",
    "error",  # non-empty when the backend gave up on this question
)


def write_predictions(frame: pd.DataFrame, path: str | Path) -> None:
    """Write a prediction table atomically (its columns in PREDICTION_COLUMNS order)."""
    write_parquet(frame[list(PREDICTION_COLUMNS)], path)


PREDICTIONS_HINT = ("; a prediction table is the Parquet file `probmed predict` writes (an original-format response "
                    "file is scored with `probmed score-responses`)")


def read_predictions(path: str | Path) -> pd.DataFrame:
    """Read a prediction table; RecordError names a missing column or the first unknown label."""
    frame = read_parquet(path, "prediction table", PREDICTIONS_HINT)
    missing = [c for c in ("qid", "label") if c not in frame.columns]
    if missing:
        raise RecordError(f"{path}: missing column(s) {missing}")
    bad = ~frame["label"].isin(LABELS)
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise RecordError(f"{path}: record {i} (qid {frame['qid'].iat[i]}): field 'label' = {frame['label'].iat[i]!r}")
    return frame


def read_predictions_for(path: str | Path, questions: pd.DataFrame, questions_path: str | Path) -> pd.DataFrame:
    """A prediction table checked to belong to `questions` (:func:`check_predictions_belong`), so scoring or
    exporting the wrong pair of files stops instead of reporting every question missing."""
    frame = read_predictions(path)
    check_predictions_belong(frame, questions, path, questions_path)
    return frame


def check_predictions_belong(predictions: pd.DataFrame, questions: pd.DataFrame, predictions_path: str | Path,
                             questions_path: str | Path) -> None:
    """The one definition of "these predictions answer another question set": fewer than half of their
    question ids are in it (none at all for an empty table). RecordError (exit 2) names both files."""
    ids = set(predictions["qid"].astype(str))
    matched = len(ids & set(questions["qid"].astype(str)))
    if ids and 2 * matched >= len(ids):
        return
    raise RecordError(
        f"predictions {predictions_path} do not belong to question set {questions_path}: "
        f"{matched} of their {len(ids)} question ids are in it (at least half must be); "
        "pass the question table the predictions were made for")
