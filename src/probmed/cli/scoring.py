"""`probmed score`, `probmed score-official`, `probmed baseline`, `probmed compare`: thin wrappers over
probmed.scoring (and probmed.reporting.pairwise for compare)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from probmed.cli.options import add_params_arguments, adhoc_path, params_of, seed_option
from probmed.core.params_schema import Score


def _score_section(args: argparse.Namespace) -> Score:
    """The typed `score:` section of the params; its defaults without a params.yaml."""
    return Score() if args.cfg is None else params_of(args).score


def cmd_score(args: argparse.Namespace) -> int:
    """`probmed score`: metrics.json and the paper's tables for one prediction table, with warnings for gaps."""
    score_to_dir(args.questions, args.predictions, args.out_dir, args.name, _score_section(args))
    return 0


def score_to_dir(questions_path: str, predictions_path: str, out_dir: str, name: str | None, score: Score) -> None:
    """Score one prediction table into out_dir and print its line: `probmed score`, and `probmed predict
    --score-dir` (the main job scores in the predict stage's own process: one stage and one start-up fewer)."""
    from probmed.core.records import read_predictions_for
    from probmed.core.release_format import read_questions_any
    from probmed.infra.clock import iso_time
    from probmed.scoring.run import score_run, write_run, write_work

    started = iso_time()
    questions = read_questions_any(questions_path)
    predictions = read_predictions_for(predictions_path, questions, questions_path)
    scored = score_run(questions, predictions, score, name=name)
    write_run(scored.result, out_dir, label=name, per_image_sums=scored.per_image)
    write_work(out_dir, started)
    o = scored.result.overall
    model = scored.result.meta.model if scored.result.meta else None
    print(
        f"{model}: accuracy with adversarial pairs {o['accuracy_adv_pairs_original_weighting']:.2f}% "
        f"(original weighting), {o['accuracy_adv_pairs_question_weighting']:.2f}% (question weighting); "
        f"averaged accuracy {o['averaged_accuracy']:.2f}%; failed {o['failed']}, missing {o['missing']} of "
        f"{o['n_questions']}; "
        f"written to {out_dir}"
        if o["accuracy_adv_pairs_original_weighting"] is not None and o["averaged_accuracy"] is not None
        else f"scored {o['n_questions']} questions; written to {out_dir}"
    )
    if o["missing"]:
        print(f"warning: {o['missing']} questions have no prediction (scored wrong)", file=sys.stderr)
    if o["failed"]:
        print(f"warning: {o['failed']} questions failed after every retry (scored wrong; re-run predict to ask them "
              "again)", file=sys.stderr)


