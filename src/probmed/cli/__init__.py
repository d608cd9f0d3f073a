"""The `probmed` command: one sub-command per pipeline stage, each thin.

Every area registers its sub-commands in its own module under probmed.cli;
handlers parse arguments, call the library and print. Errors the user can fix
(bad input, bad config) print one clear line and exit non-zero.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# Modules under probmed.cli that define `register(subparsers)`.
COMMAND_MODULES: tuple[str, ...] = (
    "scoring",
    "curation",
    "predicting",
    "pipeline",
    "finetuning",
)


class UserError(Exception):
    """An error caused by the user's input or configuration: no traceback, exit 2."""


def add_params_arguments(p: argparse.ArgumentParser, example: str = "seed=1") -> None:
    """`--params FILE` and trailing dotted ``key=value`` overrides: the same on every command."""
    p.add_argument("overrides", nargs="*", help=f"dotted params overrides, e.g. {example}")
    p.add_argument("--params", default="params.yaml", help="parameter file (default params.yaml)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="probmed", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"probmed.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"probmed.cli.{name}":
                continue  # area not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from probmed.core.config import ConfigError
    from probmed.core.records import RecordError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except (UserError, ConfigError, RecordError, FileNotFoundError) as exc:
        print(f"probmed {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"probmed {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
