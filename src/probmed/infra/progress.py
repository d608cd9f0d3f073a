"""Progress of long work: a bar on a terminal, a one-line report now and then in a log file.

tqdm redraws its bar with carriage returns; written to a file (`dvc repro > log`,
CI, `| cat`) the redraws pile up into one unreadable line. :func:`progress`
gives a tqdm bar when stderr is a terminal and otherwise a :class:`LineProgress`
with the same small interface (``update``, ``set_postfix``, ``close``, a context
manager, iteration) that writes ``desc: n/total (p%), rate, postfix`` at most
every ``PROBMED_PROGRESS_INTERVAL`` seconds (default 30) and a last line when
the work took that long: short work stays silent, long work reads as a log.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Iterable, Iterator, TextIO

DEFAULT_INTERVAL_S = 30.0


def interactive(stream: TextIO | None = None) -> bool:
    """Whether progress goes to a terminal (where a redrawn bar is readable)."""
    stream = stream or sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "", unit: str = "it",
             initial: int = 0, disable: bool = False, leave: bool = True) -> Any:
    """A tqdm bar on a terminal, a :class:`LineProgress` otherwise (both silent when `disable`)."""
    if interactive():
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable, leave=leave)
    interval = float(os.environ.get("PROBMED_PROGRESS_INTERVAL", DEFAULT_INTERVAL_S))
    return LineProgress(iterable, total=total, desc=desc, unit=unit, initial=initial, disable=disable,
                        interval_s=interval)


class LineProgress:
    """Periodic one-line progress for logs: no carriage returns, no redraws."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "",
                 unit: str = "it", initial: int = 0, disable: bool = False, interval_s: float = DEFAULT_INTERVAL_S,
                 stream: TextIO | None = None) -> None:
        self.iterable = iterable
        self.total = total if total is not None or iterable is None else _length(iterable)
        self.desc, self.unit, self.n, self.disable = desc, unit, initial, disable
        self.interval_s = interval_s
        self.stream = stream or sys.stderr
        self.postfix = ""
        self.started = self.last = time.monotonic()
        self.initial = initial
        self.lines = 0
        self.closed = False

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update(1)
        self.close()

    def __enter__(self) -> "LineProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if not self.disable and now - self.last >= self.interval_s:
            self.last = now
            self._write(now)

    def set_postfix(self, ordered_dict: dict[str, Any] | None = None, refresh: bool = True, **kwargs: Any) -> None:
        items = {**(ordered_dict or {}), **kwargs}
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not self.disable and self.lines:  # long work ends with a line; short work stays silent
            self._write(time.monotonic(), done=True)

    def line(self, now: float | None = None) -> str:
        """The report as written: ``predict[tiny/vanilla]: 120/400 q (30%), 4.1 q/s, cached=0``."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        count = f"{self.n}/{self.total}" if self.total else str(self.n)
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        rate = (self.n - self.initial) / elapsed
        parts = [f"{self.desc}: {count} {self.unit}{share}", f"{rate:.1f} {self.unit}/s", f"{elapsed:.0f} s"]
        if self.postfix:
            parts.append(self.postfix)
        return ", ".join(parts)

    def _write(self, now: float, done: bool = False) -> None:
        self.lines += 1
        print(self.line(now) + (" (done)" if done else ""), file=self.stream, flush=True)


def _length(iterable: Iterable[Any]) -> int | None:
    try:
        return len(iterable)  # type: ignore[arg-type]
    except TypeError:
        return None
