"""The original release's response file, read with the standard library only.

A response file (a JSON list of ``{id, image_type, qa_type, question, gt_ans,
response}`` in question-file order) is what the official-compatible scorer
reads. Reading it needs nothing but ``json``, so ``probmed score-official``
starts as fast as the original ``calculate_score.py`` does (no pandas); the rest
of the release format (question files, conversions to tables) is in
:mod:`probmed.core.release_format`.
"""

from __future__ import annotations

from operator import itemgetter
from pathlib import Path
from typing import Any

from probmed.core.errors import RecordError
from probmed.infra.tables import read_json

RESPONSE_FILE_FIELDS: tuple[str, ...] = ("id", "image_type", "qa_type", "question", "gt_ans", "response")


def load_json_list(path: str | Path, what: str = "JSON file", *, text_only: bool = True) -> list[Any]:
    """A file holding a JSON list; a clear error for a missing file, bad JSON or text (probmed.infra.tables.read_json:
    too deep a nesting, a lone surrogate unless not `text_only`) or another type."""
    data = read_json(path, what, text_only=text_only)
    if not isinstance(data, list):
        raise RecordError(f"{path}: expected a JSON list of records, got {type(data).__name__}")
    return data


def validate_response_records(records: list[Any], where: str = "responses") -> list[dict[str, Any]]:
    """Structural check only, no stricter than the original scorer: objects with the six
    fields; ``qa_type`` and ``response`` strings (the original calls ``in`` and ``strip()`` on
    them); ``image_type`` a scalar (it is a grouping key); ``id`` a string or number (a null
    id would be indistinguishable from the original's start-of-walk state). ``gt_ans`` may be
    anything: any value other than "yes" selects the no-rule, as in the original."""
    if not _plainly_valid(records):  # the record-by-record check names the first bad record and field
        for idx, rec in enumerate(records):
            _raise_for_record(rec, idx, where)
    return records


def _plainly_valid(records: list[Any]) -> bool:
    """True when every record is a plain JSON object of the expected shape, tested field by field in C loops
    (a release-sized file is 57k records); False means: look record by record."""
    if not set(map(type, records)) <= {dict} or not unread_fields_valid(records):
        return False
    try:
        _field_types(records, "gt_ans")  # present, any value
        return (_field_types(records, "qa_type") <= {str} and _field_types(records, "response") <= {str}
                and not _field_types(records, "image_type") & {list, dict})
    except KeyError:
        return False


def unread_fields_valid(records: list[Any]) -> bool:
    """The checks a scoring walk does not make by failing: every record is an object with a 'question' (any
    value) and a string or number 'id'. A walk that reads the other four fields of every record fails on any
    other fault (a missing field, a list image type, a qa_type or response that is not a string)."""
    try:
        _field_types(records, "question")  # present, any value
        return _field_types(records, "id") <= {str, int, float}
    except (KeyError, TypeError):
        return False


def _field_types(records: list[Any], name: str) -> set[type]:
    """The types of one field over all records (KeyError if a record lacks it)."""
    return set(map(type, map(itemgetter(name), records)))


def _raise_for_record(rec: Any, idx: int, where: str) -> None:
    """The RecordError naming the record and the field at fault, if it has one."""
    if not isinstance(rec, dict):
        raise RecordError(f"{where}: record {idx}: expected an object, got {type(rec).__name__}")
    image = rec.get("id", "?")
    for name in RESPONSE_FILE_FIELDS:
        if name not in rec:
            raise RecordError(f"{where}: record {idx} (image {image}): field {name!r}: missing")
    if not isinstance(rec["id"], (str, int, float)) or isinstance(rec["id"], bool):
        raise RecordError(f"{where}: record {idx} (image {image}): field 'id': expected a string or number")
    if isinstance(rec["image_type"], (list, dict)):
        raise RecordError(f"{where}: record {idx} (image {image}): field 'image_type': expected a string")
    for name in ("qa_type", "response"):
        if not isinstance(rec[name], str):
            raise RecordError(
                f"{where}: record {idx} (image {image}): field {name!r}: expected a string, "
                f"got {type(rec[name]).__name__}"
            )


def read_response_file(path: str | Path) -> list[dict[str, Any]]:
    """Read an original-format response file (structure validated only)."""
    return validate_response_records(load_json_list(path, "response file"), str(path))
