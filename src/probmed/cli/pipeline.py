"""`probmed fetch-data`, `plan`, `subset`, `track`, `report`: the pipeline's own stages.

Thin: read params.yaml (+ dotted overrides), call the library (pipeline.plan,
core.pinned_data, benchmark.subsets, reporting.tracking, reporting.report),
print a one-line JSON summary.
File layout the DVC stages share (dvc.yaml writes it, these commands read it):

    build/questions/<question_set>.parquet
    build/predictions/<question_set>/<model>-<setting>.parquet
    build/scores/<question_set>/<model>/<setting>/metrics.json (+ tables)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probmed.cli.options import add_params_arguments, adhoc_path, command_params, params_of
from probmed.core.config import to_plain
from probmed.core.errors import ConfigError, UserError

if TYPE_CHECKING:
    from probmed.core.params_schema import Params, Tracking
    from probmed.reporting.tracking import Tracker

# the MLflow run ids `probmed track` logged: random per tracking store, so outside DVC's outputs (build/logs/)
RUN_IDS = "build/logs/tracking/run_ids.json"


def _params(p: argparse.ArgumentParser) -> None:
    add_params_arguments(p, "tracking.experiment=demo")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the pipeline's own commands to the command line."""
    f = sub.add_parser("fetch-data", help="get the pinned raw data (data.dvc) into data/ and the DVC cache")
    f.add_argument("--source", help="a copy of the data to import from (default: the source data.dvc records)")
    f.add_argument("--remote", help="DVC remote to pull from (default: the configured default remote, if any)")
    f.add_argument("--dvc-file", default="data.dvc")
    f.set_defaults(func=cmd_fetch)

    p = sub.add_parser("plan", help="check params (models, settings, datasets) before any work; write the plan")
    _params(p)
    p.add_argument("--out-dir", help="the plan and its gate file (default <paths.adhoc>/plan; the plan stage: build/plan)")
    p.set_defaults(func=cmd_plan)

    s = sub.add_parser("subset", help="seeded image-level subset of a question set (datasets.question_sets.<name>)")
    _params(s)
    s.add_argument("questions", help="full question table (Parquet)")
    s.add_argument("--question-set", required=True, help="name under datasets.question_sets")
    s.add_argument("--out", required=True, help="subset question table (Parquet)")
    s.add_argument("--official", help="also write the subset in the original question-file format (JSON)")
    s.add_argument("--counts", help="also write its scoring units per category, images and image types here (JSON)")
    s.add_argument("--splits", help="fine-tuning split table: with datasets.question_sets.<name>."
                   "exclude_training_images, images the default model trained on are left out")
    s.set_defaults(func=cmd_subset)

    t = sub.add_parser("track", help="log every planned evaluation as an MLflow run (ablations as child runs)")
    _params(t)
    t.add_argument("--scores-root", default="build/scores")
    t.add_argument("--predictions-root", default="build/predictions")
    t.add_argument("--questions-root", default="build/questions")
    t.add_argument("--out", help="each evaluation's run key (MLflow tag probmed.run_key): the same in every clone "
                   "(default <paths.adhoc>/tracking/runs.json; the track stage: build/tracking/runs.json)")
    t.add_argument("--ids", default=RUN_IDS, help="each evaluation's MLflow run id (random per tracking store, "
                   "so kept out of DVC's outputs)")
    t.set_defaults(func=cmd_track)

    r = sub.add_parser("report", help="paper tables, figures and an HTML page across all scored runs")
    _params(r)
    r.add_argument("--scores-root", action="append",
                   help="<set>/<model>/<setting>/metrics.json root; repeat to join several (default build/scores)")
    r.add_argument("--questions-root", default="build/questions", help="question tables for Table 1")
    r.add_argument("--out-dir", help="default <paths.adhoc>/report (the report stage: build/report)")
    r.add_argument("--runs", default=RUN_IDS, help="run ids by evaluation (`probmed track --ids`): visual "
                   "reliance goes onto these vanilla runs (absent: the newest vanilla run of each model)")
    r.add_argument("--headline", help="write the evaluation headline metrics here (dvc: metrics/evaluation.json)")
    r.add_argument("--audit", action="append", metavar="NAME=DIR",
                   help="a `probmed audit` directory shown as the set's benchmark-validity table; repeat for several")
    r.set_defaults(func=cmd_report)


