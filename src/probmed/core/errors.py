"""Every error a user can fix derives from one root, `ProbmedError`.

The CLI catches `ProbmedError` once: it prints the message (which names the
key, file, record or field at fault) and exits 2, without a traceback. Any
other exception is a bug in probmed and keeps its traceback. The subclasses
only say which stage raised; several also derive from the built-in type they
replaced, so `except ValueError` / `except FileNotFoundError` code keeps
catching them.
"""

from __future__ import annotations


class ProbmedError(Exception):
    """A problem the user can fix: bad input, bad configuration, an unusable endpoint."""


class UserError(ProbmedError):
    """A command-line argument (or combination) that cannot work."""


class ConfigError(ProbmedError, ValueError):
    """A parameter is missing or malformed; the message names the key."""


class RecordError(ProbmedError, ValueError):
    """A record is malformed; the message names the file, record and field."""


class MissingFileError(ProbmedError, FileNotFoundError):
    """An input file or directory is not there; the message names it (and the step that makes it)."""


class SourceError(ProbmedError, ValueError):
    """A raw data source is unusable as a whole (missing file, no usable record)."""


class BackendError(ProbmedError, RuntimeError):
    """A model backend cannot go on at all (bad credentials, unknown model, cannot load)."""


class EndpointUnreachableError(BackendError):
    """An API endpoint refused or dropped every connection, retries included."""


class ReportError(ProbmedError, ValueError):
    """The report cannot be built (no runs, bad metrics file); the message names the path."""


class ScoresError(ProbmedError, ValueError):
    """A score result (metrics.json) is missing or malformed; the message names the file and key."""


class TrackingError(ProbmedError, RuntimeError):
    """A run cannot be logged (missing input, bad metrics file); the message names the file."""


class FetchError(ProbmedError, RuntimeError):
    """The pinned data could not be fetched or does not match its pin."""
