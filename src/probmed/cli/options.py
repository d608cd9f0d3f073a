"""The parameter grammar every command shares: `--params FILE` and dotted ``key=value`` overrides.

Overrides may stand anywhere on the command line, before, between or after the
options and positional arguments (``probmed score Q P --out-dir X
score.bootstrap_resamples=200``): :func:`split_overrides` takes every token of
the form ``key=value`` out of the argument list before argparse sees it,
except the value of an option that takes one (``--out a=b.json`` stays a file
name; ``./a=b`` is never an override). The CLI then loads params.yaml, merges
the overrides and checks the result against the schema
(probmed.core.params_schema and the backends' typed configs) once, before the
command does any work.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from probmed.core.config import OVERRIDE_KEY, check_config, load_params, to_plain
from probmed.core.errors import ConfigError
from probmed.infra.cpu_kernels import use_portable_kernels

if TYPE_CHECKING:
    from probmed.core.params_schema import Params

DEFAULT_PARAMS = "params.yaml"


def add_params_arguments(p: argparse.ArgumentParser, example: str = "seed=1") -> None:
    """`--params FILE` and dotted ``key=value`` overrides: the same on every command."""
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help=f"dotted params overrides, anywhere on the line, e.g. {example}")
    p.add_argument("--params", default=None, help=f"parameter file (default {DEFAULT_PARAMS})")


def seed_option(text: str) -> int:
    """The type of every ``--seed`` option: an integer in the params schema's seed range (params_schema.Seed), so a
    seed numpy refuses stops the command at once (argparse: exit 2) instead of deep inside it."""
    from probmed.core.params_schema import Seed, conforms, describe

    value = int(text) if text.strip().lstrip("+-").isdigit() else None
    if value is None or not conforms(value, Seed):
        raise argparse.ArgumentTypeError(f"{text!r}: expected {describe(Seed)}")
    return value


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _values_taken(action: argparse.Action | None) -> int:
    """How many following tokens an option consumes for sure (its value), 0 for flags and open-ended lists."""
    if action is None:
        return 0
    if action.nargs is None:
        return 1
    return action.nargs if isinstance(action.nargs, int) else 0


def is_override(token: str) -> bool:
    """``key=value`` with a dotted key (``models.tiny.max_new_tokens=8``, ``score.subset_fractions[0]=0.5``)."""
    key, sep, _ = token.partition("=")
    return bool(sep) and OVERRIDE_KEY.match(key) is not None


def split_overrides(parser: argparse.ArgumentParser, argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(arguments for argparse, the ``key=value`` overrides in their order)."""
    rest: list[str] = []
    overrides: list[str] = []
    current = parser
    pending = 0
    for token in argv:
        if pending:
            rest.append(token)
            pending -= 1
        elif token == "--":
            rest.append(token)
        elif token.startswith("-") and len(token) > 1:
            if "=" not in token:
                pending = _values_taken(current._option_string_actions.get(token))
            rest.append(token)
        elif (sub := _subparsers(current)) is not None and token in sub.choices:
            current = sub.choices[token]
            rest.append(token)
        elif is_override(token):
            overrides.append(token)
        else:
            rest.append(token)
    return rest, overrides


def parse_with(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed by ``parser``, its dotted overrides (anywhere on the line) gathered in ``args.overrides``."""
    rest, overrides = split_overrides(parser, list(argv))
    args = parser.parse_args(rest)
    args.overrides = [*args.overrides, *overrides]  # a stray non-override token lands here and is rejected
    return args


def add_params_to_leaves(parser: argparse.ArgumentParser) -> None:
    """`--params` and overrides on every parser that runs a command and lacks them."""
    for leaf in _leaf_parsers(parser):
        if "params" not in {a.dest for a in leaf._actions}:
            add_params_arguments(leaf)


def _leaf_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parsers that run a command (`review export`, not `review`)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    return [leaf for sub in subs for child in dict.fromkeys(sub.choices.values()) for leaf in _leaf_parsers(child)]


def load_command_params(args: argparse.Namespace) -> None:
    """``args.cfg``: params.yaml (or --params) with the overrides, checked; the command's CPU kernels put in force
    before the models' check loads numpy. A command that reads no parameter (score-official) stays instant:
    params are checked when given."""
    reads = getattr(args, "reads_params", True) or args.params or args.overrides
    args.cfg = load_checked_params(args.params, args.overrides) if reads else None
    _select_cpu_kernels(args)
    if args.cfg is not None:
        check_models(args.cfg)


def _select_cpu_kernels(args: argparse.Namespace) -> None:
    """A command that computes with a model names the key that picks its CPU kernels (`cpu_kernels_of`);
    they are put in force here, before its handler imports torch or numpy (probmed.infra.cpu_kernels)."""
    kernels_of = getattr(args, "cpu_kernels_of", None)
    if kernels_of is None or args.cfg is None:
        return
    args.cpu_kernels = use_portable_kernels(kernels_of(params_of(args)))


def load_checked_params(path: str | None, overrides: Sequence[str]) -> Any:
    """params.yaml (or `path`) with the overrides merged, checked against the whole schema; None when absent.

    Without ``--params`` a missing params.yaml is fine for commands that read
    no parameter (they get None); overrides without a file to apply them to
    are an error. The `models:` entries are checked apart (:func:`check_models`): that check loads
    the backends, numpy with them, and the CPU kernels are chosen before numpy loads.
    """
    file = Path(path or DEFAULT_PARAMS)
    if path is None and not file.exists():
        if overrides:
            raise ConfigError(f"overrides {list(overrides)} given but there is no {file} to apply them to (use --params)")
        return None
    cfg = load_params(file, overrides)
    check_config(cfg)
    return cfg


def check_models(cfg: Any) -> None:
    """Every `models:` entry: a registered backend, and only keys of the right type that its typed config takes."""
    from probmed.inference.models.registry import check_model_entries

    check_model_entries(to_plain(cfg.get("models")) or {})


def command_params(args: argparse.Namespace) -> Any:
    """The checked params of this command; a ConfigError when the command needs them and there are none."""
    cfg = getattr(args, "cfg", None)
    if cfg is None:
        raise ConfigError(f"parameter file {args.params or DEFAULT_PARAMS} not found (run from the repository root or pass --params)")
    return cfg


def params_of(args: argparse.Namespace) -> Params:
    """The command's params as typed sections with every default filled in (probmed.core.params_schema).

    Parsed once per command and kept on `args`; a ConfigError when the command
    needs params and there are none.
    """
    from probmed.core.params_schema import parse_params

    typed = getattr(args, "typed_params", None)
    if typed is None:
        typed = parse_params(to_plain(command_params(args)))
        args.typed_params = typed
    return typed


def adhoc_path(args: argparse.Namespace, *parts: str) -> str:
    """Where a command run by hand writes when no option names its output: under ``paths.adhoc`` (layout.yaml),
    never the repository root nor a DVC stage's output (the stages name theirs on their command lines)."""
    return Path(params_of(args).paths.adhoc, *parts).as_posix()


def answering_kernels(params: Params) -> str:
    """The CPU kernels of a command whose models answer questions (`cpu_kernels_of` of predict, describe,
    audit and transfer): ``predict.cpu_kernels``."""
    return params.predict.cpu_kernels
