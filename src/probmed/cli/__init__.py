"""The `probmed` command: one sub-command per pipeline stage, each thin.

Every area registers its sub-commands in its own module under probmed.cli;
handlers parse arguments, call the library and print. Errors the user can fix
(every `ProbmedError`: bad input, bad config, an unusable endpoint) print one
clear line and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from probmed.core.errors import ProbmedError

# Modules that define `register(subparsers)`, in the order `probmed --help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "probmed.cli.scoring",
    "probmed.cli.curation",
    "probmed.cli.predicting",
    "probmed.cli.models",
    "probmed.cli.pipeline",
    "probmed.cli.finetuning",
    "probmed.cli.audit",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="probmed", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = args.func(args)
    except ProbmedError as exc:
        print(f"probmed {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"probmed {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
