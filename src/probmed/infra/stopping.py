"""The signal that a command stopped because it was asked to (Ctrl-C, SIGTERM, the process that started it gone).

Its own module, importing nothing, so the CLI can catch it at every start without importing the stop machinery
(probmed.infra.process: threading, signal), which only `predict` and `describe` run.
"""

from __future__ import annotations


class Stopped(BaseException):
    """The run stopped on request, with every answer received stored; the message says what is stored and what
    remains. A BaseException, so no ``except Exception`` in a backend swallows it; `exit_code` is 128 + the signal
    (130 after Ctrl-C, 143 after SIGTERM or when the parent is gone)."""

    def __init__(self, message: str, exit_code: int = 143) -> None:
        super().__init__(message)
        self.exit_code = exit_code
