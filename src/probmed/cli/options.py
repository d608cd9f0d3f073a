"""Arguments every command shares."""

from __future__ import annotations

import argparse


def add_params_arguments(p: argparse.ArgumentParser, example: str = "seed=1") -> None:
    """`--params FILE` and trailing dotted ``key=value`` overrides: the same on every command."""
    p.add_argument("overrides", nargs="*", help=f"dotted params overrides, e.g. {example}")
    p.add_argument("--params", default="params.yaml", help="parameter file (default params.yaml)")
