"""Benchmark construction commands: curate, generate, vqarad-adversarial, extract,
stats, review, import-release. Thin: parse, call the library, print."""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probmed.benchmark.sources.registry import SOURCES
from probmed.cli.options import add_params_arguments, params_of, seed_option
from probmed.core.errors import ConfigError, UserError
from probmed.infra.io import write_json_atomic, write_text_atomic

if TYPE_CHECKING:
    from probmed.benchmark.curation.extract_rules import Extraction
    from probmed.benchmark.curation.profiles import Profile
    from probmed.benchmark.sources.base import CaptionExtractor
    from probmed.core.params_schema import Extract, Params


def _common(p: argparse.ArgumentParser) -> None:
    add_params_arguments(p, "curate.images.image_size=224")


def _extractor(section: Extract, method: str) -> CaptionExtractor:
    """The caption extractor `method` names (rules, or the LLM at `extract.llm`)."""
    if method == "rules":
        from probmed.benchmark.curation.extract_rules import extract

        return extract
    if method == "llm":
        from probmed.benchmark.curation.extract_llm import LLMExtractor

        return LLMExtractor(section.llm).extract
    raise UserError(f"--method {method!r}: expected rules or llm")


def _narrowed(extractor: CaptionExtractor, profile: Profile) -> CaptionExtractor:
    """An extractor whose modality and organ are read in ``profile`` (the LLM answers in every value)."""

    def extract(caption_id: str, caption: str) -> Extraction:
        ex = extractor(caption_id, caption)
        ex.modality, ex.organ = profile.narrow(ex.modality, ex.organ)
        return ex

    return extract


@dataclass(frozen=True)
class CurateTargets:
    """Where `probmed curate` writes: one source's --out, or folders for every source (default layout.yaml's
    by-hand curate.records_dir and curate.<source>.images_dir; the curate stage names build/records, build/images)."""

    out: str | None = None
    records_dir: str | None = None
    images_dir: str | None = None  # each source's PNGs go to <images_dir>/<source>/


def curate_one(cfg: Params, source: str, data: str | None, targets: CurateTargets, image_root: str | None) -> dict:
    """Curate one source into its record table and exclusion report; returns the report."""
    from probmed.benchmark.sources.base import SourceContext
    from probmed.benchmark.sources.text_positions import withhold_text_positions
    from probmed.core.records import write_image_records

    loader = SOURCES.load(source, "curate source")  # the command line offers only registered sources
    options = getattr(cfg.curate, source)  # every registered source has its section (params_schema.Curate)
    if targets.images_dir and hasattr(options, "images_dir"):
        options = dataclasses.replace(options, images_dir=(Path(targets.images_dir) / source).as_posix())
    data_dir = data or options.data
    if not data_dir:
        raise ConfigError(f"params: curate.{source}.data is missing (or pass --data)")
    context = SourceContext(source, Path(data_dir), Path(image_root or cfg.curate.image_root), options, cfg.curate.images,
                            make_extractor=lambda: _extractor(cfg.extract, cfg.extract.method))
    t0 = time.perf_counter()
    res = loader(context)
    withhold_text_positions(res, source, cfg.curate.positions)
    out_path = Path(targets.out or Path(targets.records_dir or cfg.curate.records_dir) / f"{source}.parquet")
    write_image_records(res.records, out_path)
    summary = res.summary()
    # DVC-tracked: identical runs must write identical bytes, so the timing goes to the log line only
    write_json_atomic(summary, out_path.with_suffix(".report.json"))
    seconds = round(time.perf_counter() - t0, 2)
    excl = ", ".join(f"{k}: {v['count']}" for k, v in summary["excluded"].items()) or "none"
    print(f"{source}: {summary['records']} records -> {out_path} ({seconds} s); excluded: {excl}")
    return summary


