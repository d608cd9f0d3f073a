"""`probmed predict`, `run-plan`, `describe`, `merge`, `export-responses`, `build-tiny-model`.

Thin: read params.yaml (+ dotted overrides such as `model=tiny setting=cot`),
call probmed.inference.predict, print a one-line JSON summary. Backend failures that the
user must fix (unreachable endpoint, bad credentials, unknown model) exit 2
with one line; a full disk exits 3; every answer received before is already in
the store. `predict` and `describe` stop on Ctrl-C or SIGTERM (exit 130 / 143, the answers in flight
stored, one line saying what is stored and what is left) and when the process that started them
(`dvc repro`) dies (`--outlive-parent`: run on, e.g. under nohup), and refuse (exit 2, naming
the pid) to write an answer store another process is writing. `run-plan` runs the predict stages of
dvc.yaml (the runs of pipeline.runs) at once from this process, their questions on a Ray cluster.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from probmed.cli.options import (
    add_params_arguments,
    add_params_to_leaves,
    answering_kernels,
    load_command_params,
    params_of,
    parse_with,
    seed_option,
)
from probmed.core.errors import ConfigError, UserError
from probmed.core.names import checked_name
from probmed.core.settings import Setting, get_setting

if TYPE_CHECKING:  # annotations only: `probmed --help` must not import the inference stack
    from probmed.core.params_schema import Params, Predict
    from probmed.inference.predict import PredictJob, Shard
    from probmed.inference.prompting import PromptSet
    from probmed.pipeline.run_plan import Evaluation, Outcome, Plan, PlanStage

RUN_PLAN_OVERRIDES = ("engine.ray.",)  # what `run-plan` may set: where answers are computed, never what they are


def _common(p: argparse.ArgumentParser) -> None:
    add_params_arguments(p, "model=tiny setting=cot")
    p.add_argument("--questions", help="question table (Parquet); default predict.questions")
    p.add_argument("--image-root", help="directory image_path is relative to; default predict.image_root")
    p.add_argument("--shard", help="i/N: answer only the images of shard i of N")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--wait-lock", type=float, metavar="SECONDS",
                   help="another process writes the same answer store: wait up to SECONDS for it "
                        "(default predict.lock_wait_s: 0, stop at once naming its pid)")
    p.add_argument("--outlive-parent", action="store_true",
                   help="keep running when the process that started this one exits (`nohup probmed predict ... &`, "
                        "then log out); default: stop asking, as when a killed `dvc repro` leaves it behind")


def register(sub: argparse._SubParsersAction) -> None:
    """Add `predict`, `run-plan`, `describe`, `merge`, `export-responses` and `build-tiny-model` to the `probmed` parser."""
    from probmed.inference.models.tiny_families import (
        BUILDERS,  # light: no torch until a model is built
    )

    p = sub.add_parser("predict", help="answer a question table with a model (resumable, cached)")
    _common(p)
    p.add_argument("--out", help="prediction table to write; default predict.out_dir/<model>-<setting>.parquet")
    p.add_argument("--score-dir", help="then score the table into this directory, as `probmed score --out-dir` "
                   "does (params score.*): the main job's predict stages score in the same process")
    p.add_argument("--score-name", help="with --score-dir: the row label in the tables (as `probmed score --name`)")
    p.set_defaults(func=cmd_predict, cpu_kernels_of=answering_kernels)

    r = sub.add_parser("run-plan", help="run the pipeline's evaluations (its predict stages) at once on a Ray "
                       "cluster, writing what `dvc repro` writes")
    r.add_argument("runs", nargs="*", metavar="RUN",
                   help="runs of pipeline.runs / described_runs by name or pattern (probmed-tiny-*); default: all")
    r.add_argument("--commit", action="store_true",
                   help="then `dvc commit` the stages that ended with exit 0, so `dvc status` and `dvc repro` find them up "
                        "to date")
    r.add_argument("--at-once", type=int, default=0, metavar="N",
                   help="evaluations running at one time (default 0: all; each spreads its questions over the cluster)")
    r.add_argument("--dry-run", action="store_true", help="print each selected stage and its command; run nothing")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")
    r.add_argument("--outlive-parent", action="store_true",
                   help="keep running when the process that started this one exits (as `predict --outlive-parent`)")
    r.set_defaults(func=cmd_run_plan, cpu_kernels_of=answering_kernels)

    d = sub.add_parser("describe", help="generate (cached) image descriptions with the describer model")
    _common(d)
    d.add_argument("--describer", help="model name; default settings.describer")
    d.add_argument("--out", help="description table (Parquet); default predict.describe_dir/<describer>.parquet")
    d.set_defaults(func=cmd_describe, cpu_kernels_of=answering_kernels)

    m = sub.add_parser("merge", help="merge shard prediction tables into one, checking coverage")
    m.add_argument("questions", help="question table (Parquet)")
    m.add_argument("shards", nargs="+", help="shard prediction tables (Parquet)")
    m.add_argument("--out", required=True, help="merged prediction table (Parquet)")
    m.set_defaults(func=cmd_merge)

    e = sub.add_parser("export-responses", help="write predictions in the original ProbMed response format")
    e.add_argument("questions", help="question table (Parquet or original JSON)")
    e.add_argument("predictions", help="prediction table (Parquet)")
    e.add_argument("--out", required=True, help="response file (JSON; JSONL for lmms-eval)")
    e.add_argument("--format", choices=("probmed", "lmms-eval"), default="probmed",
                   help="probmed: the original ProbMed response file; lmms-eval: its --log_samples JSONL (probmed.release)")
    e.set_defaults(func=cmd_export)

    t = sub.add_parser("build-tiny-model", help="build the tiny offline LLaVA (untrained) into a directory")
    t.add_argument("--out", required=True, help="model directory")
    t.add_argument("--seed", type=seed_option, default=0)
    t.add_argument("--questions", help="question table whose words join the vocabulary")
    t.add_argument("--family", default="tiny", help="tiny (the default word-level LLaVA) or a model family to build "
                   "with random weights and a sub-word tokenizer: " + ", ".join(BUILDERS))
    t.set_defaults(func=cmd_build_tiny)


def _read_questions(path: str):
    from probmed.core.records import missing_questions, read_questions
    from probmed.core.release_format import read_question_file

    if not Path(path).is_file():
        raise missing_questions(path)
    return read_question_file(path) if str(path).endswith(".json") else read_questions(path)


@dataclass(frozen=True)
class CommandInputs:
    """What `predict` and `describe` read from params.yaml and their command line, resolved once."""

    params: Params
    predict: Predict  # params.predict with the command line's --image-root and --wait-lock in it
    prompts: PromptSet
    setting: Setting
    questions_path: str
    shard: Shard
    context: dict[str, Any]  # run-wide backend values: seed, pricing table, system prompt
    label: str = ""  # what progress calls the run (`probmed run-plan`: the run's name)

    def job(self) -> PredictJob:
        """The run of `predict`: this setting, these prompts and stores, this shard."""
        from probmed.inference.predict import PredictJob

        return PredictJob(self.setting, self.prompts, self.predict, shard=self.shard, control_seed=self.params.seed,
                          label=self.label)


def _setup(args: argparse.Namespace) -> CommandInputs:
    from probmed.inference.predict import parse_shard
    from probmed.inference.prompting import PromptSet

    params = params_of(args)
    if not params.models:
        raise ConfigError("params: section 'models' is missing")
    prompts = PromptSet.from_settings(params.settings)
    setting = get_setting(params.setting)
    questions_path = args.questions or params.predict.questions
    if not questions_path:
        raise ConfigError("no question table: pass --questions or set predict.questions")
    return CommandInputs(
        params=params, predict=_predict_section(params.predict, args), prompts=prompts, setting=setting,
        questions_path=questions_path, shard=parse_shard(args.shard),
        context={"seed": params.seed, "pricing": {name: asdict(price) for name, price in params.pricing.items()},
                 "system_prompt": prompts.system_prompt},
        label=getattr(args, "run_label", ""),
    )


def _predict_section(predict: Predict, args: argparse.Namespace) -> Predict:
    """The ``predict:`` section with what the command line sets instead (--image-root, --wait-lock)."""
    wait = getattr(args, "wait_lock", None)
    if wait is not None and wait < 0:
        raise ConfigError(f"--wait-lock {wait!r}: expected a non-negative number of seconds")
    changes = {"image_root": args.image_root, "lock_wait_s": wait}
    return replace(predict, **{key: value for key, value in changes.items() if value is not None})


def _backend(inputs: CommandInputs, name: str):
    """The backend of model `name`, its answers computed where ``engine.kind`` says (this process, or a Ray cluster)."""
    from probmed.inference.models.registry import build_backend

    backend = build_backend(inputs.params.models, name, **inputs.context)
    if inputs.params.engine.kind == "ray":
        from probmed.inference.models.ray_engine import wrap

        return wrap(backend, inputs.params.models, inputs.params.engine.ray)
    return backend


@contextmanager
def _stoppable(args: argparse.Namespace) -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the run keeping every answer received; so does the death of the parent (the
    `dvc repro` that started us), unless asked to outlive it (probmed.infra.process)."""
    from probmed.infra.process import exit_with_parent, stop_on_signals

    with stop_on_signals(), (nullcontext() if args.outlive_parent else exit_with_parent()):
        yield


