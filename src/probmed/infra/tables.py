r"""The one reader of the tables a user hands a command: Parquet, CSV and JSON, a bad file refused naming it.

pyarrow, pandas and json report a truncated, corrupt or foreign file with their
own exceptions (``ArrowInvalid``, an ``OSError`` without an errno, a CSV
``ParserError``, ``UnicodeDecodeError``), which would reach the user as a
traceback and exit 4. Every command reads the tables it is given through here,
so such a file is a RecordError (exit 2) naming the file, what it was expected
to be and what it looks like instead ("JSON text", "empty"). JSON is read
strictly: UTF-8, nesting within the decoder's depth bound, and no lone UTF-16
surrogate (``"\ud800"`` decodes to a string no UTF-8 file can hold, so it
would fail later, when the text is hashed or written), each named by where it
stands (record and field).

pandas and pyarrow are imported by the functions that need them: reading JSON
stays standard-library only (``probmed score-official`` starts without pandas).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probmed.core.errors import RecordError
from probmed.infra.io import require_file

if TYPE_CHECKING:
    import pandas as pd

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")  # how a surrogate gets into decoded JSON text


def read_parquet(path: str | Path, what: str, hint: str = "") -> pd.DataFrame:
    """A Parquet table; MissingFileError or RecordError (exit 2) naming `what` and the file, `hint` appended."""
    import pandas as pd
    import pyarrow as pa

    path = require_file(path, what)
    try:
        return pd.read_parquet(path)
    except (pa.ArrowException, ValueError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:  # the machine (EIO, EACCES), not the file's format
            raise
        raise RecordError(f"{what} {path}: not a readable Parquet table: {_looks_like(path)} ({_reason(exc)}){hint}") from None


def read_csv(path: str | Path, what: str, **options: Any) -> pd.DataFrame:
    """A CSV table (``options`` go to pandas.read_csv); RecordError (exit 2) naming `what` and the file."""
    import pandas as pd

    path = require_file(path, what)
    try:
        return pd.read_csv(path, **options)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise RecordError(f"{what} {path}: not a readable CSV table ({_reason(exc)})") from None


def read_json(path: str | Path, what: str, *, text_only: bool = True) -> Any:
    """A JSON document, strictly (module docstring); RecordError (exit 2) naming `what`, the file and the place.

    ``text_only=False`` lets lone surrogates through, for a reader that neither hashes nor writes the strings
    (the official-compatible scorer scores what the original scores)."""
    path = require_file(path, what)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except RecursionError:  # the decoder's depth bound (the interpreter's recursion limit)
        raise RecordError(f"{what} {path}: JSON nested deeper than {sys.getrecursionlimit()} levels") from None
    except json.JSONDecodeError as exc:
        raise RecordError(f"{what} {path}: not valid JSON ({exc})") from None
    except UnicodeDecodeError as exc:
        raise RecordError(f"{what} {path}: not UTF-8 text ({exc})") from None
    if text_only and _SURROGATE_ESCAPE.search(text):  # a pair (an emoji written as \ud83d\ude00) is fine: look closer
        where = _lone_surrogate(data)
        if where is not None:
            raise RecordError(f"{what} {path}: {where}: a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its "
                              "pair) is not text; fix or remove that escape")
    return data


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where the first string holding a lone surrogate stands (``record 3, field 'question'``), or None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "the document"
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            field = _join(where, f"field {key!r}")
            found = _lone_surrogate(key, field) or _lone_surrogate(item, field)
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _lone_surrogate(item, _join(where, f"item {i}" if where else f"record {i}"))
            if found:
                return found
    return None


def _join(where: str, part: str) -> str:
    return f"{where}, {part}" if where else part


def _looks_like(path: Path) -> str:
    """What the file seems to be instead, from its first bytes."""
    with path.open("rb") as f:
        head = f.read(64).lstrip()
    if not head:
        return "the file is empty"
    if head[:1] in (b"[", b"{"):
        return "it holds JSON text"
    if head.startswith(b"PAR1"):
        return "a Parquet file cut short or damaged"
    return "not Parquet data"


def _reason(exc: BaseException) -> str:
    """The library's own first line, without the path it repeats."""
    return f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
