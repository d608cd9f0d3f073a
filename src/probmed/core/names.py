"""Names that become file or folder names: one rule for all of them.

A release's set name (``<out>/<name>/<version>/``), a question set
(``build/questions/<set>.parquet``), a model (its answer store
``<store_dir>/<model>/``, its table ``<model>-<setting>.parquet``) and a setting
are joined to an output folder. A name such as ``../../evil``, ``/``, a newline,
a quote or a leading dot would write outside that folder, hide what it writes,
or break the DVC stage whose command and paths it joins. So every such name is
a safe path component: ASCII letters, digits, ``.``, ``_`` and ``-``, starting
with a letter, digit or ``_``, at most :data:`MAX_NAME_LENGTH` characters. The
params schema checks names in parameters (``params_schema.Name``), the
commands check names they take as options (:func:`checked_name`), both against
:func:`is_safe_name`.
"""

from __future__ import annotations

import re
from typing import Any

from probmed.core.errors import UserError

MAX_NAME_LENGTH = 100
NAME_RULE = (f"a name of ASCII letters, digits, '.', '_' or '-' that starts with a letter, digit or '_' "
             f"(at most {MAX_NAME_LENGTH} characters; it becomes a file or folder name)")
_NAME = re.compile(rf"[A-Za-z0-9_][A-Za-z0-9._-]{{0,{MAX_NAME_LENGTH - 1}}}")


def is_safe_name(value: Any) -> bool:
    """Whether `value` may become one file or folder name (the module docstring's rule)."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def checked_name(value: str, what: str) -> str:
    """`value` if it is a safe name, else a UserError (exit 2) naming `what` (the option or key it came from)."""
    if not is_safe_name(value):
        raise UserError(f"{what} = {value!r}: expected {NAME_RULE}")
    return value
