"""The process lock: one holder at a time, named in the error, released (and its file deleted) on close."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from probmed.core.errors import StoreLockedError
from probmed.infra.filelock import FileLock

COUNT = textwrap.dedent("""
    import sys
    from pathlib import Path
    from probmed.infra.filelock import FileLock
    counter = Path(sys.argv[1])
    for _ in range(int(sys.argv[2])):
        with FileLock(counter.with_suffix(".lock"), "counter", wait_s=None):
            n = int(counter.read_text() or 0) if counter.exists() else 0
            counter.write_text(str(n + 1))  # a lost update shows up as a short count
""")


def test_contending_processes_never_hold_the_lock_together(tmp_path):
    """Releasing deletes the lock file; a waiter that then locked the deleted file must not run beside a
    newcomer that locked the new one."""
    counter = tmp_path / "counter.txt"
    procs = [subprocess.Popen([sys.executable, "-c", COUNT, str(counter), "60"]) for _ in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert counter.read_text() == "240"
    assert not (tmp_path / "counter.lock").exists()


def test_the_holder_is_named_and_the_file_goes_on_release(tmp_path):
    first = FileLock(tmp_path / ".x.lock", "answer store x", error=StoreLockedError).acquire()
    with pytest.raises(StoreLockedError, match=r"answer store x is in use by another process \(pid \d+\)"):
        FileLock(tmp_path / ".x.lock", "answer store x", error=StoreLockedError).acquire()
    first.release()
    assert not (tmp_path / ".x.lock").exists()
    with FileLock(tmp_path / ".x.lock", "answer store x", error=StoreLockedError):
        pass
