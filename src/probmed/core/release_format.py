"""The original ProbMed release's JSON formats, read and written.

Two readers with two promises:

* :func:`read_question_file` is the project's own reader of a question file
  (``test.json`` style). It validates strictly and converts to the project's
  question table (records.QUESTION_COLUMNS): unknown ``qa_type``, an answer
  that is not yes/no (or does not match the record's polarity), a missing or
  mistyped field, a duplicate record, an image whose records are not
  contiguous, an adversarial record whose ground-truth twin is missing: each
  raises :class:`~probmed.core.records.RecordError` naming the file, record index,
  image id and field.
* :func:`read_response_file` feeds the official-compatible scorer. It checks
  structure only (a JSON list of objects with the six fields, ``gt_ans`` and
  ``response`` strings), because that scorer must score every file the original
  ``calculate_score.py`` scores, quirks included.

Conversion between the formats (decisions where the original format is silent):

* ``qid`` = first 16 hex digits of sha1(image_id, qa_type, question): stable
  across runs and machines.
* ``pair_id`` = ``"<image_id>:<pair key>"`` where the pair key is ``modality``,
  ``body_part``, ``entity_<k>``, ``grounding_<k>``, ``vqarad_<k>``; single
  questions get ``"<image_id>:abnormality"`` / ``"<image_id>:entity_hallu"``.
* The original format has no category for VQA-RAD records (``vqarad_*``); a
  record may carry an optional ``category`` field (ignored by the original
  tools), otherwise such records get category ``condition``.
* ``entity``, ``evidence`` are not in the original format (empty on import);
  ``licence`` is written as an optional field (ignored by the original tools) and read back;
  ``strategy`` is ``gt`` for ground-truth records and ``official`` otherwise.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from probmed.core.categories import CATEGORIES, CATEGORY_SPECS
from probmed.core.errors import RecordError
from probmed.core.records import QUESTION_COLUMNS, image_path_problem, missing_questions, validate_question_frame
from probmed.core.response_file import (  # noqa: F401 (re-exported: the response format's reader lives there)
    RESPONSE_FILE_FIELDS,
    load_json_list,
    read_response_file,
    validate_response_records,
)
from probmed.infra.io import write_json_atomic
from probmed.infra.tables import read_parquet

log = logging.getLogger(__name__)

QUESTION_FILE_FIELDS: tuple[str, ...] = ("id", "i", "image", "image_type", "qa_type", "question", "answer", "src_dataset")

VQARAD_QA_TYPE = "vqarad"  # the VQA-RAD adversarial set's numbered pairs; the format gives no category


def _alternatives(names) -> str:
    return "|".join(re.escape(n) for n in names)


# qa_type names follow from the category specs (probmed.core.categories): fixed pairs
# (<qa_type>_gt|hallu), numbered pairs (<qa_type>_gt|hallu_<k>), single questions.
_FIXED_PAIRS = {c.qa_type: c.name for c in CATEGORY_SPECS if c.paired and not c.indexed}
_NUMBERED_PAIRS: dict[str, str | None] = {c.qa_type: c.name for c in CATEGORY_SPECS if c.paired and c.indexed}
_NUMBERED_PAIRS[VQARAD_QA_TYPE] = None
_SINGLES = {c.single_qa_type: c.name for c in CATEGORY_SPECS if c.single_qa_type}
_QA_TYPE = re.compile(
    rf"^(?:(?P<fixed>{_alternatives(_FIXED_PAIRS)})_(?P<fp>gt|hallu)"
    rf"|(?P<single>{_alternatives(_SINGLES)})"
    rf"|(?P<kind>{_alternatives(_NUMBERED_PAIRS)})_(?P<kp>gt|hallu)_(?P<k>\d+))$"
)


def parse_qa_type(qa_type: str) -> tuple[str | None, str, str] | None:
    """``(category, polarity, pair_key)`` of an original qa_type, or None if unknown.

    category is None for ``vqarad_*`` records (the format does not say).
    """
    m = _QA_TYPE.match(qa_type) if isinstance(qa_type, str) else None
    if m is None:
        return None
    if m.group("fixed"):
        kind = m.group("fixed")
        return _FIXED_PAIRS[kind], "gt" if m.group("fp") == "gt" else "adversarial", kind
    if m.group("single"):
        return _SINGLES[m.group("single")], "single", m.group("single")
    kind, k = m.group("kind"), m.group("k")
    polarity = "gt" if m.group("kp") == "gt" else "adversarial"
    return _NUMBERED_PAIRS[kind], polarity, f"{kind}_{k}"


def question_id(image_id: str, qa_type: str, question: str) -> str:
    """Stable question id: a hash of what identifies the question."""
    digest = hashlib.sha1(f"{image_id}\x1f{qa_type}\x1f{question}".encode("utf-8")).hexdigest()
    return digest[:16]


def _is_scalar_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def questions_from_official(records: list[dict[str, Any]], where: str = "questions") -> pd.DataFrame:
    """Validate original-format question records strictly and convert them to a question table."""
    order = _RecordOrder()
    rows: list[dict[str, Any]] = []
    for idx, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise RecordError(f"{where}: record {idx}: expected an object, got {type(rec).__name__}")
        image = str(rec["id"]) if rec.get("id") is not None else "?"

        def fail(name: str, msg: str, idx: int = idx, image: str = image) -> RecordError:
            return RecordError(f"{where}: record {idx} (image {image}): field {name!r}: {msg}")

        category, polarity, pair_key = _checked_fields(rec, fail)
        order.check(rec, idx, image, polarity, pair_key, fail)
        rows.append(
            {
                "qid": question_id(image, rec["qa_type"], rec["question"]),
                "image_id": image,
                "image_path": rec["image"],
                "source": rec["src_dataset"],
                "category": category,
                "polarity": polarity,
                "pair_id": f"{image}:{pair_key}",
                "question": rec["question"],
                "answer": rec["answer"],
                "entity": "",
                "image_type": rec["image_type"],
                "qa_type": rec["qa_type"],
                "strategy": "gt" if polarity == "gt" else "official",
                "evidence": "",
                "licence": str(rec.get("licence") or ""),
            }
        )
    frame = pd.DataFrame(rows, columns=list(QUESTION_COLUMNS))
    return validate_question_frame(frame, where)


Fail = Callable[[str, str], RecordError]


def _checked_fields(rec: dict[str, Any], fail: Fail) -> tuple[str, str, str]:
    """(category, polarity, pair key) of one record whose fields are all present and well-typed."""
    for name in QUESTION_FILE_FIELDS:
        if name not in rec:
            raise fail(name, "missing")
    if not _is_scalar_id(rec["id"]) or str(rec["id"]) == "":
        raise fail("id", f"expected a non-empty string or integer, got {rec['id']!r}")
    if not isinstance(rec["i"], int) or isinstance(rec["i"], bool):
        raise fail("i", f"expected an integer, got {rec['i']!r}")
    for name in ("image", "image_type", "qa_type", "question", "src_dataset"):
        if not isinstance(rec[name], str) or (name != "image" and not rec[name].strip()):
            raise fail(name, f"expected a non-empty string, got {rec[name]!r}")
    why = image_path_problem(rec["image"])
    if why:
        raise fail("image", f"{rec['image']!r} {why}")
    parsed = parse_qa_type(rec["qa_type"])
    if parsed is None:
        raise fail("qa_type", f"unknown qa_type {rec['qa_type']!r}")
    category, polarity, pair_key = parsed
    if "category" in rec:
        if rec["category"] not in CATEGORIES:
            raise fail("category", f"{rec['category']!r} not in {list(CATEGORIES)}")
        category = rec["category"]
    answer = rec["answer"]
    if answer not in ("yes", "no"):
        raise fail("answer", f"{answer!r} is not 'yes' or 'no'")
    if polarity == "gt" and answer != "yes":
        raise fail("answer", f"ground-truth record ({rec['qa_type']}) must be answered 'yes', got {answer!r}")
    if polarity == "adversarial" and answer != "no":
        raise fail("answer", f"adversarial record ({rec['qa_type']}) must be answered 'no', got {answer!r}")
    return category or "condition", polarity, pair_key


@dataclass
class _RecordOrder:
    """What the records seen so far allow next: unique i and (image, qa_type), contiguous images,
    one image type per image, every adversarial record after its ground-truth twin, once."""

    seen_keys: dict[tuple[str, str], int] = field(default_factory=dict)
    seen_i: dict[int, int] = field(default_factory=dict)
    finished_images: set[str] = field(default_factory=set)
    current: str | None = None
    current_type: str | None = None
    open_gt: set[str] = field(default_factory=set)  # pair keys of the current image with a gt record
    closed: set[str] = field(default_factory=set)

    def check(self, rec: dict[str, Any], idx: int, image: str, polarity: str, pair_key: str, fail: Fail) -> None:
        if rec["i"] in self.seen_i:
            raise fail("i", f"duplicate record: i={rec['i']} already used by record {self.seen_i[rec['i']]}")
        self.seen_i[rec["i"]] = idx
        if image != self.current:
            if image in self.finished_images:
                raise fail("id", "records of this image are not contiguous (the image appeared earlier)")
            if self.current is not None:
                self.finished_images.add(self.current)
            self.current, self.current_type = image, rec["image_type"]
            self.open_gt, self.closed = set(), set()
        elif rec["image_type"] != self.current_type:
            raise fail("image_type", f"{rec['image_type']!r} differs from the image's earlier {self.current_type!r}")
        key = (image, rec["qa_type"])
        if key in self.seen_keys:
            raise fail("qa_type", f"duplicate record: {rec['qa_type']} already given by record {self.seen_keys[key]}")
        self.seen_keys[key] = idx
        if polarity == "gt":
            self.open_gt.add(pair_key)
        elif polarity == "adversarial":
            if pair_key not in self.open_gt:
                raise fail("qa_type", f"adversarial record {rec['qa_type']} has no ground-truth twin before it")
            if pair_key in self.closed:
                raise fail("qa_type", f"pair {pair_key} already has an adversarial record")
            self.closed.add(pair_key)


def questions_to_official(frame: pd.DataFrame, with_category: bool = False) -> list[dict[str, Any]]:
    """A question table as original-format records, in table order (``i`` = position).

    ``with_category`` adds the optional ``category`` field (needed to round-trip
    VQA-RAD records; the original tools ignore it).
    """
    validate_question_frame(frame)
    out: list[dict[str, Any]] = []
    for i, row in enumerate(frame.itertuples(index=False)):
        rec: dict[str, Any] = {
            "id": row.image_id,
            "i": i,
            "image": row.image_path if isinstance(row.image_path, str) else "",
            "image_type": row.image_type,
            "qa_type": row.qa_type,
            "question": row.question,
            "answer": row.answer,
            "src_dataset": row.source,
        }
        if with_category:
            rec["category"] = row.category
        licence = getattr(row, "licence", "")
        if isinstance(licence, str) and licence:
            rec["licence"] = licence
        out.append(rec)
    return out


def read_question_file(path: str | Path) -> pd.DataFrame:
    """Read an original-format question file into a validated question table (strict)."""
    return questions_from_official(load_json_list(path, "question file"), str(path))


def write_question_file(frame: pd.DataFrame, path: str | Path, with_category: bool = False) -> None:
    """Write a question table in the original question-file format (atomically)."""
    records = questions_to_official(frame, with_category=with_category)
    questions_from_official(records, str(path))  # never write a file our own reader would refuse
    write_json_atomic(records, path)


def _response_text(pred: dict[str, Any] | None) -> str:
    if pred is None:
        return ""
    text = pred.get("response")
    if isinstance(text, str) and text.strip():
        return text
    label = pred.get("label")  # logit mode: no text, the label is the answer
    return label if label in ("yes", "no") else ("" if not isinstance(text, str) else text)


def responses_to_official(questions: pd.DataFrame, predictions: pd.DataFrame) -> tuple[list[dict[str, Any]], int]:
    """Join predictions to questions by qid, in question order; returns (records, n_missing).

    A question without a prediction gets response ``""`` (the original scores it
    0); the caller reports the count, nothing is dropped.
    """
    by_qid: dict[str, dict[str, Any]] = {}
    if len(predictions):
        dup = predictions["qid"].duplicated()
        if dup.any():
            i = int(dup.to_numpy().nonzero()[0][0])
            raise RecordError(f"predictions: record {i}: duplicate qid {predictions['qid'].iat[i]!r}")
        by_qid = {r["qid"]: r for r in predictions.to_dict("records")}
    out, missing = [], 0
    for row in questions.itertuples(index=False):
        pred = by_qid.get(row.qid)
        missing += pred is None
        out.append(
            {
                "id": row.image_id,
                "image_type": row.image_type,
                "qa_type": row.qa_type,
                "question": row.question,
                "gt_ans": row.answer,
                "response": _response_text(pred),
            }
        )
    return out, missing


def write_response_file(questions: pd.DataFrame, predictions: pd.DataFrame, path: str | Path) -> int:
    """Write predictions in the original response-file format; returns the number of missing answers."""
    records, missing = responses_to_official(questions, predictions)
    if missing:
        log.warning("%s: %d of %d questions have no prediction (written with an empty response)", path, missing, len(records))
    write_json_atomic(records, path)
    return missing


__all__ = [
    "QUESTION_FILE_FIELDS",
    "RESPONSE_FILE_FIELDS",
    "parse_qa_type",
    "question_id",
    "questions_from_official",
    "questions_to_official",
    "read_question_file",
    "write_question_file",
    "validate_response_records",
    "read_response_file",
    "responses_to_official",
    "write_response_file",
    "validate_question_table",
    "read_questions_any",
]


def validate_question_table(frame: pd.DataFrame, where: str = "questions") -> pd.DataFrame:
    """The strict checks of :func:`read_question_file` on a project question table (Parquet).

    Besides records.validate_question_frame: an image's rows are contiguous and
    carry one image_type, an adversarial row's gt twin (same pair_id) comes
    before it, a pair has at most one adversarial row, a (image, qa_type) is unique.
    """
    frame = validate_question_frame(frame, where)
    finished: set[str] = set()
    current: str | None = None
    current_type: str | None = None
    gt_pairs: set[str] = set()
    adv_pairs: set[str] = set()
    qa_seen: set[str] = set()
    cols = ("image_id", "image_type", "polarity", "pair_id", "qa_type")
    for idx, (image, itype, polarity, pair, qa_type) in enumerate(zip(*(frame[c].to_numpy() for c in cols))):
        image = str(image)
        if image != current:
            if image in finished:
                raise RecordError(f"{where}: record {idx} (image {image}): field 'image_id': records of this image are not contiguous")
            if current is not None:
                finished.add(current)
            current, current_type = image, itype
            gt_pairs, adv_pairs, qa_seen = set(), set(), set()
        elif itype != current_type:
            raise RecordError(
                f"{where}: record {idx} (image {image}): field 'image_type': {itype!r} differs from the image's earlier {current_type!r}"
            )
        if qa_type in qa_seen:
            raise RecordError(f"{where}: record {idx} (image {image}): field 'qa_type': duplicate record {qa_type!r}")
        qa_seen.add(qa_type)
        if polarity == "gt":
            gt_pairs.add(pair)
        elif polarity == "adversarial":
            if pair not in gt_pairs:
                raise RecordError(
                    f"{where}: record {idx} (image {image}): field 'pair_id': adversarial record of pair {pair!r} has no ground-truth twin before it"
                )
            if pair in adv_pairs:
                raise RecordError(f"{where}: record {idx} (image {image}): field 'pair_id': pair {pair!r} has two adversarial records")
            adv_pairs.add(pair)
    return frame


def read_questions_any(path: str | Path) -> pd.DataFrame:
    """A question set from Parquet (project table) or JSON (original question file), strictly validated."""
    path = Path(path)
    if not path.exists():
        raise missing_questions(path)
    if path.suffix.lower() == ".json":
        return read_question_file(path)
    return validate_question_table(read_parquet(path, "question table"), str(path))
