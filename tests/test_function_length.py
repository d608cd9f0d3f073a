"""No function in src/probmed is over 80 lines, except the original scorer's transcription.

The official scorer (scoring/official.py: score_official_naive) is kept loop for loop as the original
release wrote it, so that its bit-exactness can be read against the original; everything else is split.
"""

from __future__ import annotations

import ast
from pathlib import Path

import probmed

PACKAGE_DIR = Path(probmed.__file__).parent
MAX_LINES = 80
ALLOWED = {("scoring/official.py", "score_official_naive")}


def long_functions() -> dict[tuple[str, str], int]:
    out = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    out[(path.relative_to(PACKAGE_DIR).as_posix(), node.name)] = lines
    return out


def test_no_function_over_80_lines_but_the_original_scorer():
    found = long_functions()
    assert set(found) - ALLOWED == set(), {k: v for k, v in found.items() if k not in ALLOWED}
