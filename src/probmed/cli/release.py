"""`probmed release`: a question set as a versioned, citable dataset folder (probmed.release).

Thin: arguments and params.release -> ReleaseOptions, call the library, print one JSON summary.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from probmed.cli.options import add_params_arguments, params_of


def cmd_release(args: argparse.Namespace) -> int:
    """Release one question set and print its summary as one JSON line."""
    from probmed.inference.prompting import PromptSet
    from probmed.release.build import ReleaseOptions, build_release

    params = params_of(args)
    prompt = PromptSet.from_settings(params.settings).vanilla
    opts = ReleaseOptions(
        questions=Path(args.questions),
        semver=params.release.version,
        out_dir=Path(args.out_dir or params.release.out_dir),
        image_root=Path(args.image_root or params.curate.image_root),
        max_oracle_margin=params.audit.max_oracle_margin,
        ceiling_units=tuple(params.audit.ceiling_units),
        prompt=prompt,
        audit=Path(args.audit) if args.audit else None,
        name=args.name,
        allow_unaudited=args.allow_unaudited,
        url=params.release.url,
        truth_reviews=tuple(Path(p) for p in params.release.truth_reviews),
    )
    result = build_release(opts)
    rel = result.release
    print(json.dumps({"folder": str(result.folder), "version": rel.version, "created": result.created,
                      "questions": int(len(rel.questions)), "images": rel.images,
                      "configs": {c.name: c.questions for c in rel.configs}, "unaudited": rel.unaudited_reason}))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """The `release` command."""
    p = sub.add_parser("release", help="a question set as a versioned dataset folder: HF datasets layout, card, Croissant, test.json")
    p.add_argument("questions", help="question table (.parquet) or original-format question file (.json)")
    p.add_argument("--audit", help="the set's audit.json or its folder (default: <questions>.audit/, the gate's audit)")
    p.add_argument("--out-dir", help="releases go to OUT_DIR/<set>/<version>/ (default release.out_dir)")
    p.add_argument("--name", help="the set's name in the release, a folder name: letters, digits, ., _, - "
                   "(default: the file's stem)")
    p.add_argument("--image-root", help="image paths are relative to this (default curate.image_root)")
    p.add_argument("--allow-unaudited", action="store_true",
                   help="release a set that failed its audit gate or has none (the card's first line says so)")
    add_params_arguments(p, "release.version=1.3.0")
    p.set_defaults(func=cmd_release)
