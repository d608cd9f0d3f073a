"""An exclusive, process-lifetime lock on a file, that names its holder.

`flock` on a small sidecar file (never the data file, so the data file can be
replaced atomically while the lock is held). The kernel drops the lock when
the holder dies, however it dies (SIGKILL included), so a lock is never stale;
the holder writes its pid into the file so a second process can say who holds
it. A clean release deletes the file (so none is left among DVC outputs);
since a waiter may then hold a lock on the deleted file, `acquire` checks that
the file it locked is still the one at the path, and tries again if not.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Callable

from probmed.core.errors import ProbmedError


class FileLock:
    """``with FileLock(path, what, wait_s=0):`` or ``acquire()`` / ``release()``.

    ``wait_s``: 0 fails at once when another process holds the lock; a positive
    number waits up to that many seconds; None waits as long as it takes.
    ``error``: the ProbmedError subclass raised when the lock cannot be had.
    """

    def __init__(self, path: str | Path, what: str, wait_s: float | None = 0.0,
                 error: type[ProbmedError] = ProbmedError, on_wait: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.what = what
        self.wait_s = wait_s
        self.error = error
        self.on_wait = on_wait
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> str:
        """The pid the current holder wrote (or '?' when it has not yet)."""
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def acquire(self) -> "FileLock":
        if self._fd is not None:
            return self
        deadline = None if self.wait_s is None else time.monotonic() + float(self.wait_s)
        told = False
        while True:
            self.path.parent.mkdir(parents=True, exist_ok=True)  # each time: a failed holder removes a folder it made
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # removed between the two calls: make it again
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if deadline is not None and time.monotonic() >= deadline:
                    waited = f" (waited {self.wait_s:g} s)" if self.wait_s else ""
                    raise self.error(
                        f"{self.what} is in use by another process (pid {self.holder()}){waited}: let it finish or "
                        "stop it (a second writer would ask or log everything again)"
                    ) from None
                if not told and self.on_wait is not None:
                    self.on_wait(f"waiting for {self.what}, held by pid {self.holder()}")
                    told = True
                time.sleep(0.1)
                continue
            if self._is_current(fd):
                break
            os.close(fd)  # we locked a file its holder deleted on release: lock the one at the path now
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def _is_current(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    def release(self) -> None:
        if self._fd is not None:
            try:
                self.path.unlink(missing_ok=True)  # while still held: nobody can lock this file and keep it
            except OSError:
                pass
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
