"""Progress reads well in a log: periodic single lines, no carriage returns; a terminal keeps its tqdm bar."""

from __future__ import annotations

import io
from pathlib import Path

import probmed
from probmed.infra import progress as progress_module
from probmed.infra.progress import LineProgress, progress


def test_a_log_gets_periodic_lines_and_a_last_one_never_a_carriage_return():
    out = io.StringIO()
    bar = LineProgress(total=4, desc="predict[tiny/vanilla]", unit="q", interval_s=0.0, stream=out)
    for _ in range(4):
        bar.update(1)
    bar.set_postfix(cached=0, failed=1)
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines[0].startswith("predict[tiny/vanilla]: 1/4 q (25%), ") and lines[-1].endswith("(done)")
    assert "cached=0, failed=1" in lines[-1] and "4/4 q (100%)" in lines[-1]


def test_short_work_stays_silent_and_disabled_bars_print_nothing():
    out = io.StringIO()
    for item in LineProgress(range(50), desc="images", interval_s=3600, stream=out):
        pass
    with LineProgress(total=3, desc="x", interval_s=0.0, disable=True, stream=out) as bar:
        bar.update(3)
    assert out.getvalue() == ""


def test_the_bar_follows_the_terminal(monkeypatch):
    monkeypatch.setattr(progress_module, "interactive", lambda stream=None: False)
    assert isinstance(progress(range(3), desc="d"), LineProgress)
    monkeypatch.setattr(progress_module, "interactive", lambda stream=None: True)
    assert type(progress(range(3), desc="d", disable=True)).__name__ == "tqdm"


def test_no_module_draws_its_own_tqdm_bar():
    """Every bar goes through probmed.infra.progress, so none redraws itself into a log file."""
    root = Path(probmed.__file__).parent
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.name != "progress.py" and "from tqdm import" in p.read_text(encoding="utf-8")]
    assert offenders == []