def cmd_curate(args: argparse.Namespace) -> int:
    """Curate the named sources (`all`: every source of curate.all) one after another in one process: the main
    job's one curate stage names them all, one start-up instead of one DVC stage and one process per source."""
    cfg = params_of(args)
    named = [SOURCES.check(s, "curate.all") for s in cfg.curate.all] if "all" in args.source else args.source
    sources = list(dict.fromkeys(named))
    if len(sources) > 1 and (args.out or args.data):
        raise UserError(f"--out/--data apply to a single source, not {len(sources)} ({', '.join(sources)})")
    targets = CurateTargets(args.out, args.records_dir, args.images_dir)
    for s in sources:
        curate_one(cfg, s, args.data, targets, args.image_root)
    return 0


def beside_out(out: str | None, given: str | None, default: str | None, suffix: str) -> str | None:
    """Where a side output goes: as given; beside ``--out`` when only that is named (`X.parquet` -> `X<suffix>`),
    so a by-hand run never overwrites the default folder's files; else the params default."""
    if given:
        return given
    if out:
        return Path(out).with_suffix("").as_posix() + suffix
    return default


def cmd_generate(args: argparse.Namespace) -> int:
    """Generate the question set from record tables, behind the audit gate."""
    import sys

    from probmed.benchmark.audit import gate, run_audit
    from probmed.benchmark.questions import generate_questions
    from probmed.cli.audit import write_audit
    from probmed.core.records import read_image_records, write_questions
    from probmed.core.release_format import write_question_file
    from probmed.core.vocab import EXTENDED_SCOPE, PAPER_IMAGE_TYPES, SCOPES, image_type

    cfg = params_of(args)
    paths = args.records or list(cfg.questions.records)
    records = []
    for p in paths:
        if not Path(p).exists():
            raise UserError(f"record table {p} not found (run `probmed curate` first)")
        records += read_image_records(p)
    seed = args.seed if args.seed is not None else (cfg.questions.seed if cfg.questions.seed is not None else cfg.seed)
    strategy = args.strategy or cfg.questions.strategy
    t0 = time.perf_counter()
    mix = None
    scope = EXTENDED_SCOPE
    if args.question_set:  # the set's scope and image-type caps (datasets.question_sets.<set>)
        from probmed.benchmark.mix import sample_records

        key = f"datasets.question_sets.{args.question_set}"
        qset = cfg.datasets.question_sets.get(args.question_set)
        if qset is None:
            raise UserError(f"--question-set {args.question_set!r}: params {key} is missing")
        scope = SCOPES[qset.scope]
        if qset.scope == "paper":  # the paper's 12 image types only (numbers comparable with its tables)
            records = [r for r in records if image_type(r.modality, r.organ) in PAPER_IMAGE_TYPES]
        records, mix = sample_records(records, qset.image_types, int(seed))
    frame, report = generate_questions(records, seed=int(seed), strategy=strategy, progress=True, scope=scope)
    out = Path(args.out or cfg.questions.out)
    settings = cfg.audit
    # the gate: the set must not be answerable from its texts, every "no" must be true, every question must read right
    audit = run_audit(frame, records, None, settings, source=str(out))
    verdict = gate(audit, settings.max_oracle_margin, settings.enforce, settings.ceiling_units)
    audit_dir = Path(args.audit_dir or out.with_suffix("").as_posix() + ".audit")
    write_audit(audit, verdict.to_json(), audit_dir)
    # DVC-tracked: no timing in it (identical runs write identical bytes); the seconds are printed below
    rep = {**report.to_json(), "seed": int(seed), "strategy": strategy, "records": paths, "gate": verdict.to_json()}
    if mix is not None:
        rep["image_type_mix"] = mix
    write_json_atomic(rep, str(beside_out(args.out, args.report, cfg.questions.report, ".report.json")))
    if not verdict.passed:
        lines = "\n  ".join(verdict.failures)
        if settings.enforce:
            raise UserError(f"the question set fails the audit gate (see {audit_dir / 'audit.md'}; "
                            f"audit.enforce=false makes this a warning):\n  {lines}")
        print(f"probmed generate: warning: the question set fails the audit gate (audit.enforce=false):\n  {lines}", file=sys.stderr)
    for line in verdict.unchecked:
        print(f"probmed generate: audit gate unchecked: {line}", file=sys.stderr)
    write_questions(frame, out)
    official = beside_out(args.out, args.official, cfg.questions.official, ".json")
    if official:
        write_question_file(frame, official)
    print(f"{rep['questions']} questions on {rep['images']} images -> {out}" + (f" and {official}" if official else "")
          + f" in {round(time.perf_counter() - t0, 2)} s; audit gate {'passed' if verdict.passed else 'FAILED'} ({audit_dir / 'audit.md'})")
    for k, v in rep["excluded"].items():
        print(f"  excluded ({k}): {v['count']}")
    return 0


