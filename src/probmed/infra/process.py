"""Stopping a long command without losing what it paid for: on a signal, or when the process that started it dies.

:func:`stop_on_signals`: the first SIGINT (Ctrl-C) or SIGTERM sets :data:`STOP`:
backends start no new request, the answers in flight arrive and are stored,
and the run loop raises :class:`Stopped` saying how many answers are stored
and how many remain (:func:`stopped`); the command exits 130 or 143 with that
one line, no traceback. A second signal sets :data:`ABANDON`: the requests in
flight are given up (an API backend cancels them in its event loop; a local
model computing is interrupted at once).

:func:`exit_with_parent`, inside it: `dvc repro` runs each stage as a child
(``$SHELL -c "probmed predict ..."``). When `dvc` itself is killed (SIGKILL,
an OOM kill), its child is not: it would go on paying for answers while the
next `dvc repro` starts a second writer. The watch follows the parent (and,
when the parent is the shell DVC runs the command through, the shell's
parent); when one of them is gone it sets STOP as a signal would, and after
``grace_s`` sends this process SIGTERM, which then abandons what is in flight.
Either way every answer received is in the store and none is paid twice.

Polling ``/proc`` (or ``getppid()`` where there is no ``/proc``) rather than
``prctl(PR_SET_PDEATHSIG)``: the death signal follows the parent *thread*, and
it would not see through the intermediate shell.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from probmed.infra.stopping import Stopped

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish", "ksh"})
STOP = threading.Event()  # ask nothing new, let what is in flight arrive
ABANDON = threading.Event()  # a second request to stop: give up what is in flight too
_SIGNALS = {signal.SIGINT: "interrupted (Ctrl-C)", signal.SIGTERM: "terminated (SIGTERM)"}
_reason: list[str] = [""]
_exit_code: list[int] = [128 + signal.SIGTERM]


def stop_reason() -> str:
    """Why STOP was set (which signal, which parent exited), for the Stopped message."""
    return _reason[0] or "stop requested"


def _request_stop(reason: str, exit_code: int) -> None:
    _reason[0], _exit_code[0] = reason, exit_code
    STOP.set()


def stopped(detail: str) -> Stopped:
    """The Stopped of this stop: its reason, then `detail` (what is stored, what remains, how to resume)."""
    return Stopped(f"{stop_reason()}; {detail}", _exit_code[0])


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM stop the run as the module says: the first lets what is in flight
    arrive, the next abandons it. Outside the main thread (no signal handlers there) the block runs unwatched."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(signum, frame):  # noqa: ANN001 - signal handler signature
        if not STOP.is_set():
            _request_stop(_SIGNALS[signal.Signals(signum)], 128 + signum)
            return
        ABANDON.set()
        if not _in_event_loop():  # a local model computing: nothing in flight is paid for, stop now
            raise stopped("stopped at once; every answer stored before is on disk, run the same command again "
                          "to ask the rest")

    previous = {sig: signal.signal(sig, on_signal) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        STOP.clear()
        ABANDON.clear()
        _reason[0], _exit_code[0] = "", 128 + signal.SIGTERM


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
    """Within the block (itself inside :func:`stop_on_signals`), the death of the parent sets STOP, then (after
    `grace_s`) sends this process SIGTERM, which abandons what is still in flight.

    Outside the main thread the block runs unwatched.
    """
    if threading.current_thread() is not threading.main_thread() or os.getppid() <= 1:
        yield
        return
    pairs = watched_ancestors()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(poll_s):
            if not ancestors_alive(pairs):
                _request_stop(f"parent process {pairs[-1][1]} exited", 128 + signal.SIGTERM)
                if not done.wait(grace_s):
                    os.kill(os.getpid(), signal.SIGTERM)
                return

    thread = threading.Thread(target=watch, name="probmed-parent-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