def _cfg(args: argparse.Namespace) -> dict[str, Any]:
    return to_plain(command_params(args))


def cmd_fetch(args: argparse.Namespace) -> int:
    """Fetch the pinned raw data into data/."""
    from probmed.infra.pinned_data import fetch_data

    result = fetch_data(".", args.dvc_file, source=args.source, remote=args.remote)
    print(json.dumps(result))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Check the params and write the run plan before any work."""
    from probmed.pipeline.plan import write_plan

    args.out_dir = args.out_dir or adhoc_path(args, "plan")
    plan = write_plan(params_of(args), args.out_dir)
    print(json.dumps({"evaluations": len(plan["evaluations"]), "out": args.out_dir}))
    return 0


def cmd_subset(args: argparse.Namespace) -> int:
    """Write the seeded image subset a question set names."""
    from probmed.benchmark.contrast import assign_contrast_pairs
    from probmed.benchmark.subsets import drop_training_images, subset_questions
    from probmed.core.records import missing_questions, read_questions, write_questions

    params = params_of(args)
    key = f"datasets.question_sets.{args.question_set}"
    qset = params.datasets.question_sets.get(args.question_set)
    if qset is None:
        raise ConfigError(f"params: {key} is missing")
    seed = params.seed if qset.seed is None else qset.seed
    if not Path(args.questions).is_file():
        raise missing_questions(args.questions)
    full = read_questions(args.questions)
    pool = full
    if qset.exclude_training_images:
        if not args.splits or not Path(args.splits).is_file():
            raise UserError(f"{key}.exclude_training_images is set but no split table was given (--splits)")
        from probmed.infra.tables import read_parquet

        pool = drop_training_images(full, read_parquet(args.splits, "split table"))
    if qset.commercial_only:  # drop the images whose licence forbids commercial use (core.licences)
        from probmed.core.licences import commercial_use

        pool = pool[pool["licence"].map(commercial_use)].reset_index(drop=True)
    # the last step: the subset's contrast pairs are drawn among its own questions (a partner left out breaks none)
    frame = assign_contrast_pairs(
        subset_questions(pool, qset.max_images, seed, qset.min_units_per_category, qset.min_image_types), seed)
    write_questions(frame, args.out)
    if args.official:
        from probmed.core.release_format import write_question_file

        write_question_file(frame, args.official)
    counts = _subset_report(frame, qset, key)
    if args.counts:
        from probmed.infra.io import write_json_atomic

        write_json_atomic(counts, args.counts)
    print(json.dumps({"question_set": args.question_set, "images": int(frame["image_id"].nunique()),
                      "questions": len(frame), "of_images": int(full["image_id"].nunique()), "out": args.out,
                      "units": counts["units"], "image_types": counts["image_types"], "shortfalls": counts["shortfalls"]}))
    return 0


def _subset_report(frame: Any, qset: Any, key: str) -> dict[str, Any]:
    """The subset's counts (benchmark.subsets.subset_counts) and what it lacks against its minimums, warned on stderr.

    Why a warning, not an error: a pool that cannot fill a category (a source set without positions) is taken
    whole for it, and the report shows the n behind every number."""
    from probmed.benchmark.subsets import subset_counts, subset_shortfalls

    counts = subset_counts(frame)
    counts["minimums"] = {"units_per_category": qset.min_units_per_category, "image_types": qset.min_image_types}
    counts["shortfalls"] = subset_shortfalls(frame, qset.min_units_per_category, qset.min_image_types)
    for line in counts["shortfalls"]:
        print(f"probmed subset: warning: {key} falls short: {line}", file=sys.stderr)
    return counts


def _tracker(tracking: Tracking) -> Tracker:
    from probmed.reporting.tracking import Tracker

    for key in ("uri", "experiment"):
        if not getattr(tracking, key):
            raise ConfigError(f"params: tracking.{key} is empty")
    return Tracker(tracking.uri, tracking.experiment, tracking.artifact_root)


def run_params(cfg: dict[str, Any], model: str, question_set: str, setting: str = "vanilla") -> dict[str, Any]:
    """What an MLflow run records as params: every value that can change one of its numbers.

    The model entry with its weights' fingerprint (a local directory is hashed by content, so a model
    trained differently on another machine shows here), the prompts and their version, the describer of
    the `described` setting, the seed, the sampling strategy, the question set's entry, the scorer's
    params (`score.*`: the bootstrap behind every interval) and the CPU kernels the models answered with
    (`predict.cpu_kernels`: P(yes) moves in its last bits under native ones). Read as params.yaml states them."""
    settings = cfg.get("settings") or {}
    models = cfg.get("models") or {}
    qset = ((cfg.get("datasets") or {}).get("question_sets") or {}).get(question_set) or {}
    entry = dict(models.get(model) or {})
    params: dict[str, Any] = {
        "model": {**entry, **weights_fingerprint(entry)},
        "prompt_version": settings.get("prompt_version"),
        "prompts": {k: settings.get(k) for k in PROMPT_KEYS},
        "describer": settings.get("describer"),
        "seed": cfg.get("seed"),
        "sampling_strategy": (cfg.get("questions") or {}).get("strategy"),
        "dataset": qset,
        "score": cfg.get("score") or {},
        "cpu_kernels": (cfg.get("predict") or {}).get("cpu_kernels"),
    }
    from probmed.core.settings import SETTINGS

    known = SETTINGS.get(setting)
    if known is not None and known.description_by == "describer":  # its prompt carries another model's descriptions
        describer = dict(models.get(settings.get("describer")) or {})
        params["describer_model"] = {**describer, **weights_fingerprint(describer)}
    return params


PROMPT_KEYS = ("system_prompt", "vanilla", "describe", "with_description", "describe_max_new_tokens")


def weights_fingerprint(entry: dict[str, Any]) -> dict[str, str]:
    """``weights_sha256`` (and ``adapter_sha256``) of a model entry whose weights are a local directory:
    the content hash the answer store keys on, shortened; a hub id is pinned by its revision instead."""
    from probmed.inference.models.config import directory_fingerprint

    out = {}
    for key, name in (("model_id", "weights_sha256"), ("adapter", "adapter_sha256")):
        value = entry.get(key)
        if value and Path(str(value)).is_dir():
            out[name] = directory_fingerprint(Path(str(value)))[:16]
    return out


def cmd_track(args: argparse.Namespace) -> int:
    """Log every planned evaluation as an MLflow run."""
    from probmed.infra.io import write_json_atomic
    from probmed.pipeline.plan import evaluations
    from probmed.reporting.tracking import RunSpec, log_model_runs

    cfg, params = _cfg(args), params_of(args)
    args.out = args.out or adhoc_path(args, "tracking", "runs.json")
    if not params.tracking.enabled:
        write_json_atomic({}, args.out)
        write_json_atomic({}, args.ids)
        print(json.dumps({"runs": 0, "tracking": "disabled"}))
        return 0
    by_model: dict[tuple[str, str], list[RunSpec]] = {}
    for ev in evaluations(params):
        score_dir = Path(args.scores_root) / ev.question_set / ev.model / ev.setting
        spec = RunSpec(
            model=ev.model,
            setting=ev.setting,
            question_set=ev.question_set,
            metrics_path=score_dir / "metrics.json",
            questions_path=Path(args.questions_root) / f"{ev.question_set}.parquet",
            predictions_path=Path(args.predictions_root) / ev.question_set / f"{ev.model}-{ev.setting}.parquet",
            params=run_params(cfg, ev.model, ev.question_set, ev.setting),
            artifact_paths=sorted(p for p in score_dir.iterdir() if p.name != "metrics.json")
            if score_dir.is_dir()
            else [],
        )
        by_model.setdefault((ev.question_set, ev.model), []).append(spec)
    ids: dict[str, str] = {}
    keys: dict[str, str] = {}
    with _tracker(params.tracking) as tracker:  # one `track` at a time; a run killed half-written is completed here
        for (qset, model), specs in by_model.items():
            for setting, run_id in log_model_runs(tracker, specs).items():
                ids[f"{qset}-{model}-{setting}"] = run_id
                keys[f"{qset}-{model}-{setting}"] = tracker.run_key_of(run_id)
        experiment_id = tracker.experiment_id
    write_json_atomic(ids, args.ids)
    write_json_atomic(keys, args.out)
    from probmed.reporting.tracking import runs_table_url

    # the link opens the runs table with the headline metrics (`mlflow ui` serves on port 5000)
    print(json.dumps({"runs": len(ids), "experiment": params.tracking.experiment, "out": args.out,
                      "runs_table": runs_table_url("http://127.0.0.1:5000", experiment_id)}))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Build the HTML report, its headline file, and its MLflow run."""
    from probmed.core.figure_style import palette_from_params
    from probmed.reporting.report import build_report
    from probmed.scoring.compare import Bootstrap

    params = params_of(args)
    args.out_dir = args.out_dir or adhoc_path(args, "report")
    qroot = Path(args.questions_root)
    question_sets = params.datasets.question_sets
    questions = {name: qroot / f"{name}.parquet" for name in question_sets if (qroot / f"{name}.parquet").is_file()}
    audits = {}
    for item in args.audit or []:
        name, sep, directory = item.partition("=")
        if not sep or not name or not directory:
            raise UserError(f"--audit {item!r}: expected NAME=DIR (e.g. probmed-full=build/audit/probmed-full)")
        audits[name] = Path(directory)
    cfg = _cfg(args)
    # a set with a full table is one whose image_types the file states (typed params fill the default in)
    written = (cfg.get("datasets") or {}).get("question_sets") or {}
    full = {name: qroot / f"{name}-full.parquet" for name in question_sets
            if (written.get(name) or {}).get("image_types") is not None and (qroot / f"{name}-full.parquet").is_file()}
    roots = args.scores_root or ["build/scores"]
    started_ms = int(time.time() * 1000)
    manifest = build_report(roots, args.out_dir, questions=questions, full_questions=full, audits=audits,
                            report=params.report, bootstrap=Bootstrap.of(params.score),
                            palette=palette_from_params(params))
    if args.headline:
        _write_evaluation_headline(params, roots, args.headline)
    report_run = None
    if params.tracking.enabled and params.report.log_to_mlflow:
        tracked = json.loads(Path(args.runs).read_text()) if args.runs and Path(args.runs).is_file() else {}
        reliance = Path(args.out_dir) / "visual_reliance.csv"  # on each model's vanilla run, parent of its controls
        with _tracker(params.tracking) as tracker:
            report_run = tracker.log_report(args.out_dir, started_ms)  # once, in its own run
            if reliance.is_file():
                from probmed.infra.tables import read_csv
                from probmed.reporting.comparisons import reliance_metrics

                tracker.log_reliance(reliance_metrics(read_csv(reliance, "visual reliance table")), tracked)
    print(json.dumps({"runs": len(manifest["runs"]), "plots": len(manifest["files"]["plots"]),
                      "out": args.out_dir, "headline": args.headline, "mlflow_run": report_run}))
    return 0


def _write_evaluation_headline(params: Params, roots: list[str], path: str) -> None:
    """metrics/evaluation.json: the headline of the evaluations `pipeline.runs` plans (all runs without a plan)."""
    from probmed.core.headline import write_headline
    from probmed.pipeline.plan import evaluations
    from probmed.reporting.headline import evaluation_headline
    from probmed.reporting.report import discover_runs

    planned = params.pipeline.runs
    evaluated = [(e.question_set, e.model, e.setting) for e in evaluations(params)] if planned else None
    write_headline(evaluation_headline(discover_runs(roots), evaluated), path)