def cmd_vqarad_adversarial(args: argparse.Namespace) -> int:
    """Build the VQA-RAD adversarial ablation set and its report."""
    from probmed.benchmark.vqarad_adversarial import (
        Twin,
        build_vqarad_adversarial,
        official_records,
        report_markdown,
    )
    from probmed.core.records import write_questions
    from probmed.core.release_format import write_question_file

    cfg = params_of(args)
    vcfg = cfg.questions.vqarad_adversarial
    llm = None
    if vcfg.use_llm and cfg.extract.llm.base_url:
        from probmed.benchmark.curation.extract_llm import LLMAnswerError, LLMClient

        client = LLMClient(cfg.extract.llm)
        schema = {"type": "object", "required": ["question", "entity"], "properties": {"question": {"type": "string", "minLength": 5}, "entity": {"type": "string"}}}
        system = ("Write an adversarial twin of a closed medical VQA question answered 'yes': the same question about a "
                  "hallucinated entity (another condition, organ, modality, plane, side or size attribute) that is not "
                  "present, so its answer is 'no'. Answer JSON only: {\"question\": ..., \"entity\": ...}.")

        def llm(ctx: dict) -> Twin | None:
            try:
                obj = client.ask("vqarad-twin", system, json.dumps(ctx, sort_keys=True), schema)
            except LLMAnswerError:
                return None
            return Twin(obj["question"], "llm", obj["entity"], "assumed_absent")

    data = Path(args.data or cfg.curate.vqarad.data)
    frame, report = build_vqarad_adversarial(data, Path(args.image_root or cfg.curate.image_root), int(cfg.seed), llm)
    write_questions(frame, args.out or vcfg.out)
    official = str(beside_out(args.out, args.official, vcfg.official, ".json"))
    write_question_file(official_records(frame), official, with_category=True)
    rep_path = Path(str(beside_out(args.out, args.report, vcfg.report, ".report.md")))
    write_text_atomic(report_markdown(report), rep_path)
    write_json_atomic(report, rep_path.with_suffix(".json"))
    print(f"VQA-RAD adversarial: {report['selected']} yes-questions; twins by rules {report['twins_by_rules']}, "
          f"by LLM {report['twins_by_llm']}, excluded {report['excluded']} (see {rep_path})")
    return 0


def cmd_extract(args: argparse.Namespace) -> int:
    """Extract modality, organ and findings from a caption table into JSONL, in the caption profile named."""
    from functools import partial

    from probmed.benchmark.curation.profiles import PROFILES
    from probmed.benchmark.sources.base import SourceResult
    from probmed.benchmark.sources.captions import read_caption_tsv, run_extractor

    cfg = params_of(args)
    profile = PROFILES[args.profile]
    ex: CaptionExtractor
    if args.method == "rules":  # the rules read the caption in the profile's vocabularies; the LLM answers in all
        from probmed.benchmark.curation.extract_rules import extract

        ex = partial(extract, profile=profile)
    else:
        ex = _narrowed(_extractor(cfg.extract, args.method), profile)
    res = SourceResult("captions")
    items = read_caption_tsv(Path(args.captions), res)
    outs = run_extractor(items, ex, res, profile)
    write_text_atomic("".join(json.dumps(o.to_json()) + "\n" for o in outs), args.out)
    write_json_atomic({"captions": len(items), "extracted": len(outs), "excluded": {k: {"count": len(v), "ids": v} for k, v in res.excluded.items()}},
                      Path(args.out).with_suffix(".report.json"))
    print(f"{len(outs)} of {len(items)} captions extracted -> {args.out}")
    for k, v in res.excluded.items():
        print(f"  excluded ({k}): {len(v)}: {', '.join(v[:10])}{' ...' if len(v) > 10 else ''}")
    return 0


