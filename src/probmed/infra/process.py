"""A long command that must not outlive the process that started it.

`dvc repro` runs each stage as a child (``$SHELL -c "probmed predict ..."``).
When `dvc` itself is killed (SIGKILL, an OOM kill), its child is not: it would
go on paying for answers while the next `dvc repro` starts a second writer.
:func:`exit_with_parent` watches the parent (and, when the parent is the
shell DVC runs the command through, the shell's parent). When one of them is
gone it sets :data:`STOP`: backends start no new request, the answers in
flight arrive and are stored, and the run loop raises :class:`ParentExited`.
If that takes longer than ``grace_s``, SIGTERM raises it in the main thread.
Either way every answer received is in the store and none is paid twice.

Polling ``/proc`` (or ``getppid()`` where there is no ``/proc``) rather than
``prctl(PR_SET_PDEATHSIG)``: the death signal follows the parent *thread*, and
it would not see through the intermediate shell.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from probmed.infra.stopping import ParentExited  # noqa: F401 (re-exported)

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh"})
STOP = threading.Event()  # set when the parent is gone: ask nothing new, let what is in flight arrive
_reason: list[str] = [""]


def stop_reason() -> str:
    """Why STOP was set (which parent exited), for the ParentExited message."""
    return _reason[0] or "stop requested"


def _stat(pid: int) -> tuple[str, int] | None:
    """(command name, parent pid) of a live process, from /proc; None if it is gone or unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1 : text.rindex(")")]
    fields = text[text.rindex(")") + 2 :].split()
    if fields and fields[0] in ("Z", "X"):  # a zombie is gone for our purpose
        return None
    return name, int(fields[1])


def watched_ancestors() -> list[tuple[int, int]]:
    """(pid, its parent) pairs to watch: our parent, and while that is a shell, the shell's parent."""
    pairs = [(os.getpid(), os.getppid())]
    pid = os.getppid()
    for _ in range(3):
        info = _stat(pid)
        if info is None or info[0] not in SHELLS or info[1] <= 1:
            break
        pairs.append((pid, info[1]))
        pid = info[1]
    return pairs


def ancestors_alive(pairs: list[tuple[int, int]]) -> bool:
    """True while every watched process still has the parent it had when the watch began."""
    for pid, parent in pairs:
        if pid == os.getpid():
            if os.getppid() != parent:
                return False
            continue
        info = _stat(pid)
        if info is not None and info[1] != parent:
            return False
        if info is None and Path("/proc/self").exists():
            return False
    return True


@contextmanager
def exit_with_parent(poll_s: float = 0.5, grace_s: float = 60.0) -> Iterator[None]:
    """Within the block, the death of the parent sets STOP, then (after `grace_s`) raises ParentExited
    in the main thread; SIGTERM raises it at once.

    Outside the main thread (no signal handlers there) the block runs unwatched.
    """
    if threading.current_thread() is not threading.main_thread() or os.getppid() <= 1:
        yield
        return
    pairs = watched_ancestors()
    done = threading.Event()

    def on_term(signum, frame):  # noqa: ANN001 - signal handler signature
        raise ParentExited(stop_reason() if STOP.is_set() else "terminated (SIGTERM)")

    def watch() -> None:
        while not done.wait(poll_s):
            if not ancestors_alive(pairs):
                _reason[0] = f"parent process {pairs[-1][1]} exited"
                STOP.set()
                if not done.wait(grace_s):
                    os.kill(os.getpid(), signal.SIGTERM)
                return

    previous = signal.signal(signal.SIGTERM, on_term)
    thread = threading.Thread(target=watch, name="probmed-parent-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        signal.signal(signal.SIGTERM, previous)
        STOP.clear()
        _reason[0] = ""
