"""The answer record: what the answer store keeps per answer, defined once.

Every writer and reader shares this one definition (after inspect_ai's
``model/_model_output.py``): the run loop builds an :class:`AnswerRecord`, the
describer a :class:`DescriptionRecord`; both become store lines with
``to_line``; the store validates every line it reads or writes with
:func:`validate_line` against the fields and types declared here; and the
prediction table is made from store lines by :func:`prediction_table`, its
column dtypes following the same field types.

A line holds a field only when its writer set it (lines of older stores lack
some), so validation checks the fields a line has and requires only ``key``;
fields not declared here are kept as they are (a later format may add some).
The :data:`TIMING_FIELDS` of a record go to the store's timing log, not its
line: a store is a DVC output, byte-identical across two runs of the same
questions (lines of older stores keep them inline and still read).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Iterable, Mapping

import pandas as pd

from probmed.core.params_schema import Check, NonNegativeFloat, NonNegativeInt
from probmed.core.records import PREDICTION_COLUMNS
from probmed.core.vocab import LABELS

NonEmpty = Annotated[str, Check(bool, "a non-empty string")]
Label = Annotated[str, Check(lambda v: v in LABELS, f"one of {list(LABELS)}")]
Probability = Annotated[float | None, Check(lambda v: v is None or 0.0 <= v <= 1.0, "a number in [0, 1] or null")]


@dataclass(frozen=True)
class AnswerRecord:
    """One model answer to one question, as stored (field order: the order a writer emits them)."""

    key: NonEmpty  # the answer-store key (answer_store.cache_key); "cache_key" in the prediction table
    qid: str
    image_id: str
    model: str
    setting: str
    prompt_version: str
    response: str  # capped at predict.max_response_chars, redacted
    label: Label
    p_yes: Probability  # logit mode only
    latency_s: NonNegativeFloat
    prompt_tokens: NonNegativeInt
    completion_tokens: NonNegativeInt
    cost_usd: NonNegativeFloat
    retries: NonNegativeInt
    error: str  # non-empty: the backend gave up (kept for the record, re-asked on the next run)
    finish_reason: str | None
    truncated_from: int | None  # the response's length before the cap, None when not cut
    time: float  # when the answer arrived (epoch seconds)

    def to_line(self) -> dict[str, Any]:
        """The store line (a JSON object; the store writes it with sorted keys)."""
        return _line(self)


@dataclass(frozen=True)
class DescriptionRecord:
    """One image description (setting `cot` / `described`), kept in the describer's own store."""

    key: NonEmpty  # describe.description_key
    image_id: str
    describer: str
    response: str
    error: str
    latency_s: NonNegativeFloat
    prompt_tokens: NonNegativeInt
    completion_tokens: NonNegativeInt
    cost_usd: NonNegativeFloat

    def to_line(self) -> dict[str, Any]:
        return _line(self)


StoreRecord = AnswerRecord | DescriptionRecord
TIMING_FIELDS = ("latency_s", "time")  # when an answer arrived and how long it took: the timing log's, not the line's


def _line(record: StoreRecord) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


# --- validation of store lines -----------------------------------------------------------------------

def _json_types(hint: Any) -> tuple[type, ...]:
    """The JSON value types a field of type `hint` accepts: an int is a valid float, None an optional's."""
    parts = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    out: list[type] = []
    for part in parts:
        out.extend((int, float) if part is float else (part,))
    return tuple(out)


def _field_specs(*classes: type) -> dict[str, tuple[tuple[type, ...], Check | None]]:
    """Field -> (accepted JSON types, its check), over every record kind a store holds (a shared field has one
    type)."""
    specs: dict[str, tuple[tuple[type, ...], Check | None]] = {}
    for cls in classes:
        for name, hint in typing.get_type_hints(cls, include_extras=True).items():
            check = None
            if typing.get_origin(hint) is Annotated:
                hint, check = typing.get_args(hint)[:2]
            allowed = _json_types(hint)
            if name in specs and specs[name][0] != allowed:
                raise TypeError(f"store field {name!r} has two types")
            specs.setdefault(name, (allowed, check))
    return specs


STORE_FIELDS = _field_specs(AnswerRecord, DescriptionRecord)


def validate_line(line: Any) -> str | None:
    """Why a parsed store line is not a valid record (naming the field), or None when it is."""
    if not isinstance(line, dict):
        return f"expected a JSON object, got {type(line).__name__}"
    if "key" not in line:
        return "field 'key' is missing"
    for name, (allowed, check) in STORE_FIELDS.items():
        if name not in line:
            continue
        value = line[name]
        if isinstance(value, bool) or not isinstance(value, allowed):
            return f"field {name!r}: expected {'/'.join(t.__name__ for t in allowed)}, got {type(value).__name__}"
        if check is not None and not check.test(value):
            return f"field {name!r}: invalid value {value!r}"[:200]
    return None


# --- store lines -> the prediction table -------------------------------------------------------------

COLUMN_OF_FIELD = {"key": "cache_key"}  # the one field the prediction table names differently
FIELD_OF_COLUMN = {column: name for name, column in COLUMN_OF_FIELD.items()}


def _to_column(values: pd.Series, hint: Any) -> pd.Series:
    """A prediction column in its field's dtype; a value a line lacks becomes 0, 0.0, "" (NaN if optional)."""
    if hint == float | None:
        return pd.to_numeric(values, errors="coerce").astype("float64")
    if hint is int:
        return values.fillna(0).astype("int64")
    if hint is float:
        return values.fillna(0.0).astype("float64")
    return values.fillna("").astype(str)


_HINTS = typing.get_type_hints(AnswerRecord)
# Columns every answer line has (the key is required, the run loop sets qid, model and setting, a writer always
# sets the label) keep the dtype pandas infers; the others are filled and cast by their field's type.
_AS_INFERRED = ("cache_key", "qid", "model", "setting", "label")
_COLUMN_HINTS = {column: _HINTS[FIELD_OF_COLUMN.get(column, column)]
                 for column in PREDICTION_COLUMNS if column not in _AS_INFERRED}


def prediction_table(lines: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Store lines (answers) -> the prediction table: records.PREDICTION_COLUMNS in order, typed as the fields."""
    rows = [{column: line.get(FIELD_OF_COLUMN.get(column, column)) for column in PREDICTION_COLUMNS}
            for line in lines]
    frame = pd.DataFrame(rows, columns=list(PREDICTION_COLUMNS))
    for column, hint in _COLUMN_HINTS.items():
        frame[column] = _to_column(frame[column], hint)
    return frame