def cmd_extract_eval(args: argparse.Namespace) -> int:
    """Score a caption extractor on a hand-labelled set; exit 1 when a goal is missed."""
    from functools import partial

    from probmed.benchmark.curation.extract_eval import (
        LABELLED_SETS,
        missed_goals,
        read_roco_captions,
        score_labelled_set,
        scores_markdown,
    )

    cfg = params_of(args)
    labelled = LABELLED_SETS[args.set]
    captions = args.captions or f"data/{labelled.captions}"
    if not Path(captions).is_file():
        raise UserError(f"caption table {captions} not found ({labelled.captions})")
    extractor: CaptionExtractor
    if args.method == "rules":  # the rules read the set in its profile; the LLM's answer is narrowed to it
        from probmed.benchmark.curation.extract_rules import extract

        extractor = partial(extract, profile=labelled.profile)
    else:
        extractor = _narrowed(_extractor(cfg.extract, args.method), labelled.profile)
    scores = score_labelled_set(args.labels or labelled.labels, read_roco_captions(captions), extractor)
    table = scores_markdown(scores)
    if args.out:
        write_json_atomic(scores, args.out)
    print(table, end="")
    misses = {part: missed_goals(s) for part, s in scores.items() if part != "all"}
    for part, miss in misses.items():
        if miss:
            print(f"{part}: goal missed: " + "; ".join(miss))
    return 1 if any(misses.values()) else 0


def cmd_stats(args: argparse.Namespace) -> int:
    """Write the Table 1 statistics and the yes/no balance of a question set."""
    from probmed.core.records import read_image_records, read_questions
    from probmed.reporting.table1 import (
        balance,
        modalities_and_organs_vs_paper,
        record_counts,
        table1,
        table1_vs_paper,
        to_markdown,
    )

    cfg = params_of(args)
    q = read_questions(args.questions or cfg.questions.out)
    out = Path(args.out or cfg.questions.stats_dir)
    t1, bal, paper = table1(q), balance(q), table1_vs_paper(q)
    write_text_atomic(t1.to_csv(index=False), out / "table1.csv")
    write_text_atomic(paper.to_csv(index=False), out / "table1_vs_paper.csv")
    write_text_atomic(bal.to_csv(index=False), out / "balance.csv")
    md = "# Dataset statistics (paper Table 1 layout)\n\n" + to_markdown(t1) + "\n## Yes/no balance per category\n\n" + to_markdown(bal)
    md += "\n## Beside the paper's Table 1 (shares in %; paper image counts missing in its text stay empty)\n\n"
    md += to_markdown(paper)
    scope = modalities_and_organs_vs_paper(q)
    write_text_atomic(scope.to_csv(index=False), out / "modalities_organs_vs_paper.csv")
    md += "\n## Modalities and organs beside the paper's (question shares in %; in_paper false: beyond the paper)\n\n"
    md += to_markdown(scope)
    if args.records:
        recs = [r for p in args.records for r in read_image_records(p)]
        rc = record_counts(recs)
        write_text_atomic(rc.to_csv(index=False), out / "records.csv")
        md += "\n## Records per source, modality and organ\n\n" + to_markdown(rc)
    write_text_atomic(md, out / "stats.md")
    print(md)
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    """Export an expert-review sheet, or import its verdicts and report on them."""
    from probmed.benchmark.review import export_review, read_verdicts, review_report
    from probmed.core.records import read_predictions, read_questions

    cfg = params_of(args)
    rcfg = cfg.questions.review
    if args.action in ("truth", "rates"):
        return _truth_review(args, cfg)
    if args.action == "export":
        q = read_questions(args.questions or cfg.predict.questions)  # the evaluated set, as every by-hand command
        sheet = export_review(q, Path(args.out or rcfg.out_dir), args.n or rcfg.n_images, rcfg.seed if args.seed is None else args.seed, Path(cfg.curate.image_root))
        print(f"review sheet: {sheet['image_id'].nunique()} images, {len(sheet)} questions -> {args.out or rcfg.out_dir}")
        return 0
    sheet = read_verdicts(Path(args.sheet))
    preds = read_predictions(args.predictions) if args.predictions else None
    rep = review_report(sheet, preds)
    out = Path(args.out or Path(rcfg.out_dir) / "review_report.json")
    write_json_atomic(rep, out)
    print(json.dumps({k: v for k, v in rep.items() if k != "invalid_qids"}, indent=2))
    return 0


