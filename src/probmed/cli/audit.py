"""`probmed audit`: is a question set answerable without the image, and is every "no" true?

Thin: read the set (Parquet question table or original-format test.json, audited
as it is), call probmed.benchmark.audit, write audit.json / audit.md /
metrics.json, log the headline metrics to MLflow, print the verdict. Never
imports torch unless ``--blind`` asks for the blind model (sentence embeddings).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probmed.cli.options import add_params_arguments, adhoc_path, answering_kernels, params_of
from probmed.core.errors import UserError

if TYPE_CHECKING:
    from probmed.core.params_schema import Params


def read_question_set(path: str | Path) -> Any:
    """A Parquet question table, or an original-format question file (``.json``) converted as it is."""
    from probmed.core.records import missing_questions, read_questions
    from probmed.core.release_format import read_question_file

    path = Path(path)
    if not path.is_file():
        raise missing_questions(path)
    return read_question_file(path) if path.suffix.lower() == ".json" else read_questions(path)


def write_audit(audit: dict[str, Any], gate: dict[str, Any] | None, out_dir: Path) -> dict[str, float]:
    """audit.json, audit.md and metrics.json (headline numbers) into ``out_dir``; returns the headline."""
    from probmed.benchmark.audit.report import audit_markdown, headline_metrics
    from probmed.infra.io import write_json_atomic, write_text_atomic

    headline = headline_metrics(audit)
    write_text_atomic(audit_markdown(audit, gate), out_dir / "audit.md")
    write_json_atomic(headline, out_dir / "metrics.json")
    write_json_atomic({**audit, "gate": gate}, out_dir / "audit.json")  # last: its presence marks a complete audit
    return headline


def _blind(args: argparse.Namespace, params: Params, questions: Any) -> Any:
    from probmed.benchmark.audit.scores import blind_from_predictions, blind_probabilities
    from probmed.core.records import read_predictions_for

    if args.blind_predictions:
        return blind_from_predictions(questions, read_predictions_for(args.blind_predictions, questions, args.questions))
    if args.blind:
        blind_cfg = params.models.get("blind") or {}  # a models: entry, raw as every backend's entry
        return blind_probabilities(questions, {k: v for k, v in blind_cfg.items() if k in ("folds", "C")})
    return None


def _track(params: Params, headline: dict[str, float], out_dir: Path, name: str) -> bool:
    tracking = params.tracking
    if not tracking.enabled or not params.audit.log_to_mlflow:
        return False
    from probmed.reporting.tracking import Tracker

    with Tracker(tracking.uri, tracking.experiment, tracking.artifact_root) as tracker:
        tracker.log_audit(headline, out_dir, name)  # the tracking store's lock is held until here
    return True


def cmd_audit(args: argparse.Namespace) -> int:
    """Audit a question set, write its report and headline, and exit 1 on a failed gate under --strict.

    The gate reads the blind ceiling on audit.ceiling_units."""
    from probmed.benchmark.audit import gate, run_audit
    from probmed.core.records import read_image_records

    params = params_of(args)
    settings = params.audit
    questions = read_question_set(args.questions)
    records = []
    for p in args.records or []:
        if not Path(p).is_file():
            raise UserError(f"record table {p} not found")
        records += read_image_records(p)
    image_root = None if args.no_pixels else Path(args.image_root or params.curate.image_root)
    reference = None if args.reference is None else read_question_set(args.reference)
    audit = run_audit(questions, records or None, image_root, settings, _blind(args, params, questions), str(args.questions),
                      reference)
    result = gate(audit, settings.max_oracle_margin, settings.enforce, settings.ceiling_units).to_json()
    out_dir = Path(args.out_dir or adhoc_path(args, "audit", Path(args.questions).stem))
    headline = write_audit(audit, result, out_dir)
    name = args.name or Path(args.questions).stem
    if args.headline:  # dvc: metrics/audit.json, the headline `dvc metrics` and `dvc exp show` compare
        from probmed.core.headline import write_headline

        write_headline({name: headline}, args.headline)
    tracked = args.track and _track(params, headline, out_dir, name)
    print(json.dumps({"gate": "passed" if result["passed"] else "failed", "failures": result["failures"],
                      "unchecked": result["unchecked"], **headline,
                      "out": str(out_dir), "mlflow": bool(tracked)}, indent=1))
    return 1 if args.strict and result["enforced"] and not result["passed"] else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add `audit` to the command line."""
    p = sub.add_parser("audit", help="is a question set answerable without the image? text-only baselines, truth, lint, leaks")
    p.add_argument("questions", help="question table (.parquet) or original-format question file (.json)")
    p.add_argument("--records", nargs="+", help="image record tables: check every 'no' against metadata and QA")
    p.add_argument("--out-dir", help="where audit.json, audit.md, metrics.json go (default <paths.adhoc>/audit/<questions' stem>)")
    p.add_argument("--image-root", help="image paths are relative to this (default curate.image_root)")
    p.add_argument("--no-pixels", action="store_true", help="skip the pixel-statistics leak check (reads every image)")
    p.add_argument("--reference", help="the full set a subset was drawn from: the blind ceiling also counts tables "
                                       "learnt on its other images")
    blind = p.add_mutually_exclusive_group()
    blind.add_argument("--blind", action="store_true", help="run the blind baseline (loads sentence-transformers)")
    blind.add_argument("--blind-predictions", help="score an existing blind prediction table instead")
    p.add_argument("--strict", action="store_true", help="exit 1 when the gate fails (audit.* params)")
    p.add_argument("--track", action="store_true", help="log the headline metrics and audit.md to MLflow (tracking.*)")
    p.add_argument("--name", help="question-set name in MLflow (default: the file's stem)")
    p.add_argument("--headline", help="also write the headline numbers here, under the set's name (dvc: metrics/audit.json)")
    add_params_arguments(p, "audit.max_oracle_margin=3")
    p.set_defaults(func=cmd_audit, cpu_kernels_of=answering_kernels)
