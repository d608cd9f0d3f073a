"""The signal that a command must stop because the process that started it is gone.

Its own module, importing nothing, so the CLI can catch it at every start without importing the parent
watcher (probmed.infra.process: threading, signal), which only `predict` and `describe` run.
"""

from __future__ import annotations


class ParentExited(BaseException):
    """The process that started this one is gone; stop now (a BaseException, so no
    ``except Exception`` in a backend swallows it)."""