def _truth_review(args: argparse.Namespace, cfg: Any) -> int:
    """`review truth`: the stratified by-eye sample; `review rates SHEET`: its true / doubtful / false counts."""
    from probmed.benchmark.review import read_truth_sheet, truth_rates, truth_sample
    from probmed.core.records import read_questions

    rcfg = cfg.questions.review
    if args.action == "truth":
        seed = rcfg.seed if args.seed is None else args.seed
        sheet = truth_sample(read_questions(args.questions or cfg.predict.questions), args.n or rcfg.n_questions,
                             seed, rcfg.weights)
        out = Path(args.out or Path(rcfg.out_dir) / "truth_review.csv")
        write_text_atomic(sheet.to_csv(index=False), out)
        print(f"truth sheet: {len(sheet)} questions on {sheet['image_id'].nunique()} images (seed {seed}) -> {out}")
        if args.renders:
            from probmed.benchmark.review_render import render_truth_sheet
            from probmed.core.records import read_image_records

            records = {r.image_id: r for path in (args.records or cfg.questions.records) for r in read_image_records(path)}
            paths = render_truth_sheet(sheet, records, Path(cfg.curate.image_root), Path(args.renders))
            print(f"renders: {len(paths)} -> {args.renders}")
        return 0
    rates = truth_rates(read_truth_sheet(Path(args.sheet)))
    print(json.dumps(rates["overall"] | {"images": rates["images"]}, indent=2))
    if args.out:
        write_json_atomic(rates, Path(args.out))
    return 0


