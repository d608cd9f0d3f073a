"""Golden outputs: the smoke-scale pipeline writes byte-identical files to tests/golden.

The goldens were first captured from the code before the restructuring into
packages; every behaviour-preserving change must keep them. A deliberate change
(new question rules, a new metric) regenerates them with
``.venv/bin/python tests/golden_smoke.py --write`` and commits the diff, which
then shows exactly what changed. See tests/golden_smoke.py for what is kept.
"""

from __future__ import annotations

import difflib
import re
import tempfile
from pathlib import Path

import pytest

import golden_smoke

REGENERATE = ".venv/bin/python tests/golden_smoke.py --write"


def _diff(name: str, expected: str | None, got: str | None, limit: int = 40) -> str:
    lines = list(difflib.unified_diff((expected or "").splitlines(), (got or "").splitlines(),
                                      f"golden/{name}", f"now/{name}", lineterm="", n=1))
    return "\n".join(lines[:limit] + ([f"... ({len(lines) - limit} more diff lines)"] if len(lines) > limit else []))


@pytest.mark.slow
def test_smoke_pipeline_matches_goldens(tmp_path, shared_data):
    outputs = golden_smoke.build(tmp_path)
    expected = golden_smoke.golden()
    assert expected, f"no golden files under {golden_smoke.GOLDEN_DIR}: run {REGENERATE}"
    differ = sorted(k for k in set(outputs) | set(expected) if outputs.get(k) != expected.get(k))
    if differ:
        shown = "\n\n".join(_diff(k, expected.get(k), outputs.get(k)) for k in differ[:3])
        pytest.fail(f"{len(differ)} of {len(expected)} golden outputs changed: {differ}\n\n{shown}\n\n"
                    f"If the change is deliberate, regenerate with: {REGENERATE}")


def test_goldens_hold_no_machine_paths_or_timings():
    """What the goldens must never contain: an absolute path, a temporary directory or a timing."""
    files = golden_smoke.golden()
    assert len(files) > 100
    for name in ("report/metrics.json", "questions/probmed.parquet.csv", "scores/probmed/tiny/vanilla/metrics.json"):
        assert name in files
    # the checkout's own location and the usual temporary/home roots, wherever the tests run
    roots = {str(Path(__file__).resolve().parents[1]), tempfile.gettempdir(), "/home/", "/Users/"}
    machine = re.compile("|".join(re.escape(r) for r in sorted(roots)) + r"|[A-Z]:\\\\|probmed-golden-")
    timing = re.compile(r'"(seconds|elapsed_s|latency_s|start_time|end_time|timestamp)"')
    for name, text in files.items():
        assert not machine.search(text), f"golden/{name} holds a machine path: {machine.search(text).group(0)}"
        assert not timing.search(text), f"golden/{name} holds a timing: {timing.search(text).group(0)}"