def cmd_predict(args: argparse.Namespace) -> int:
    """Stops on Ctrl-C, SIGTERM or when its parent is gone, with every answer received stored."""
    with _stoppable(args):
        return _predict(args)


def _predict(args: argparse.Namespace) -> int:
    summary, code = predict_evaluation(args)
    print(json.dumps(summary, default=str))
    return code


def predict_evaluation(args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    """One `probmed predict`: its summary and exit code (1: some questions failed after every retry)."""
    from probmed.inference.predict import run_predictions

    inputs = _setup(args)
    name = inputs.params.model
    if not name:
        raise ConfigError("params: key 'model' is missing (e.g. model=tiny)")
    if args.score_dir and args.shard:
        raise UserError(f"--score-dir with --shard {args.shard}: a shard's table is part of the set; merge the "
                        "shards (`probmed merge`), then `probmed score` the merged table")
    questions = _read_questions(inputs.questions_path)
    backend = _backend(inputs, name)
    describer = None
    try:
        if inputs.setting.description_by == "describer":
            describer = _backend(inputs, inputs.prompts.describer)
        result = run_predictions(questions, backend, inputs.job(), describer=describer, progress=not args.no_progress)
    finally:
        backend.close()
        if describer is not None:
            describer.close()
    out = args.out or str(Path(inputs.predict.out_dir) / f"{name}-{inputs.setting.name}{inputs.shard.suffix}.parquet")
    _write_predictions_and_log(result.predictions, out, result.run_info)
    summary = {"model": name, "setting": inputs.setting.name, "out": out, **result.summary(),
               "cpu_kernels": args.cpu_kernels}
    if args.score_dir:
        from probmed.cli.scoring import score_to_dir

        score_to_dir(inputs.questions_path, out, args.score_dir, args.score_name, inputs.params.score)
    return summary, 1 if result.n_failed else 0


def cmd_run_plan(args: argparse.Namespace) -> int:
    """`probmed run-plan`: every selected evaluation stage of dvc.yaml run by the `predict` handler in a thread of
    this process (the one writer of its store), its questions on the Ray cluster (probmed.pipeline.run_plan)."""
    with _stoppable(args):
        return _run_plan(args)


def _stage_parser() -> argparse.ArgumentParser:
    """The parser of a plan's stages: each is a `probmed predict` command, which this module declares."""
    parser = argparse.ArgumentParser(prog="probmed")
    register(parser.add_subparsers(dest="command", required=True))
    add_params_to_leaves(parser)
    return parser


def _run_plan(args: argparse.Namespace) -> int:
    from probmed.pipeline.plan import evaluations
    from probmed.pipeline.run_plan import commit, exit_code, load_plan, run_concurrently

    if args.params:
        raise UserError("run-plan runs dvc.yaml's stages, which read params.yaml: --params is not taken here")
    foreign = [o for o in args.overrides if not o.startswith(RUN_PLAN_OVERRIDES)]
    if foreign:
        raise UserError(f"{foreign[0]}: only {', '.join(RUN_PLAN_OVERRIDES)}* may be set here (nothing "
                        "a stage declares, so its outputs stay what dvc.yaml says); set the rest in params.yaml")
    if args.at_once < 0:
        raise UserError(f"--at-once {args.at_once}: expected 0 (all) or more")
    params = params_of(args)
    evaluations(params)  # pipeline.runs checked as `probmed plan` checks it, naming the key
    plan = load_plan(".")
    stages = plan.select(args.runs)
    if args.dry_run:
        for stage in stages:
            print(json.dumps({"stage": stage.stage, "run": stage.run, "cmd": shlex.join(stage.argv)}))
        return 0
    plan.check_ready(stages)
    jobs = []
    for stage in stages:  # every stage's command parsed and its params checked before any work
        stage_args = parse_with(_stage_parser(), stage.argv[1:])
        stage_args.overrides = [*stage_args.overrides, "engine.kind=ray", *args.overrides]
        stage_args.no_progress, stage_args.run_label = args.no_progress, stage.run
        load_command_params(stage_args)
        jobs.append((stage.run, _plan_job(plan, stage, stage_args)))
    from probmed.inference.models.ray_engine import connect

    connect(params.engine.ray)  # once, before the threads (the stages' engine: these params, these overrides)
    t0 = time.perf_counter()

    def done(outcome: Outcome) -> None:
        line = {"run": outcome.run, "code": outcome.code, "seconds": round(outcome.seconds, 1)}
        print(json.dumps({**line, **(outcome.summary or {"error": outcome.error})}, default=str), flush=True)

    outcomes = run_concurrently(jobs, done, args.at_once)
    finished = [s.stage for s, o in zip(stages, outcomes) if o.code == 0]  # as `dvc repro` records a command
    if args.commit and finished:
        commit(".", finished)
    print(json.dumps({"evaluations": len(outcomes), "finished": len(finished),
                      "failed": [o.run for o in outcomes if o.code],
                      "committed": finished if args.commit else [],
                      "seconds": round(time.perf_counter() - t0, 1)}))
    if finished and not args.commit:
        print(f"run-plan: record the outputs in dvc.lock with: dvc commit -f {' '.join(finished)}", file=sys.stderr)
    return exit_code(outcomes)


def _plan_job(plan: Plan, stage: PlanStage, stage_args: argparse.Namespace) -> Evaluation:
    """One evaluation of the plan: its stage's outputs cleared as `dvc repro` clears them, then its `predict`."""

    def job() -> tuple[dict[str, Any], int]:
        plan.clear_outputs(stage)
        return predict_evaluation(stage_args)

    return job


def _write_predictions_and_log(frame: Any, out: str, run_info: dict[str, Any]) -> None:
    """The table without its answering interval or how it was answered (a DVC output stays the same across
    runs of the same inputs, whatever was cached); both go to its work log under build/logs/, where
    `probmed track` reads the interval."""
    from probmed.core.records import write_predictions
    from probmed.infra.clock import write_work_log

    answering = frame.attrs.pop("answering", None)
    write_predictions(frame, out)
    work = {key: value for key, value in (("answering", answering), ("run_info", run_info)) if value}
    if work:
        write_work_log(out, work)


def cmd_describe(args: argparse.Namespace) -> int:
    """Like `predict`, stops on Ctrl-C, SIGTERM or when its parent is gone, with every description received stored."""
    with _stoppable(args):
        return _describe(args)


def _describe(args: argparse.Namespace) -> int:
    from probmed.inference.answer_store import open_store
    from probmed.inference.describe import describe_images, export_descriptions
    from probmed.inference.predict import resolve_images, shard_questions
    from probmed.infra.process import stopped
    from probmed.infra.progress import progress

    inputs = _setup(args)
    name = checked_name(args.describer, "--describer") if args.describer else inputs.prompts.describer
    questions = shard_questions(_read_questions(inputs.questions_path), inputs.shard)
    images = resolve_images(questions, Path(inputs.predict.image_root))
    store = open_store(Path(inputs.predict.describe_dir) / name, inputs.shard.file_name, inputs.predict)
    try:
        backend = _backend(inputs, name)
        try:
            with progress(total=len(images), desc=f"describe[{name}]", unit="img", disable=args.no_progress) as bar:
                got = describe_images(backend, list(images.items()), inputs.prompts, store, on_progress=bar.update)
        finally:
            backend.close()
    finally:
        store.close()
    if backend.stop_requested:
        raise stopped("the descriptions received are stored; run the same command again to ask the rest")
    out = args.out or str(Path(inputs.predict.describe_dir) / f"{name}.parquet")
    export_descriptions(store, out)
    failed = sum(v is None for v in got.values())
    print(json.dumps({"describer": name, "images": len(got), "failed": failed, "out": out}))
    return 1 if failed else 0


def cmd_merge(args: argparse.Namespace) -> int:
    """`probmed merge`: join shard prediction tables into one, checked against the questions."""
    from probmed.core.records import check_predictions_belong, read_predictions, write_predictions
    from probmed.inference.predict import merge_shards

    questions = _read_questions(args.questions)
    shards = [read_predictions(p) for p in args.shards]
    for path, shard in zip(args.shards, shards):
        check_predictions_belong(shard, questions, path, args.questions)
    frame = merge_shards(questions, shards)
    write_predictions(frame, args.out)
    _merge_work_logs(args.shards, args.out)
    print(json.dumps({"questions": len(questions), "predictions": len(frame), "out": args.out}))
    return 0


def _merge_work_logs(shards: list[str], out: str) -> None:
    """The merged table's answering interval: the first shard's start to the last shard's end (ISO 8601 sorts)."""
    from probmed.infra.clock import read_work_log, write_work_log

    spans = [w["answering"] for p in shards if (w := read_work_log(p)).get("answering")]
    if spans:
        write_work_log(out, {"answering": {"started_at": min(s["started_at"] for s in spans),
                                           "finished_at": max(s["finished_at"] for s in spans)}})


def cmd_export(args: argparse.Namespace) -> int:
    """`probmed export-responses`: predictions as an original-format response file (questions without one counted)."""
    from probmed.core.records import read_predictions_for
    from probmed.core.release_format import write_response_file

    questions = _read_questions(args.questions)
    predictions = read_predictions_for(args.predictions, questions, args.questions)
    if args.format == "lmms-eval":
        from probmed.inference.prompting import PromptSet
        from probmed.release.harness.lmms_eval_log import write_lmms_eval_log

        prompt = PromptSet.from_settings(params_of(args).settings).vanilla
        missing = write_lmms_eval_log(questions, predictions, prompt, args.out)
    else:
        missing = write_response_file(questions, predictions, args.out)
    print(json.dumps({"records": len(questions), "missing": missing, "out": args.out}))
    return 0


def cmd_build_tiny(args: argparse.Namespace) -> int:
    """`probmed build-tiny-model`: the default tiny LLaVA, or a random-weight model of one family."""
    from probmed.inference.models.tiny import build_tiny_llava
    from probmed.inference.models.tiny_families import BUILDERS, build_tiny_family

    if args.family != "tiny" and args.family not in BUILDERS:
        raise UserError(f"--family {args.family!r}: expected tiny or one of {', '.join(BUILDERS)}")
    corpus: list[Any] = []
    if args.questions:
        corpus = _read_questions(args.questions)["question"].astype(str).tolist()
    if args.family == "tiny":
        out = build_tiny_llava(args.out, seed=args.seed, corpus=corpus)
        print(json.dumps({"out": str(out), "seed": args.seed}))
    else:
        out = build_tiny_family(args.family, args.out, seed=args.seed, corpus=corpus)
        print(json.dumps({"out": str(out), "seed": args.seed, "family": args.family}))
    return 0
