"""Every error probmed reports (rather than crashes on) derives from one root, `ProbmedError`.

The CLI catches `ProbmedError` once: it prints the message (which names the
key, file, record or field at fault) as one line, without a traceback, and
exits with the error's `exit_code`. Exit codes mean one thing each:

* 0: done;
* 1: done, but some questions failed after every retry (the table is written);
* 2: a user or input error (`ProbmedError` and most subclasses);
* 3: an environment error (`EnvironmentFailure`: disk full, a corrupt database);
* 4: an internal error, i.e. a bug in probmed (printed with its traceback).

The subclasses only say which stage raised; several also derive from the
built-in type they replaced, so `except ValueError` / `except FileNotFoundError`
code keeps catching them.
"""

from __future__ import annotations

from collections.abc import Iterable

EXIT_OK = 0
EXIT_FAILED_QUESTIONS = 1
EXIT_USER_ERROR = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERNAL = 4


class ProbmedError(Exception):
    """A problem the user can fix: bad input, bad configuration, an unusable endpoint."""

    exit_code: int = EXIT_USER_ERROR


class EnvironmentFailure(ProbmedError):
    """The machine, not the input, stopped the work (disk full, a corrupt database): exit 3."""

    exit_code = EXIT_ENVIRONMENT


class DiskFullError(EnvironmentFailure, OSError):
    """No space left where probmed writes; the message says what is safe on disk and what remains."""


class DatabaseError(EnvironmentFailure):
    """A database probmed reads or writes (the MLflow tracking DB) is empty, corrupt or unreadable."""


class LostTaskError(EnvironmentFailure):
    """A task of the Ray engine kept dying with its worker or node; the answers that arrived are stored."""


class StoreLockedError(ProbmedError):
    """Another process holds the answer store file this run would write (its pid is in the message)."""


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


def did_you_mean(name: str, choices: Iterable[object]) -> str:
    """' (did you mean 'x'?)' for the nearest of `choices` to a misspelt `name`, or ''; every "unknown ..."
    message ends with it, so a typo is fixed from the message alone."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