def cmd_import_release(args: argparse.Namespace) -> int:
    """Convert the original release's question file into a question table."""
    from probmed.benchmark.sources.probmed_release import import_release
    from probmed.core.records import write_questions

    frame = import_release(Path(args.question_file), args.image_prefix)
    write_questions(frame, args.out)
    print(f"{len(frame)} questions on {frame['image_id'].nunique()} images -> {args.out}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the benchmark-construction commands to the command line."""
    p = sub.add_parser("curate", help="raw source -> image records (Parquet) + exclusion report")
    p.add_argument("source", nargs="+", choices=(*SOURCES.kinds, "all"),
                   help="one or more sources (curate.<source>), or all (curate.all)")
    p.add_argument("--data", help="source directory (default curate.<source>.data)")
    p.add_argument("--out", help="record table of a single source (default <records-dir>/<source>.parquet)")
    p.add_argument("--records-dir", help="<source>.parquet + <source>.report.json go here (default curate.records_dir)")
    p.add_argument("--images-dir", help="each source's PNGs go to IMAGES_DIR/<source>/ (default curate.<source>.images_dir)")
    p.add_argument("--image-root", help="image paths are written relative to this (default curate.image_root)")
    _common(p)
    p.set_defaults(func=cmd_curate)

    p = sub.add_parser("generate", help="image records -> probing questions (Parquet + original test.json)")
    p.add_argument("--records", nargs="+", help="record tables (default questions.records)")
    p.add_argument("--out", help="question table (default questions.out)")
    p.add_argument("--official", help="original-format question file (default questions.official)")
    p.add_argument("--report", help="generation report JSON (default questions.report)")
    p.add_argument("--strategy", choices=("balanced", "random", "popular", "adversarial"))
    p.add_argument("--seed", type=seed_option)
    p.add_argument("--audit-dir", help="where the gate's audit.md / audit.json go (default: <out>.audit/)")
    p.add_argument("--question-set", help="sample images per image type under datasets.question_sets.<set>.image_types first")
    _common(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("vqarad-adversarial", help="the VQA-RAD adversarial ablation set (paper Table 2, left)")
    p.add_argument("--data", help="VQA-RAD directory (default curate.vqarad.data)")
    p.add_argument("--image-root")
    p.add_argument("--out")
    p.add_argument("--official")
    p.add_argument("--report")
    _common(p)
    p.set_defaults(func=cmd_vqarad_adversarial)

    p = sub.add_parser("extract", help="captions (id<TAB>caption) -> modality/organ/findings JSONL")
    p.add_argument("captions")
    p.add_argument("--method", choices=("rules", "llm"), default="rules")
    p.add_argument("--profile", choices=("paper", "extended"), default="paper",
                   help="caption profile: paper (X-ray/CT/MRI; chest, abdomen, brain, spine) or extended "
                   "(ultrasound too, and ten organs: roco_extended's)")
    p.add_argument("--out", required=True, help="JSONL, one extraction per caption (+ <out>.report.json: exclusions)")
    _common(p)
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("extract-eval", help="score a caption extractor on hand-labelled captions (dev and held-out)")
    p.add_argument("--set", choices=("roco-images", "roco-extended"), default="roco-images",
                   help="the labelled set: its labels, captions and caption profile")
    p.add_argument("--labels", help="the set's labels (default: its fixture under tests/fixtures)")
    p.add_argument("--captions", help="the set's metadata.csv (default: data/<set>/metadata.csv)")
    p.add_argument("--method", choices=("rules", "llm"), default="rules")
    p.add_argument("--out", help="scores as JSON")
    _common(p)
    p.set_defaults(func=cmd_extract_eval)

    p = sub.add_parser("stats", help="dataset statistics (paper Table 1 layout) and yes/no balance")
    p.add_argument("--questions")
    p.add_argument("--records", nargs="+")
    p.add_argument("--out")
    _common(p)
    p.set_defaults(func=cmd_stats)

    _register_review(sub)

    p = sub.add_parser("import-release", help="the original ProbMed test.json -> question table")
    p.add_argument("question_file")
    p.add_argument("--out", required=True)
    p.add_argument("--image-prefix", default="", help="directory of the release's images, relative to the image root")
    p.set_defaults(func=cmd_import_release)


def _register_review(sub: Any) -> None:
    """`probmed review export | import | truth | rates`."""
    p = sub.add_parser("review", help="expert review round-trip: export a sheet, import verdicts")
    rs = p.add_subparsers(dest="action", required=True)
    e = rs.add_parser("export")
    e.add_argument("--questions")
    e.add_argument("--n", type=int, help="images to sample")
    e.add_argument("--seed", type=seed_option)
    e.add_argument("--out")
    _common(e)
    i = rs.add_parser("import")
    i.add_argument("sheet", help="the filled review.csv")
    i.add_argument("--predictions", help="prediction table for accuracy on valid-only questions")
    i.add_argument("--out")
    _common(i)
    t = rs.add_parser("truth", help="a stratified sample of questions to judge true / doubtful / false by eye")
    t.add_argument("--questions", help="question table (default predict.questions; the documentation samples the full set)")
    t.add_argument("--n", type=int, help="questions to sample")
    t.add_argument("--seed", type=seed_option)
    t.add_argument("--out")
    t.add_argument("--renders", help="a folder for one PNG per question: the image with its boxes and lung zones, "
                                     "beside the question, the record and its caption")
    t.add_argument("--records", nargs="+", help="the record tables behind the questions (default questions.records)")
    _common(t)
    r = rs.add_parser("rates", help="true / doubtful / false counts of a judged truth sheet")
    r.add_argument("sheet", help="the judged truth_review.csv")
    r.add_argument("--out", help="write the counts as JSON")
    _common(r)
    for q in (e, i, t, r):
        q.set_defaults(func=cmd_review)
