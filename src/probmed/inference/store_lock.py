"""One way of splitting the questions per answer store at a time.

A model's store directory holds ``answers.jsonl`` (an unsharded run) or ``shard-iii-of-NNN.jsonl`` files
(``--shard i/N``). The shards of one N claim disjoint images, so they may write at once (several
processes or GPUs sharing a run); two runs that split the questions differently (unsharded and
``--shard 0/2``, or ``0/2`` and ``0/3``) share questions, and both would pay for them. So a writer
holds, for its whole life, a shared ``flock`` on ``.sharding-N.lock``, taken only after checking, under
the store's gate (``.store.lock``, held for the check alone), that nobody holds the lock of another N.
The answer store's per-file lock still keeps two writers off one file. The kernel drops a dead
holder's locks; lock files are removed by the last holder to leave (none is left among DVC outputs).
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from pathlib import Path
from typing import Callable

from probmed.core.errors import StoreLockedError
from probmed.infra.filelock import FileLock

_SHARD_FILE = re.compile(r"^shard-\d+-of-(\d+)\.jsonl$")
_SHARDING_LOCK = re.compile(r"^\.sharding-(\d+)\.lock$")


def sharding_of(file_name: str) -> int:
    """N of a store file ``shard-i-of-N.jsonl``; 1 for any other file (an unsharded run)."""
    m = _SHARD_FILE.match(file_name)
    return int(m.group(1)) if m else 1


def _held_by_other(path: Path) -> bool:
    """True when another process holds a lock on ``path``; a stale file (its holder died) is removed."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    path.unlink(missing_ok=True)  # nobody holds it (the gate keeps anyone from taking it meanwhile)
    return False


class ShardingLock:
    """``acquire()`` / ``release()``: this process writes ``directory`` as one of the shards of ``count``."""

    def __init__(self, directory: str | Path, count: int, wait_s: float | None = 0.0,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self.dir = Path(directory)
        self.count = int(count)
        self.wait_s = wait_s
        self.on_wait = on_wait
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        return self.dir / f".sharding-{self.count}.lock"

    def _gate(self) -> FileLock:
        return FileLock(self.dir / ".store.lock", f"answer store {self.dir}", None, StoreLockedError)

    def _other_sharding(self) -> str | None:
        """Who else writes this store split another way ('an unsharded run (pid 12)'), or None."""
        for path in sorted(self.dir.glob(".sharding-*.lock")):
            m = _SHARDING_LOCK.match(path.name)
            if m and int(m.group(1)) != self.count and _held_by_other(path):
                n = int(m.group(1))
                files = ".answers.jsonl.lock" if n == 1 else f".shard-*-of-{n:03d}.jsonl.lock"
                pids = sorted({f.read_text().strip() for f in self.dir.glob(files) if f.read_text().strip()})
                run = "an unsharded run" if n == 1 else f"a run with --shard i/{n}"
                return f"{run} (pid {', '.join(pids) or '?'})"
        return None

    def acquire(self) -> ShardingLock:
        if self._fd is not None:
            return self
        self.dir.mkdir(parents=True, exist_ok=True)
        deadline = None if self.wait_s is None else time.monotonic() + float(self.wait_s)
        told = False
        while True:
            with self._gate():
                other = self._other_sharding()
                if other is None:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                    fcntl.flock(fd, fcntl.LOCK_SH)  # never blocks: only a holder at release takes it exclusively
                    self._fd = fd
                    return self
            mine = "an unsharded run" if self.count == 1 else f"--shard i/{self.count}"
            message = (f"answer store {self.dir} is in use by {other}; {mine} would ask the "
                       "questions the two share a second time: let it finish, or run with the same --shard N")
            if deadline is not None and time.monotonic() >= deadline:
                raise StoreLockedError(message)
            if not told and self.on_wait is not None:
                self.on_wait(f"waiting: {message}")
                told = True
            time.sleep(0.1)

    def release(self) -> None:
        if self._fd is None:
            return
        with self._gate():
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the last of this sharding to leave
                self.path.unlink(missing_ok=True)
            except BlockingIOError:
                pass  # other shards of this run still write
            os.close(self._fd)
            self._fd = None