def cmd_score_responses(args: argparse.Namespace) -> int:
    """`probmed score-responses`: an original-format response file through the project's scorer."""
    from probmed.core.release_format import read_response_file
    from probmed.scoring.run import from_response_records, score_run, write_run

    score = _score_section(args)
    questions, predictions = from_response_records(read_response_file(args.responses), str(args.responses))
    label = args.name or Path(args.responses).stem
    scored = score_run(questions, predictions, score, name=label)
    write_run(scored.result, args.out_dir, label=label, per_image_sums=scored.per_image)
    o = scored.result.overall
    print(
        f"{len(questions)} responses: accuracy with adversarial pairs "
        f"{_fmt(o['accuracy_adv_pairs_original_weighting'])}% (original weighting), averaged accuracy "
        f"{_fmt(o['averaged_accuracy'])}%, refusals {_fmt(o['refusal_rate'])}%, unparsed {_fmt(o['unparsed_rate'])}%; "
        f"written to {args.out_dir}"
    )
    return 0


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def cmd_score_official(args: argparse.Namespace) -> int:
    """`probmed score-official`: the original release's scorer, quirks included (no params)."""
    from probmed.core.response_file import read_response_file
    from probmed.infra.io import write_json_atomic
    from probmed.scoring.official import score_official_file, score_official_vqarad

    if args.vqarad:
        result = score_official_vqarad(read_response_file(args.responses))
        write_json_atomic(result, args.out)
        if result["num_pairs"]:
            print(
                f"averaged accuracy {result['averaged_accuracy']:.2f}%, accuracy with adversarial pairs "
                f"{result['accuracy_adv_pairs']:.2f}% over {result['num_pairs']} pairs"
            )
    else:
        result = score_official_file(args.responses)
        write_json_atomic(result, args.out)
        acc = result["overall"]["acc"]
        print(f"overall acc {acc:.2f}% over num {result['overall']['num']}" if acc is not None else "no category scored")
    for w in result["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def cmd_baseline(args: argparse.Namespace) -> int:
    """`probmed baseline`: random, always-yes or always-no predictions for a question set."""
    from probmed.core.records import write_predictions
    from probmed.core.release_format import read_questions_any
    from probmed.scoring.baselines import always_no, always_yes, random_predictions

    questions = read_questions_any(args.questions)
    if args.kind == "random":
        frame = random_predictions(questions, seed=args.seed)
    elif args.kind == "always-yes":
        frame = always_yes(questions)
    else:
        frame = always_no(questions)
    write_predictions(frame, args.out)
    print(f"{len(frame)} {args.kind} predictions written to {args.out}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """`probmed compare A B`: A - B per category with paired bootstrap intervals, as Markdown and JSON."""
    import json

    from probmed.infra.io import write_json_atomic, write_text_atomic
    from probmed.reporting.pairwise import compare, markdown, resolve_run, to_json
    from probmed.scoring.compare import Bootstrap

    params = params_of(args)
    roots = [Path(r) for r in (args.scores_root or DEFAULT_SCORE_ROOTS)]
    a = resolve_run(args.a, roots, params.tracking.uri)
    b = resolve_run(args.b, roots, params.tracking.uri)
    boot = Bootstrap.of(params.score)
    diff = compare(a, b, boot, args.image_type)
    if diff.empty:
        from probmed.core.errors import UserError

        raise UserError(f"{args.a} vs {args.b}: no category has scored questions"
                        + (f" of image type {args.image_type!r}" if args.image_type else ""))
    page = markdown(a, b, diff, boot, args.image_type)
    out = Path(args.out or adhoc_path(args, "compare", _slug(f"{args.a}-vs-{args.b}")))
    write_text_atomic(page, out / "compare.md")
    write_json_atomic(to_json(a, b, diff, args.image_type), out / "compare.json")
    print(page, end="")
    print(json.dumps({"out": out.as_posix()}))
    return 0


DEFAULT_SCORE_ROOTS = ("build/scores", "build/finetune/transfer/scores")  # the pipeline's score layouts


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:120] or "compare"


def register(sub: argparse._SubParsersAction) -> None:
    """Add `score`, `score-responses`, `score-official` and `baseline` to the `probmed` parser."""
    p = sub.add_parser(
        "score",
        help="score a prediction table against a question set (metrics.json + paper tables)",
        description="Score PREDICTIONS against QUESTIONS with the project's scorer; writes "
        "OUT_DIR/metrics.json and the paper's tables as CSV and Markdown.",
    )
    p.add_argument("questions", help="question set: project Parquet table or original-format JSON question file")
    p.add_argument("predictions", help="prediction table (Parquet, records.PREDICTION_COLUMNS)")
    p.add_argument("--out-dir", required=True, help="directory for metrics.json and the tables")
    p.add_argument("--name", default=None, help="row label in the tables (default: the predictions' model)")
    add_params_arguments(p, "score.bootstrap_resamples=200")
    p.set_defaults(func=cmd_score)

    p = sub.add_parser(
        "score-responses",
        help="score an original-format response file with the project's scorer (robust parsing, strict pairs)",
        description="Rebuild the question set from RESPONSES (strictly validated), parse every response "
        "(yes/no/refusal/unparsed) and write the same outputs as `probmed score`.",
    )
    p.add_argument("responses", help="response file in the original format (JSON list)")
    p.add_argument("--out-dir", required=True, help="directory for metrics.json and the tables")
    p.add_argument("--name", default=None, help="row label in the tables (default: the file name)")
    add_params_arguments(p, "score.bootstrap_resamples=200")
    p.set_defaults(func=cmd_score_responses)

    p = sub.add_parser(
        "score-official",
        help="score an original-format response file exactly as the original release does",
        description="Official-compatible scorer: reproduces the original calculate_score.py, quirks included.",
    )
    p.add_argument("responses", help="response file in the original format (JSON list)")
    p.add_argument("--out", required=True, help="output JSON")
    p.add_argument(
        "--vqarad",
        action="store_true",
        help="the original VQA-RAD ablation scorer instead: records paired by position (gt first)",
    )
    p.set_defaults(func=cmd_score_official, reads_params=False)  # the original scorer: no params

    p = sub.add_parser(
        "compare",
        help="paired differences per category between two scored runs, with bootstrap intervals",
        description="A - B per category and overall (accuracy with adversarial pairs and averaged accuracy), "
        "with a paired bootstrap interval over the images both were scored on. A and B are each a score "
        "folder, a name [<set>/]<model>[/<setting>] under the score roots, or an MLflow run id.",
    )
    p.add_argument("a", help="score folder, [<set>/]<model>[/<setting>] (setting default vanilla), or MLflow run id")
    p.add_argument("b", help="the run A is compared with, named the same ways")
    p.add_argument("--out", help="folder for compare.md and compare.json (default <paths.adhoc>/compare/<a>-vs-<b>)")
    p.add_argument("--scores-root", action="append",
                   help=f"where names are looked up; repeat for several (default {', '.join(DEFAULT_SCORE_ROOTS)})")
    p.add_argument("--image-type", help="compare on one image type only, e.g. 'X-ray - Chest'")
    add_params_arguments(p, "score.bootstrap_resamples=2000")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("baseline", help="write baseline predictions (random / always-yes / always-no)")
    p.add_argument("kind", choices=("random", "always-yes", "always-no"))
    p.add_argument("questions", help="question set (Parquet or original-format JSON)")
    p.add_argument("--out", required=True, help="prediction table to write (Parquet)")
    p.add_argument("--seed", type=seed_option, default=0, help="seed of the random baseline")
    p.set_defaults(func=cmd_baseline)
