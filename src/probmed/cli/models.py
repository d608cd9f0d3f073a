"""`probmed models` (what the registry holds and what each entry needs) and `probmed pin` (a hub
model's revision -> commit sha, written into params.yaml)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from probmed.cli.options import params_of
from probmed.core.errors import MissingFileError


def register(sub: argparse._SubParsersAction) -> None:
    """Add `models` and `pin` to the command line."""
    m = sub.add_parser("models", help="list the model registry (or a profile such as the paper's Table 3)")
    m.add_argument("--profile", help="a name under model_profiles (e.g. paper)")
    m.add_argument("--json", action="store_true", help="JSON lines instead of a Markdown table")
    m.set_defaults(func=cmd_models)

    p = sub.add_parser("pin", help="resolve a hub model's revision to a commit sha and write it into params.yaml")
    p.add_argument("model", help="a name under models: (a backend hf entry with a hub id)")
    p.add_argument("--revision", default="main", help="branch, tag or sha to resolve (default main)")
    p.set_defaults(func=cmd_pin)


def _read(path: str) -> dict[str, Any]:
    """The parameter file as written (no overrides): the file `pin` edits."""
    from probmed.core.config import read_yaml_12

    if not Path(path).is_file():
        raise MissingFileError(f"parameter file {path} not found")
    return read_yaml_12(path) or {}


def cmd_models(args: argparse.Namespace) -> int:
    """Print the model registry, or a named profile of it, as a Markdown table or JSON lines."""
    import pandas as pd

    from probmed.core.markdown import markdown_table
    from probmed.inference.models.catalog import profile_rows, registry_rows

    params = params_of(args)
    if args.profile:
        rows = profile_rows(params.models, params.model_profiles, args.profile)
    else:
        rows = registry_rows(params.models)
    if args.json:
        print("\n".join(json.dumps(r) for r in rows))
    else:
        print(markdown_table(pd.DataFrame(rows)), end="")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    """Resolve the model's hub revision to a commit sha and write it into the parameter file."""
    from probmed.core.params_edit import set_param
    from probmed.core.params_schema import parse_params
    from probmed.inference.models.hub import pinnable, resolve_revision

    path = args.params or "params.yaml"  # the file to update (--params, as every command takes)
    model_id = pinnable(parse_params(_read(path)).models, args.model)
    sha = resolve_revision(args.model, model_id, args.revision)
    changed = set_param(path, ["models", args.model, "revision"], sha)
    print(json.dumps({"model": args.model, "model_id": model_id, "revision": args.revision, "sha": sha,
                      "params": path, "changed": changed}))
    return 0
