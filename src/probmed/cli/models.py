"""`probmed models` (what the registry holds and what each entry needs) and `probmed pin` (a hub
model's revision -> commit sha, written into models.yaml, the registry beside params.yaml)."""

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

    p = sub.add_parser("pin", help="resolve a hub model's revision to a commit sha and write it into models.yaml")
    p.add_argument("model", help="a name under models: (a backend hf entry with a hub id)")
    p.add_argument("--revision", default="main", help="branch, tag or sha to resolve (default main)")
    p.set_defaults(func=cmd_pin)


def _read(path: str) -> dict[str, Any]:
    """The parameters as written (no overrides), with the registry files beside them."""
    from probmed.core.config import merge_registries, read_yaml_12

    if not Path(path).is_file():
        raise MissingFileError(f"parameter file {path} not found")
    data = read_yaml_12(path) or {}
    merge_registries(data, Path(path))
    return data


def _file_keeping_models(params_file: str) -> str:
    """models.yaml beside the parameter file when it has the `models:` registry, else the parameter file."""
    from probmed.core.config import read_yaml_12
    from probmed.core.params_schema import file_of

    registry = Path(params_file).parent / file_of("models")
    if registry.is_file() and "models" in (read_yaml_12(registry) or {}):
        return str(registry)
    return params_file


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
        print(markdown_table(pd.DataFrame(rows), markup=False), end="")  # a terminal: text as written, no entities
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    """Resolve the model's hub revision to a commit sha and write it into the parameter file."""
    from probmed.core.params_edit import set_param
    from probmed.core.params_schema import parse_params
    from probmed.inference.models.hub import pinnable, resolve_revision

    params_file = args.params or "params.yaml"  # --params, as every command takes
    path = _file_keeping_models(params_file)  # the file to update: models.yaml beside it, when there is one
    model_id = pinnable(parse_params(_read(params_file)).models, args.model)
    sha = resolve_revision(args.model, model_id, args.revision)
    changed = set_param(path, ["models", args.model, "revision"], sha)
    print(json.dumps({"model": args.model, "model_id": model_id, "revision": args.revision, "sha": sha,
                      "params": path, "changed": changed}))
    return 0
