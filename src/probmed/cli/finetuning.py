"""`probmed finetune --stage pretrain|adapt` and `probmed transfer`.

Thin: read params.yaml (+ dotted overrides such as `finetune.profile=gpu`
`finetune.adapt.epochs=1`), call probmed.finetune, print a one-line JSON
summary. Paths default to the `finetune:` section; options override them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from probmed.cli.options import add_params_arguments, answering_kernels, params_of
from probmed.core.errors import MissingFileError
from probmed.core.params_schema import Params, selected_finetune
from probmed.finetune.stages import STAGES


def _common(p: argparse.ArgumentParser) -> None:
    add_params_arguments(p, "finetune.adapt.epochs=1")
    p.add_argument("--questions", help="question table (Parquet); default finetune.questions")
    p.add_argument("--image-root", help="directory image_path is relative to; default finetune.image_root")
    p.add_argument("--out-dir", help="fine-tuning directory; default finetune.out_dir")


def register(sub: argparse._SubParsersAction) -> None:
    """Add `finetune` and `transfer` to the `probmed` parser."""
    f = sub.add_parser("finetune", help="train the base model (pretrain) or a LoRA adapter on the domain (adapt)")
    _common(f)
    f.add_argument("--stage", required=True, choices=STAGES,
                   help="pretrain: brief full training on the general split; adapt: LoRA on finetune.domain")
    f.add_argument("--records", nargs="+", help="image record tables (Parquet); default finetune.records")
    f.set_defaults(func=cmd_finetune, cpu_kernels_of=training_kernels)

    t = sub.add_parser("transfer", help="probe base vs adapted model on every held-out (source, modality, organ) group")
    _common(t)
    t.add_argument("--transfer-dir", help="output directory; default <out-dir>/transfer")
    t.add_argument("--no-progress", action="store_true", help="no progress bar")
    t.add_argument("--headline", help="write the headline metrics here (dvc: metrics/transfer.json)")
    t.set_defaults(func=cmd_transfer, cpu_kernels_of=answering_kernels)


def training_kernels(params: Params) -> str:
    """The CPU kernels `probmed finetune` trains with: the selected profile's ``finetune.trainer.cpu_kernels``."""
    return selected_finetune(params.finetune).trainer.cpu_kernels


def _paths(args: argparse.Namespace, params: Params) -> tuple[str, str, Path]:
    from probmed.finetune.train import finetune_params

    fcfg = finetune_params(params)
    questions = args.questions or fcfg.questions
    image_root = args.image_root or fcfg.image_root
    out_dir = Path(args.out_dir or fcfg.out_dir)
    if not Path(questions).is_file():
        raise MissingFileError(f"question table {questions} not found")
    return questions, image_root, out_dir


def cmd_finetune(args: argparse.Namespace) -> int:
    """`probmed finetune`: train one stage and print its summary (without the metrics) as JSON."""
    from probmed.finetune.train import finetune_params, run_stage

    params = params_of(args)

    questions, image_root, out_dir = _paths(args, params)
    records = args.records or finetune_params(params).records
    result = run_stage(params, args.stage, questions, records, image_root, out_dir)
    print(json.dumps({k: v for k, v in result.to_json().items() if k != "metrics"}))
    return 0


def cmd_transfer(args: argparse.Namespace) -> int:
    """`probmed transfer`: run the transfer study, optionally write its headline, print a JSON summary."""
    from probmed.finetune.transfer import run_transfer

    params = params_of(args)
    questions, image_root, out_dir = _paths(args, params)
    target = Path(args.transfer_dir) if args.transfer_dir else out_dir / "transfer"
    result = run_transfer(params, questions, image_root, out_dir, target, progress=not args.no_progress)
    if args.headline:
        from probmed.core.headline import write_headline

        write_headline(result.headline, args.headline)
    print(json.dumps({"out_dir": str(target), "rows": len(result.table), "mlflow_runs": result.run_ids,
                      "prediction_seconds": result.seconds}))
    return 0
