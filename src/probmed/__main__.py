"""`python -m probmed`: the same entry point as the `probmed` console script."""

from probmed.cli import run

run()
