"""The paper's tables and figures across all scored runs, bundled in one HTML page.

`probmed score` covers one run (one metrics.json); this module reads every
``<scores_root>/<question_set>/<model>/<setting>/metrics.json`` and writes, as
Markdown and CSV with one row per (model, setting):

- Table 1: question-set statistics (images and questions per image type and
  category), when question tables are given;
- Table 2: averaged accuracy vs accuracy with adversarial pairs per question
  set, with the drop (the paper's "Worse than Random?" headline);
- Table 3: accuracy with adversarial pairs per category plus overall;
- Table 4: procedural diagnosis and error analysis (every numeric leaf of the
  scorer's ``procedural`` block);
- Appendix A: one table per image type;
- Responses: refusals and unparsed answers, questions that failed after every
  retry and missing predictions, per run;

plus the summary of every model x category (probmed.reporting.summary), the PNG figures of the
figure table (probmed.reporting.figures), ``per_category.csv`` for ``dvc plots``, a compact
``metrics.json`` for ``dvc metrics show`` and ``index.html`` (probmed.reporting.page: the summary, the
chart and the findings on its first screen) that references only files written here.

Accuracies are percentages as the scorer writes them. Each table uses one
definition of "overall" and names it in its header (probmed.reporting.overall):
Table 2 pools the paired categories' units (single questions are reported beside
pairs, never mixed in), Table 3 weights categories as the paper does. Every
number carries the units behind it, and one resting on fewer than
``report.min_units`` is shown as "— (n=...)" (:func:`with_counts`); the CSVs keep
numbers and units in separate columns. Beside exact random the report names the
audit's blind ceiling and says per category whether a model is distinguishable
from it (probmed.reporting.distinguish).
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES
from probmed.core.errors import ReportError
from probmed.core.markdown import is_missing, markdown_table, number_cell
from probmed.core.params_schema import Report
from probmed.core.settings import SETTING_NAMES
from probmed.infra.io import remove_stale_temps, write_json_atomic, write_text_atomic
from probmed.infra.tables import read_parquet
from probmed.reporting import page
from probmed.reporting.comparisons import (
    Comparisons,
    compare_runs,
    differences_table,
    reliance_table,
    warnings,
)
from probmed.reporting.distinguish import ceiling_by_category, distinguishability_table, scoring_units
from probmed.reporting.figures import DrawnFigure, draw_all, file_stem
from probmed.reporting.overall import (
    AVERAGED_POOLED_HEADER,
    DEFINITIONS,
    PAPER_WEIGHTED,
    POOLED,
    overall_metrics,
)
from probmed.reporting.runs import Run
from probmed.reporting.summary import ceiling_values, findings, headline_runs, summary_table
from probmed.scoring.compare import Bootstrap
from probmed.scoring.score_report import ScoreReport, ScoreSection, number
from probmed.scoring.tables import response_values

SETTING_ORDER = {name: i for i, name in enumerate(SETTING_NAMES)}
N_SUFFIX = " n"  # a column "<c> n" holds the units behind column <c>; the page shows them in one cell


# --- inputs ---------------------------------------------------------------------


def discover_runs(scores_root: str | Path | Iterable[str | Path]) -> list[Run]:
    """Every ``<question_set>/<model>/<setting>/metrics.json`` under the score root(s), sorted.

    Several roots let the report join evaluations written elsewhere in the same
    layout (the fine-tuning transfer study's ``build/finetune/transfer/scores``).
    """
    roots = [Path(scores_root)] if isinstance(scores_root, (str, Path)) else [Path(r) for r in scores_root]
    runs: list[Run] = []
    for root in roots:
        runs += _discover(root)
    if not runs:
        raise ReportError(f"no <question_set>/<model>/<setting>/metrics.json under {', '.join(map(str, roots))}")
    seen: set[tuple[str, str, str]] = set()
    for run in runs:
        key = (run.question_set, run.model, run.setting)
        if key in seen:
            raise ReportError(f"{run.path}: {'/'.join(key)} appears under two score roots")
        seen.add(key)
    runs.sort(key=lambda r: (r.question_set, r.model, SETTING_ORDER.get(r.setting, 9), r.setting))
    return runs


def _discover(root: Path) -> list[Run]:
    if not root.is_dir():
        raise ReportError(f"scores directory {root} not found")
    runs = []
    for path in sorted(root.glob("*/*/*/metrics.json")):
        question_set, model, setting = path.relative_to(root).parts[:3]
        runs.append(Run(question_set, model, setting, ScoreReport.load(path)))
    return runs


def _nan(value: Any) -> float:
    """A metric leaf as a float, NaN for null or anything that is not a number (shown as a dash)."""
    found = number(value)
    return math.nan if found is None else found


# --- tables ---------------------------------------------------------------------


def long_table(runs: Iterable[Run]) -> pd.DataFrame:
    """One row per (run, image type or ``all``, category) with every metric the scorer gives."""
    rows = []
    for run in runs:
        for image_type, category, values in run.scores.blocks():
            row: dict[str, Any] = {"question_set": run.question_set, "model": run.model, "setting": run.setting}
            row.update({"image_type": image_type, "category": category})
            row.update({k: _nan(v) for k, v in values.items() if not isinstance(v, (dict, list))})
            rows.append(row)
    return pd.DataFrame(rows)


def table_dataset(questions: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Table 1: images and questions per image type and category, per question set."""
    rows = []
    for name, frame in questions.items():
        for image_type, group in frame.groupby("image_type", sort=True):
            row: dict[str, Any] = {"question_set": name, "image_type": image_type}
            row["images"] = group["image_id"].nunique()
            row["questions"] = len(group)
            for category in CATEGORIES:
                row[category] = int((group["category"] == category).sum())
            rows.append(row)
        row = {"question_set": name, "image_type": "all", "images": frame["image_id"].nunique()}
        row["questions"] = len(frame)
        row.update({c: int((frame["category"] == c).sum()) for c in CATEGORIES})
        rows.append(row)
    return pd.DataFrame(rows)


def _paired_summary(scores: ScoreReport) -> tuple[float, float]:
    """(averaged, strict) accuracy over the paired questions of a run, both pooled (one definition of overall).

    The scorer's pooled ``overall.averaged_accuracy`` / ``overall.accuracy_adv_pairs``
    (the paper's Table 2 definitions) when present; otherwise the same pooling from
    the categories: averaged weighted by their questions, strict by their units.
    """
    avg, strict = scores.overall_value("averaged_accuracy"), scores.overall_value("accuracy_adv_pairs")
    if not (math.isnan(avg) or math.isnan(strict)):
        return avg, strict
    num_avg = num_strict = weight = 0.0
    units = 0.0
    for category in PAIRED_CATEGORIES:
        n, k = scores.value(category, "n_questions"), scores.value(category, "n_units")
        avg, strict = scores.value(category, "averaged_accuracy"), scores.value(category, "accuracy_adv_pairs")
        if math.isnan(n) or n <= 0 or math.isnan(avg) or math.isnan(strict):
            continue
        k = n if math.isnan(k) else k  # an older score without unit counts: its questions
        num_avg += avg * n
        num_strict += strict * k
        weight += n
        units += k
    if weight == 0:
        return math.nan, math.nan
    return num_avg / weight, num_strict / units


def table_adversarial_drop(runs: Iterable[Run]) -> pd.DataFrame:
    """Table 2: per (model, setting), each question set's averaged vs strict accuracy and the drop."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        avg, strict = _paired_summary(run.scores)
        row = rows.setdefault((run.model, run.setting), {"model": run.model, "setting": run.setting})
        row[f"{run.question_set} averaged, pooled"] = avg
        row[f"{run.question_set} {POOLED.header}"] = strict
        row[f"{run.question_set} {POOLED.header}{N_SUFFIX}"] = run.scores.overall_value("n_units")
        row[f"{run.question_set} drop %"] = (avg - strict) / avg * 100 if avg and not math.isnan(avg) else math.nan
    return pd.DataFrame(list(rows.values()))


# Table 3's overall columns, each named for its definition (probmed.reporting.overall).
OVERALL_COLUMNS: dict[str, str] = {
    **{d.score_key: d.header for d in DEFINITIONS},
    "averaged_accuracy": AVERAGED_POOLED_HEADER,
    "gt_only_accuracy": "overall gt-only (pooled units)",
    "single_accuracy": "overall single questions",
}


def _category_row(head: dict[str, Any], scores: ScoreSection, counts: ScoreSection) -> dict[str, Any]:
    """A Table 3 row of `scores`, with the units behind each category from `counts` (the run itself, also for
    its exact random baseline: the same questions)."""
    row = dict(head)
    for category in CATEGORIES:
        row[category] = scores.value(category, "accuracy_adv_pairs")
    for category in CATEGORIES:  # the CSV keeps the numbers first, their units after
        row[category + N_SUFFIX] = scoring_units(counts, category)
    for key, name in OVERALL_COLUMNS.items():
        if key in scores.overall:
            row[name] = scores.overall_value(key)
    row["units"] = counts.overall_value("n_units")
    return row


def table_categories(runs: Iterable[Run]) -> pd.DataFrame:
    """Table 3: accuracy with adversarial pairs per category and the overall accuracies.

    Each question set also gets a ``random (exact)`` row: the scorer's exact
    expectation under uniform yes/no answers on the same questions.
    """
    rows, seen = [], set()
    for run in runs:  # runs come sorted by question set: the exact baseline heads each set's rows
        baseline = run.scores.random_baseline
        if run.question_set not in seen and baseline is not None:
            seen.add(run.question_set)
            rows.append(_category_row({"question_set": run.question_set, "model": "random (exact)", "setting": "-"},
                                      baseline, run.scores))
        rows.append(_category_row({"question_set": run.question_set, "model": run.model, "setting": run.setting},
                                  run.scores, run.scores))
    return pd.DataFrame(rows)


# The report's responses columns: scoring.tables' response key -> the report's column name (no yes share).
RESPONSE_COLUMNS: dict[str, str] = {"n_questions": "questions", "refusal_rate": "refusal_rate",
                                    "unparsed_rate": "unparsed_rate", "failed": "failed", "missing": "missing"}


def table_responses(runs: Iterable[Run]) -> pd.DataFrame:
    """What came back per run (the overall block of scoring.tables.response_values, unrounded): refusals and
    unparsed answers (%), questions that failed after every retry and questions without a prediction
    (counts), so an API outage never reads as a model that cannot answer."""
    rows = []
    for run in runs:
        values = response_values(run.scores.overall, rounded=False)
        rows.append({"question_set": run.question_set, "model": run.model, "setting": run.setting,
                     **{name: _nan(values[key]) for key, name in RESPONSE_COLUMNS.items()}})
    return pd.DataFrame(rows)


def table_procedural(runs: Iterable[Run]) -> pd.DataFrame:
    """Table 4: every numeric leaf of the scorer's procedural diagnosis / error analysis."""
    rows = []
    for run in runs:
        row: dict[str, Any] = {"question_set": run.question_set, "model": run.model, "setting": run.setting}
        for key, value in run.scores.leaves("procedural").items():
            if not isinstance(value, (list, str)):
                row[key] = _nan(value)
        rows.append(row)
    return pd.DataFrame(rows)


def procedural_by_stage(table4: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Table 4 split by diagnosis stage (stage -> run columns + that stage's measures), so each fits a page."""
    head = ["question_set", "model", "setting"]
    out = {}
    for stage in dict.fromkeys(c.split(".", 1)[0] for c in table4.columns if "." in c):
        cols = [c for c in table4.columns if c.startswith(f"{stage}.")]
        frame = table4[head + cols].rename(columns={c: c.split(".", 1)[1] for c in cols})
        if {"accuracy", "n_images"} <= set(frame.columns):  # the stage's accuracy rests on its images
            frame = frame.assign(**{"accuracy" + N_SUFFIX: frame["n_images"]})
        out[stage] = frame
    return out


_COUNT = re.compile(r"(^|[ ._])(n|n_\w+|num|images|questions|units|missing|failed)$")


def counts_as_integers(frame: pd.DataFrame) -> pd.DataFrame:
    """Count columns (n_*, images, questions, num, missing, failed) as integers (missing stays missing), never "3.00"."""
    out = frame.copy()
    for col in out.columns:
        values = pd.to_numeric(out[col], errors="coerce") if out[col].dtype == object else out[col]
        if _COUNT.search(str(col)) and values.dtype.kind in "fi" and values.notna().any():
            finite = values.dropna()
            if (finite == finite.round()).all():
                out[col] = values.round().astype("Int64")
    return out


def tables_by_image_type(runs: Iterable[Run]) -> dict[str, pd.DataFrame]:
    """Appendix A: for each image type, strict accuracy per category, one row per run."""
    out: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        for image_type in sorted(run.scores.image_types):
            row: dict[str, Any] = {"question_set": run.question_set, "model": run.model, "setting": run.setting}
            for category in CATEGORIES:
                row[category] = run.scores.value(category, "accuracy_adv_pairs", image_type)
            for category in CATEGORIES:
                row[category + N_SUFFIX] = scoring_units(run.scores, category, image_type)
            out.setdefault(image_type, []).append(row)
    return {k: pd.DataFrame(v) for k, v in out.items()}


def _counted(value: Any, n: Any, min_units: int, digits: int = 2) -> str:
    """A number with the units behind it; below `min_units` the n alone, so a thin number never reads as a result."""
    if is_missing(n):
        return number_cell("—", digits)(value)
    count = int(n)
    if is_missing(value) or count < min_units:
        return "—" if count == 0 else f"— (n={count})"
    return f"{number_cell('—', digits)(value)} (n={count})"


def with_counts(frame: pd.DataFrame, min_units: int) -> pd.DataFrame:
    """Each column ``c`` that has a companion ``c + N_SUFFIX`` shown as one cell, ``"43.90 (n=52)"``, or
    ``"— (n=3)"`` below `min_units`; the companions dropped (the CSV keeps both as numbers)."""
    out = frame.copy()
    for col in [c for c in frame.columns if f"{c}{N_SUFFIX}" in frame.columns]:
        out[col] = [_counted(v, n, min_units) for v, n in zip(frame[col], frame[col + N_SUFFIX])]
        out = out.drop(columns=col + N_SUFFIX)
    return out


def to_markdown(frame: pd.DataFrame, digits: int = 2) -> str:
    """A GitHub Markdown table; NaN shows as an em dash so missing never reads as 0."""
    return markdown_table(frame, cell=number_cell("—", digits))


def to_html_table(frame: pd.DataFrame, digits: int = 2) -> str:
    """An HTML table with the Markdown tables' cells: a missing value (NaN, None, pandas' <NA>) as an em dash."""
    cell = number_cell("—", digits)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = ["<tr>" + "".join(f"<td>{html.escape(cell(v))}</td>" for v in row) + "</tr>"
            for row in frame.itertuples(index=False)]
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def slug(text: str) -> str:
    """``"X-ray - Chest"`` -> ``"x_ray_chest"`` (file names for the appendix tables)."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


# --- the report -----------------------------------------------------------------


def read_audit(directory: Path) -> dict[str, Any]:
    """The audit.json of a `probmed audit` directory."""
    path = directory / "audit.json"
    if not path.is_file():
        raise ReportError(f"audit {path} not found (run `probmed audit` first)")
    return json.loads(path.read_text(encoding="utf-8"))


def audited_set(name: str, question_sets: Iterable[str]) -> str:
    """The evaluated question set an audit stands for: its own name, else the set it is the full version of
    (``probmed-full`` -> ``probmed``: the evaluated subset is drawn from the audited full set)."""
    sets = set(question_sets)
    return name if name in sets or not name.endswith("-full") else name.removesuffix("-full")


def ceiling_table(name: str, audit: Mapping[str, Any]) -> pd.DataFrame:
    """The audit's blind ceiling per category on the scorer's unit beside exact random and the floor (empty when
    the audit has none)."""
    from probmed.benchmark.audit.blind_ceiling import learner_label

    rows = [{"category": cat, "unit": entry["unit"], "units": entry["units"], "exact random": entry["random"],
             "floor": entry["floor"], "blind ceiling": entry["ceiling"], "reached by": learner_label(entry["reached_by"])}
            for cat, entry in ceiling_by_category(audit).items()]
    return pd.DataFrame(rows).assign(audit=name) if rows else pd.DataFrame()


def audit_table(name: str, directory: Path, audit: dict[str, Any]) -> tuple[str, pd.DataFrame, str]:
    """(caption, table, the full audit as Markdown) of a `probmed audit` directory (``audit``: its audit.json)."""
    from probmed.benchmark.audit.report import baseline_rows

    gate = audit.get("gate") or {}
    verdict = "passed" if gate.get("passed") else "failed"
    caption = (f"Benchmark validity ({name}): text-only baselines beside exact random (strict %); gate {verdict}, "
               f"{number_cell('—')(audit['contradictions'].get('count'))} contradicted 'no', {audit['lint']['findings']} lint findings")
    return caption, pd.DataFrame(baseline_rows(audit)), (directory / "audit.md").read_text(encoding="utf-8")


def paper_tables(runs: list[Run], question_frames: Mapping[str, pd.DataFrame],
                 full_questions: Mapping[str, str | Path] | None) -> dict[str, tuple[str, pd.DataFrame]]:
    """The paper's tables 1-4 and Appendix A: name -> (caption, frame)."""
    tables: dict[str, tuple[str, pd.DataFrame]] = {}
    if question_frames:
        tables["table1_dataset"] = ("Table 1: question-set statistics", table_dataset(question_frames))
    for name, path in (full_questions or {}).items():  # the full generated set beside the paper's Table 1
        from probmed.reporting.table1 import table1_vs_paper

        tables[f"table1_{slug(name)}_vs_paper"] = (
            f"Table 1: the full generated set '{name}' per image type, beside the paper's shares "
            "(images %, questions %, yes % of the paper's Table 1; four image counts unreadable in the paper's text)",
            table1_vs_paper(read_parquet(path, "question table")),
        )
    tables["table2_adversarial_drop"] = (
        f"Table 2: averaged accuracy vs accuracy with adversarial pairs, both overall as pooled units: "
        f"{POOLED.meaning} (n = units)", table_adversarial_drop(runs))
    table3 = table_categories(runs)
    head = ["question_set", "model", "setting"]
    by_category = [c for c in table3.columns if c.removesuffix(N_SUFFIX) in CATEGORIES or c == PAPER_WEIGHTED.header]
    tables["table3_categories"] = (
        f"Table 3: accuracy with adversarial pairs per category (n = scoring units); overall paper-weighted: "
        f"{PAPER_WEIGHTED.meaning}", table3[head + by_category + ["units"]])
    tables["table3_overall"] = ("Table 3 (continued): every overall accuracy, each named for its pooling",
                                table3[head + [c for c in table3.columns if c not in head + by_category]])
    for stage, frame in procedural_by_stage(table_procedural(runs)).items():
        tables[f"table4_procedural_{slug(stage)}"] = (
            f"Table 4: procedural diagnosis and error analysis, {stage} (error shares in % of the stage's errors)",
            frame)
    tables["responses"] = ("Responses: refusals and unparsed answers (%), failed after retries and missing (counts)",
                           table_responses(runs))
    for image_type, frame in tables_by_image_type(runs).items():
        tables[f"appendix_{slug(image_type)}"] = (
            f"Appendix A: {image_type}, accuracy with adversarial pairs per category (n = scoring units)", frame)
    return tables


def compared_pairs(report: Report) -> list[tuple[str, str]]:
    """The model pairs to difference: report.model_comparisons, and the transfer models (second minus first),
    whose per-image-type differences Figure 5 and the first screen's transfer line show."""
    pairs = [(str(a), str(b)) for a, b in report.model_comparisons]
    if len(report.transfer_models) >= 2:
        pairs.append((report.transfer_models[1], report.transfer_models[0]))
    return list(dict.fromkeys(pairs))


def main_sets_first(runs: list[Run], question_sets: Sequence[str]) -> list[Run]:
    """The runs with the question sets of params ``datasets.question_sets`` first, in their order (the main
    benchmark opens the page), then any other set (e.g. the fine-tuning study's) by name."""
    rank = {name: i for i, name in enumerate(question_sets)}
    return sorted(runs, key=lambda r: (rank.get(r.question_set, len(rank)), r.question_set))


def audit_ceilings(audits: Mapping[str, Mapping[str, Any]], question_sets: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Evaluated question set -> its audit's blind ceiling per category (distinguish.ceiling_by_category: the one
    reader of the audit's ceiling, so a new estimator is wired in there)."""
    sets = list(question_sets)
    # an audit of the evaluated set itself wins over that of the full set it was drawn from
    ordered = sorted(audits.items(), key=lambda item: item[0] in sets)
    return {audited_set(name, sets): ceiling_by_category(audit) for name, audit in ordered}


def distinguish_tables(runs: list[Run], comp: Comparisons, audits: Mapping[str, Mapping[str, Any]],
                       ceilings: Mapping[str, Mapping[str, Any]], report: Report, boot: Bootstrap
                       ) -> dict[str, tuple[str, pd.DataFrame]]:
    """The blind ceiling of each audit beside random, and per model and category whether it is distinguishable
    from random, from the blind ceiling and from the blind baseline run (``ceilings``: :func:`audit_ceilings`)."""
    tables = {}
    for name, audit in audits.items():
        frame = ceiling_table(name, audit)
        if not frame.empty:
            tables[f"blind_ceiling_{slug(name)}"] = (
                f"Blind ceiling ({name}): the best strict accuracy a model that never sees the image reaches (fixed "
                "answer tables searched for the unit's accuracy, a learnt text-only model), learnt on 4/5 of the "
                "images and scored on the rest, on the scorer's unit, beside exact random and the floor", frame)
    frame = distinguishability_table(runs, comp, ceilings, report, boot)
    if not frame.empty:
        tables["distinguishable"] = (
            "Which models the data tell from a blind one: per category, strict accuracy with its bootstrap 95% "
            "interval over images, against exact random, the audit's blind ceiling on the same unit and the blind "
            f"baseline run '{report.blind_model}' (paired 95% interval); 'not distinguishable': the interval includes "
            f"it; '— (n=...)': fewer than {report.min_units} units (report.min_units), no verdict", frame)
    return tables


def comparison_tables(comp: Comparisons) -> dict[str, tuple[str, pd.DataFrame]]:
    """Visual reliance and every paired difference, each difference with its paired 95% interval."""
    tables: dict[str, tuple[str, pd.DataFrame]] = {}
    if not comp.reliance.empty:
        tables["visual_reliance"] = (
            "Visual reliance: accuracy with the real image minus with a blank / shuffled image (points, paired "
            "bootstrap 95% interval over images; overall = pooled units); 'answers without looking': every "
            "control's interval includes 0",
            reliance_table(comp))
    if not comp.differences.empty:
        tables["paired_differences"] = (
            "Paired differences: each ablation minus vanilla and each model pair of report.model_comparisons "
            "(points, paired bootstrap 95% interval over the same images; overall = pooled units)",
            differences_table(comp))
    return tables


def build_report(
    scores_root: str | Path | Iterable[str | Path],
    out_dir: str | Path,
    questions: Mapping[str, str | Path] | None = None,
    full_questions: Mapping[str, str | Path] | None = None,
    audits: Mapping[str, str | Path] | None = None,
    report: Report | None = None,
    bootstrap: Bootstrap | None = None,
    palette: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write every table, plot and index.html into ``out_dir``; returns the manifest written too.

    ``audits``: question-set name -> ``probmed audit`` directory (audit.json, audit.md): a
    benchmark-validity table per set, and the full audit linked. ``report``: params ``report`` (title,
    the model pairs to compare, the transfer figure, the heatmap threshold); ``bootstrap``: how every
    paired difference is resampled (params ``score``); ``palette``: model -> colour."""
    report = report or Report()
    runs = main_sets_first(discover_runs(scores_root), list(questions or {}))
    out = Path(out_dir)
    remove_stale_temps(out)  # what a killed report left behind (hidden .tmp files) never stays in its outputs
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    question_frames = {name: read_parquet(path, "question table") for name, path in (questions or {}).items()}
    comp = compare_runs(runs, bootstrap or Bootstrap(), compared_pairs(report))
    audit_docs = {name: read_audit(Path(directory)) for name, directory in (audits or {}).items()}  # each read once
    ceilings = audit_ceilings(audit_docs, [r.question_set for r in runs])
    summary = summary_table(runs, comp, ceilings, report)

    tables = paper_tables(runs, question_frames, full_questions)
    tables.update(distinguish_tables(runs, comp, audit_docs, ceilings, report, bootstrap or Bootstrap()))
    tables.update(comparison_tables(comp))
    files: dict[str, list[str]] = {"tables": [], "plots": [], "data": []}
    for name, directory in (audits or {}).items():
        caption, frame, md = audit_table(name, Path(directory), audit_docs[name])
        tables[f"audit_{slug(name)}"] = (caption, frame)
        write_text_atomic(md, out / "audit" / f"{slug(name)}.md")
        files["data"].append(f"audit/{slug(name)}.md")
    tables = {name: (caption, counts_as_integers(frame)) for name, (caption, frame) in tables.items()}
    shown = {name: (caption, with_counts(frame, report.min_units)) for name, (caption, frame) in tables.items()}
    for name, (_, frame) in [("summary", (None, summary)), *tables.items()]:
        write_text_atomic(frame.to_csv(index=False), out / "tables" / f"{name}.csv")
        write_text_atomic(to_markdown(shown[name][1] if name in shown else frame), out / "tables" / f"{name}.md")
        files["tables"] += [f"tables/{name}.csv", f"tables/{name}.md"]
    files["data"] += write_data(runs, comp, out)

    figure_ceilings = {qset: ceiling_values(group[0], ceilings.get(qset) or {})
                       for qset in dict.fromkeys(r.question_set for r in runs)
                       if (group := headline_runs(runs, qset, report))}
    figures = draw_all(runs, question_frames, out / "plots", report, comparisons=comp, palette=palette,
                       ceilings=figure_ceilings)
    files["plots"] = [f"plots/{f.path.name}" for f in figures]

    page = render_html(report, runs, summary, shown, files, warnings(comp), figures, comp)
    write_text_atomic(page, out / "index.html")
    manifest = {"runs": [f"{r.question_set}/{r.model}/{r.setting}" for r in runs], "files": files}
    missing = [f for group in files.values() for f in group if not (out / f).is_file()]
    if missing:  # render_html only links what was written; this guards that promise
        raise ReportError(f"report would reference missing file(s): {missing}")
    write_json_atomic(manifest, out / "manifest.json")
    return manifest


def write_data(runs: list[Run], comp: Comparisons, out: Path) -> list[str]:
    """The machine-readable files beside the tables: every metric, the per-category CSV `dvc plots` reads,
    the full Table 4, the comparisons as long tables, and the compact metrics.json."""
    long = long_table(runs)
    write_text_atomic(long.to_csv(index=False), out / "all_metrics.csv")
    per_category = long[long["image_type"] == "all"].copy()
    per_category["run"] = per_category["question_set"] + "-" + per_category["model"] + "-" + per_category["setting"]
    per_category["label"] = per_category["run"] + ": " + per_category["category"]
    keep = ["label", "run", "category", "accuracy_adv_pairs", "averaged_accuracy"]
    write_text_atomic(per_category.reindex(columns=keep).to_csv(index=False), out / "per_category.csv")
    write_text_atomic(counts_as_integers(table_procedural(runs)).to_csv(index=False), out / "table4_procedural.csv")
    write_text_atomic(comp.differences.to_csv(index=False), out / "paired_differences.csv")
    write_text_atomic(comp.reliance.to_csv(index=False), out / "visual_reliance.csv")
    write_json_atomic(summary_metrics(runs, comp), out / "metrics.json")
    return ["all_metrics.csv", "per_category.csv", "table4_procedural.csv", "paired_differences.csv",
            "visual_reliance.csv", "metrics.json"]


def summary_metrics(runs: Iterable[Run], comp: Comparisons | None = None) -> dict[str, Any]:
    """The compact metrics `dvc metrics show` lists: per run, overall and per-category headline numbers,
    and per model with image controls its visual reliance (strict drop per control and category)."""

    def clean(value: float) -> float | None:
        return None if math.isnan(value) else round(value, 4)

    out: dict[str, Any] = {}
    for run in runs:
        scores = run.scores
        overall = {name: clean(math.nan if v is None else v) for name, v in overall_metrics(scores.overall).items()}
        overall["averaged_pooled"] = clean(scores.overall_value("averaged_accuracy"))
        entry: dict[str, Any] = {"overall": overall}
        for category in scores.categories:
            entry[category] = {k: clean(scores.value(category, k)) for k in ("accuracy_adv_pairs", "averaged_accuracy")}
        out[f"{run.question_set}-{run.model}-{run.setting}"] = entry
    if comp is not None:
        strict = comp.reliance[comp.reliance["metric"] == "strict"]
        for r in strict.itertuples(index=False):
            key = f"{r.question_set}-{r.model}-reliance"
            out.setdefault(key, {}).setdefault(r.control, {})[r.category] = clean(r.drop)
    return out


def render_html(report: Report, runs: list[Run], summary: pd.DataFrame, tables: Mapping[str, tuple[str, pd.DataFrame]],
                files: Mapping[str, list[str]], notes: Sequence[str] = (), figures: Sequence[DrawnFigure] = (),
                comp: Comparisons | None = None) -> str:
    """One static page (probmed.reporting.page): the main question set's summary, the chart after Figure 1 and
    the findings on the first screen; then contents, warnings, the headline tables, the figures, the long tables
    (collapsed) and links to every file written."""
    esc = html.escape
    main = runs[0].question_set
    main_summary = summary[summary["question_set"] == main]
    headline = next((f for f in figures if f.path.name == f"headline_{file_stem(main)}.png"), None)
    found = findings(summary, comp or Comparisons(), main, report)
    lead = page.lead_html(main_summary, _count(runs[0], "n_images"), _count(runs[0], "n_questions"))
    first = page.first_screen(report.title, lead, page.summary_html(main_summary, report.min_units), headline, found,
                              len(notes))
    sections = []
    if notes:
        sections.append(page.Section("warnings", "Warnings", "<div class='warn'><ul>"
                                     + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul></div>"))
    sections.append(page.reading_section())
    others = [q for q in dict.fromkeys(summary["question_set"]) if q != main]
    if others:
        sections.append(page.Section("other-summaries", "Summary of the other question sets", "".join(
            f"<h3>{esc(q)}</h3>" + page.summary_html(summary[summary["question_set"] == q], report.min_units)
            for q in others)))
    grouped = page.table_sections(tables, to_html_table)  # the headline tables before the figures, long ones after
    sections += [s for s in grouped if not s.collapsed]
    sections.append(page.figures_section([f for f in figures if f is not headline],
                                         lambda f: "fig-" + f.path.stem))
    sections += [s for s in grouped if s.collapsed]
    runs_list = "".join(f"<li>{esc(r.question_set)} / {esc(r.model)} / {esc(r.setting)}</li>" for r in runs)
    data = "".join(f"<li><a href='{esc(p)}'>{esc(p)}</a></li>" for p in files["data"])
    sections.append(page.Section("files", f"Runs ({len(runs)}) and data files",
                                 f"<h3>Runs</h3><ul>{runs_list}</ul><h3>Data</h3><ul>{data}</ul>", collapsed=True))
    return page.render(report.title, first, sections)


def _count(run: Run, key: str) -> int | None:
    value = run.scores.overall_value(key)
    return None if math.isnan(value) else int(value)
