"""The `probmed` command: one sub-command per pipeline stage, each thin.

Every area registers its sub-commands in its own module under probmed.cli;
handlers parse arguments, call the library and print. Every command takes
`--params FILE` and dotted `key=value` overrides anywhere on its line
(probmed.cli.options); the merged params are checked against the schema before
the command runs, so a misspelt key or a wrong type stops it before any work.
Every `ProbmedError` prints one clear line and exits with its code (2: bad
input, bad config, an unusable endpoint; 3: the environment, e.g. a full disk
or a corrupt database); an OS error that is the machine's (no space, read-only
or failing disk) is an environment error too. Anything else is a bug: `run`
(the console script) prints its traceback and exits 4, so exit 1 keeps its one
meaning ("some questions failed after every retry"). The codes are listed in
probmed.core.errors.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
import traceback
from typing import Sequence

from probmed.cli.options import add_params_to_leaves, load_command_params, parse_with
from probmed.core.errors import EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_USER_ERROR, ProbmedError
from probmed.infra.stopping import Stopped

# OS errors that say the machine cannot go on (exit 3), not that an input is wrong.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.ENOMEM, errno.EFBIG})

# Modules that define `register(subparsers)`, in the order `probmed --help` lists them. Each module's
# register() is the one place its commands are declared; nothing else lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "probmed.cli.scoring",
    "probmed.cli.curation",
    "probmed.cli.predicting",
    "probmed.cli.models",
    "probmed.cli.pipeline",
    "probmed.cli.finetuning",
    "probmed.cli.audit",
    "probmed.cli.release",
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `probmed` parser: modules register in COMMAND_MODULES order, up to the one that declares `command`
    (every module for help or an unknown command), so `probmed COMMAND` imports no command module after its own.
    Command modules import their libraries inside the handlers: registering one costs milliseconds."""
    parser = argparse.ArgumentParser(prog="probmed", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
        if command is not None and command in sub.choices:
            break
    add_params_to_leaves(parser)
    return parser


def commands() -> dict[str, str]:
    """Every command -> the module whose register() declares it, read from the register() calls themselves."""
    sub = argparse.ArgumentParser().add_subparsers()
    owner: dict[str, str] = {}
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
        owner.update({command: name for command in sub.choices if command not in owner})
    return owner


def parse_command(argv: Sequence[str]) -> argparse.Namespace:
    """The parsed command line of one `probmed` command (its handler in ``args.func``), params not yet loaded."""
    argv = list(argv)
    return parse_with(build_parser(argv[0] if argv and not argv[0].startswith("-") else None), argv)


def quiet_libraries() -> None:
    """No third-party chatter in the logs: MLflow's INFO lines, and Hugging Face bars off a terminal.

    Set before those libraries are imported (they read the environment then).
    Warnings stay: they mean something is wrong. probmed's own progress is
    probmed.infra.progress (a bar on a terminal, periodic lines in a log).
    """
    from probmed.infra.progress import interactive

    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    if not interactive():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one sub-command on `argv` (default: the command line) and return its exit code; errors become messages."""
    quiet_libraries()
    args = parse_command(list(sys.argv[1:] if argv is None else argv))
    try:
        load_command_params(args)
        result = args.func(args)
    except ProbmedError as exc:
        kind = "environment error" if exc.exit_code == EXIT_ENVIRONMENT else "error"
        print(f"probmed {args.command}: {kind}: {_one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        if exc.errno in ENVIRONMENT_ERRNOS:
            print(f"probmed {args.command}: environment error: {_one_line(exc)}", file=sys.stderr)
            return EXIT_ENVIRONMENT
        if isinstance(exc, PermissionError):
            print(f"probmed {args.command}: error: {_one_line(exc)}", file=sys.stderr)
            return EXIT_USER_ERROR
        raise
    except Stopped as exc:
        print(f"probmed {args.command}: stopped: {_one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"probmed {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def run() -> None:
    """The console script: `main`, with a bug reported as exit 4 (and its traceback), never as exit 1."""
    try:
        code = main()
    except Exception:  # noqa: BLE001 - the one place a bug is turned into an exit code
        traceback.print_exc()
        print("probmed: internal error (a bug in probmed, not in your input); please report the traceback above",
              file=sys.stderr)
        code = EXIT_INTERNAL
    sys.exit(code)


if __name__ == "__main__":
    run()
