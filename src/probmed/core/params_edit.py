"""Change one value in params.yaml without touching anything else.

params.yaml is written by people: comments explain keys, entries are laid out by
hand. A YAML round-trip would reflow it, so a command that records a value
(`probmed pin` writing a commit sha) edits the one line that holds it, inserts
the line if the key is missing, then re-reads the file to prove that exactly
that key changed before replacing the file atomically.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Sequence

from probmed.core.config import read_yaml_12
from probmed.core.errors import ConfigError
from probmed.infra.io import atomic_path


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _is_content(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _key_line(lines: list[str], start: int, end: int, key: str) -> tuple[int | None, int | None]:
    """(line index of `key:` among the direct children of lines[start:end], the children's indent)."""
    pattern = re.compile(rf"""^(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*:(?:\s|$)""")
    child_indent = None
    for i in range(start, end):
        if not _is_content(lines[i]):
            continue
        ind = _indent(lines[i])
        if child_indent is None:
            child_indent = ind
        if ind == child_indent and pattern.match(lines[i].lstrip(" ")):
            return i, child_indent
    return None, child_indent


def _block_end(lines: list[str], header: int) -> int:
    """The index after the last line nested under the mapping key on line `header`."""
    ind = _indent(lines[header])
    for i in range(header + 1, len(lines)):
        if _is_content(lines[i]) and _indent(lines[i]) <= ind:
            return i
    return len(lines)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9_./@+-]+", text) and not re.fullmatch(r"(?i)true|false|null|~|[0-9.e+-]+", text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def set_value_in_text(text: str, keys: Sequence[str], value: Any) -> str:
    """`text` with the block-style scalar at the key path `keys` set to `value` (trailing comment kept).

    A path, not a dotted string: model names such as "llava-1.5" contain dots.
    """
    keys = list(keys)
    dotted_key = ".".join(keys)
    lines = text.splitlines(keepends=True)
    start, end = 0, len(lines)
    for depth, key in enumerate(keys):
        found, child_indent = _key_line(lines, start, end, key)
        last = depth == len(keys) - 1
        if found is None and last and start > 0:
            ind = child_indent if child_indent is not None else _indent(lines[start - 1]) + 2
            lines.insert(end, " " * ind + f"{key}: {_yaml_scalar(value)}\n")
            return "".join(lines)
        if found is None:
            raise ConfigError(f"params: key {'.'.join(keys[: depth + 1])!r} not found (block-style YAML expected)")
        if last:
            m = re.match(r"^(\s*[^:]+:[ \t]*)([^#\n]*?)([ \t]+#[^\n]*)?(\r?\n)?$", lines[found])
            if m is None or m.group(2).startswith(("{", "[", "|", ">")) or (not m.group(2) and found + 1 < end
                                                                           and _block_end(lines, found) > found + 1):
                raise ConfigError(f"params: {dotted_key} is not a plain value on one line; edit it by hand")
            lines[found] = _with_value(lines[found], m, _yaml_scalar(value))
            return "".join(lines)
        if lines[found].split(":", 1)[1].split("#", 1)[0].strip():
            raise ConfigError(f"params: {'.'.join(keys[: depth + 1])} is written inline (flow style); "
                              "edit it by hand")
        start, end = found + 1, _block_end(lines, found)
    raise AssertionError("unreachable")


def _with_value(line: str, m: re.Match, value: str) -> str:
    """`key: value`, its comment kept at its column (one space after the value when it no longer fits).

    That is how `dvc exp run -S` writes a changed value (DVC's YAML round trip keeps
    a comment's column), so a pinned params.yaml stays in DVC's own layout.
    """
    head = m.group(1).rstrip(" \t") + " "
    comment = (m.group(3) or "").lstrip(" \t")
    text = head + value
    if comment:
        column = m.end(3) - len(comment)  # where its '#' stands now
        text += " " * max(1, column - len(text)) + comment
    return text + (m.group(4) or "")


def _with(tree: Any, keys: list[str], value: Any) -> Any:
    out = dict(tree)
    out[keys[0]] = value if len(keys) == 1 else _with(tree.get(keys[0]) or {}, keys[1:], value)
    return out


def set_param(path: str | Path, keys: Sequence[str], value: Any) -> bool:
    """Write `value` at the key path `keys` into the params file; False when it already held it. Atomic."""
    path = Path(path)
    before = read_yaml_12(path)
    text = path.read_text(encoding="utf-8")
    new_text = set_value_in_text(text, keys, value)
    if new_text == text:
        return False
    with atomic_path(path) as tmp:  # checked before it replaces the file
        tmp.write_text(new_text, encoding="utf-8")
        if read_yaml_12(tmp) != _with(before, list(keys), value):
            raise ConfigError(f"params: setting {'.'.join(keys)} would change other keys of {path}; edit it by hand")
    return True
