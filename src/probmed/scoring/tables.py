"""The paper's tables, as CSV and Markdown, from one or more runs' metrics.

Every table takes ``runs``: an ordered mapping of a row label (model / setting)
to that run's scores (a ScoreReport, or the metrics dict of probmed.scoring.metrics),
so a report can put many runs side by side with the same code that writes one
run's tables.

* Table 2: averaged accuracy vs accuracy with adversarial pairs, and the drop.
  "With adversarial pairs" is the original weighting on a ProbMed-style set and
  the pooled pair accuracy on a VQA-RAD set (pairs scored one by one).
* Table 3: accuracy with adversarial pairs per category and overall (both
  weightings), first row the exact random-choice baseline of the question set.
* Appendix A: per image type, "Acc. with adv. pairs" and "Avg. acc." rows per
  run under the random-choice row, then the ``num`` row.
* Table 4: procedural diagnosis accuracy and error shares, one column per run.
* Appendix C (Table 18): subset robustness.
* Responses: refusals, unparsed answers, questions that failed after every retry
  and missing predictions, per category (failures are never counted as unparsed).

Numbers are percent with two decimals; undefined values are empty in CSV and
"/" in Markdown (as in the paper).
"""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from probmed.core.categories import CATEGORIES, CATEGORY_TITLES, PROCEDURAL_STAGES
from probmed.core.markdown import markdown_table, number_cell
from probmed.scoring.procedural import error_keys
from probmed.scoring.score_report import ScoreReport, ScoreSection, number

RANDOM_ROW = "Random Choice"

Runs = Mapping[str, "ScoreReport | Mapping[str, Any]"]


def _r(value: Any) -> Any:
    return None if value is None else round(float(value), 2)


def _scores(run: ScoreReport | Mapping[str, Any]) -> ScoreReport:
    return run if isinstance(run, ScoreReport) else ScoreReport.from_dict(run)


def _baseline(scores: ScoreReport) -> ScoreSection:
    """The run's exact random-choice baseline (empty when it has none)."""
    return scores.random_baseline or ScoreSection()


def _overall(scores: ScoreSection, key: str) -> float | None:
    return number(scores.overall.get(key))


def table2_strict(metrics: ScoreReport | Mapping[str, Any]) -> float | None:
    """The "with adversarial pairs" number of Table 2 for one run (see module doc)."""
    scores = _scores(metrics)
    if scores.meta is not None and scores.meta.question_set == "vqarad":
        return _overall(scores, "accuracy_adv_pairs")
    return _overall(scores, "accuracy_adv_pairs_original_weighting")


def table2(runs: Runs, vqarad_runs: Runs | None = None) -> pd.DataFrame:
    """One row per model; with ``vqarad_runs`` the paper's side-by-side layout (VQA-RAD
    columns first, matched to ``runs`` by model name, "/" where a model lacks one set)."""

    def block(m: ScoreReport | Mapping[str, Any] | None, prefix: str) -> dict[str, Any]:
        if m is None:
            return {f"{prefix}averaged_accuracy": None, f"{prefix}accuracy_adv_pairs": None, f"{prefix}drop": None}
        avg = _overall(_scores(m), "averaged_accuracy")
        strict = table2_strict(m)
        drop = None if avg is None or strict is None else strict - avg
        return {f"{prefix}averaged_accuracy": _r(avg), f"{prefix}accuracy_adv_pairs": _r(strict), f"{prefix}drop": _r(drop)}

    keys = ["averaged_accuracy", "accuracy_adv_pairs", "drop"]
    if vqarad_runs is None:
        rows = [{"model": name, **block(m, "")} for name, m in runs.items()]
        return pd.DataFrame(rows, dtype=object, columns=["model", *keys])
    names = list(vqarad_runs) + [n for n in runs if n not in vqarad_runs]
    rows = [{"model": n, **block(vqarad_runs.get(n), "vqarad_"), **block(runs.get(n), "probmed_")} for n in names]
    columns = ["model", *(f"vqarad_{k}" for k in keys), *(f"probmed_{k}" for k in keys)]
    return pd.DataFrame(rows, dtype=object, columns=columns)


def table3(runs: Runs) -> pd.DataFrame:
    """Table 3: one row per run under the random-choice row, per category and overall in both weightings."""
    columns = ["model", *CATEGORIES, "overall", "overall_question_weighting"]
    rows = []
    scored = [(name, _scores(m)) for name, m in runs.items()]
    labelled: list[tuple[str, ScoreSection]] = list(scored)
    if scored:
        labelled.insert(0, (RANDOM_ROW, _baseline(scored[0][1])))
    for name, scores in labelled:
        rows.append(
            {
                "model": name,
                **{c: _r(scores.number(c, "accuracy_adv_pairs")) for c in CATEGORIES},
                "overall": _r(_overall(scores, "accuracy_adv_pairs_original_weighting")),
                "overall_question_weighting": _r(_overall(scores, "accuracy_adv_pairs_question_weighting")),
            }
        )
    return pd.DataFrame(rows, dtype=object, columns=columns)


def table_image_types(runs: Runs) -> pd.DataFrame:
    """Appendix A: one block of rows per image type."""
    columns = ["image_type", "model", "metric", *CATEGORIES]
    rows: list[dict[str, Any]] = []
    if not runs:
        return pd.DataFrame(rows, dtype=object, columns=columns)
    scored = {name: _scores(m) for name, m in runs.items()}
    baseline = _baseline(next(iter(scored.values())))
    for itype in sorted({t for s in scored.values() for t in s.image_types}):
        blocks: list[tuple[str, str, ScoreSection, str]] = [(RANDOM_ROW, "Acc. with adv. pairs", baseline,
                                                             "accuracy_adv_pairs")]
        for name, scores in scored.items():
            blocks += [(name, "Acc. with adv. pairs", scores, "accuracy_adv_pairs"), (name, "Avg. acc.", scores, "averaged_accuracy")]
        for name, metric, block, key in blocks:
            rows.append({"image_type": itype, "model": name, "metric": metric,
                         **{c: _r(block.number(c, key, itype)) for c in CATEGORIES}})
        num: dict[str, Any] = {}
        for scores in scored.values():
            for c in scores.categories_of(itype):
                num.setdefault(c, scores.category(c, itype)["num"])
        rows.append({"image_type": itype, "model": "", "metric": "num", **{c: num.get(c) for c in CATEGORIES}})
    return pd.DataFrame(rows, dtype=object, columns=columns)


def _table4_rows() -> tuple[tuple[str, str, str], ...]:
    """(stage, title, key): each stage's accuracy and error shares (as scoring.procedural splits
    them), then every stage's number of images."""
    rows = []
    for stage in PROCEDURAL_STAGES:
        rows += [(stage, CATEGORY_TITLES[stage], key) for key in ("accuracy", *error_keys(stage))]
    rows += [(stage, CATEGORY_TITLES[stage], "n_images") for stage in PROCEDURAL_STAGES]
    return tuple(rows)


TABLE4_ROWS: tuple[tuple[str, str, str], ...] = _table4_rows()


def table4(runs: Runs) -> pd.DataFrame:
    """Table 4: one row per TABLE4_ROWS entry, one column per run (n_images as counted, the rest in percent)."""
    rows = []
    for stage, title, key in TABLE4_ROWS:
        row: dict[str, Any] = {"question_type": title, "metric": key}
        for name, m in runs.items():
            value = (_scores(m).procedural.get(stage) or {}).get(key)
            row[name] = value if key == "n_images" else _r(value)
        rows.append(row)
    return pd.DataFrame(rows, dtype=object, columns=["question_type", "metric", *runs.keys()])


RESPONSE_KEYS: tuple[str, ...] = ("n_questions", "yes_ratio", "refusal_rate", "unparsed_rate", "failed", "missing")
RESPONSE_COUNTS = frozenset({"n_questions", "failed", "missing"})  # counts; the other response keys are rates (%)


def response_values(block: Mapping[str, Any], rounded: bool = True) -> dict[str, Any]:
    """What came back in one block of a run's scores (a category or ``overall``), by RESPONSE_KEYS: counts as
    counted, rates to two decimals (``rounded``) or as the scorer wrote them. Every responses table reads this."""
    return {k: block.get(k) if k in RESPONSE_COUNTS or not rounded else _r(block.get(k)) for k in RESPONSE_KEYS}


def table_responses(runs: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """What came back, per category and overall: yes share, refusals and unparsed answers (%), questions
    that failed after every retry and questions without a prediction (counts). A failure is never an
    unparsed answer: the model never answered. Reads the metrics dicts (render_all converts ScoreReports)."""
    rows = []
    for name, m in runs.items():
        blocks = [(c, m["by_category"].get(c)) for c in CATEGORIES] + [("overall", m["overall"])]
        for category, block in blocks:
            if block:
                rows.append({"model": name, "category": category, **response_values(block)})
    return pd.DataFrame(rows, dtype=object, columns=["model", "category", *RESPONSE_KEYS])


def table_subsets(runs: Runs) -> pd.DataFrame:
    """Appendix C (Table 18): accuracy on each seeded random image subset, one row per run and fraction."""
    rows = []
    for name, m in runs.items():
        for r in _scores(m).subset_robustness or []:
            rows.append(
                {
                    "model": name,
                    "fraction": r.fraction,
                    "n_images": r.n_images,
                    "n_questions": r.n_questions,
                    "accuracy_adv_pairs_original_weighting": _r(r.accuracy_adv_pairs_original_weighting),
                    "averaged_accuracy": _r(r.averaged_accuracy),
                }
            )
    return pd.DataFrame(
        rows,
        dtype=object,
        columns=[
            "model",
            "fraction",
            "n_images",
            "n_questions",
            "accuracy_adv_pairs_original_weighting",
            "averaged_accuracy",
        ],
    )


# --- rendering -------------------------------------------------------------------

_HEADERS: dict[str, str] = {
    "model": "Model",
    "averaged_accuracy": "Averaged Accuracy (%)",
    "accuracy_adv_pairs": "Accuracy (%) with Adversarial Pairs",
    "drop": "Change",
    "vqarad_averaged_accuracy": "VQA-RAD Averaged Accuracy (%)",
    "vqarad_accuracy_adv_pairs": "VQA-RAD Accuracy (%) with Adversarial Pairs",
    "vqarad_drop": "VQA-RAD Change",
    "probmed_averaged_accuracy": "ProbMed Averaged Accuracy (%)",
    "probmed_accuracy_adv_pairs": "ProbMed Accuracy (%) with Adversarial Pairs",
    "probmed_drop": "ProbMed Change",
    "overall": "Overall",
    "overall_question_weighting": "Overall (question-weighted)",
    "image_type": "Image type",
    "metric": "",
    "question_type": "Question Type",
    "fraction": "Fraction",
    "n_images": "N_i",
    "n_questions": "N",
    "accuracy_adv_pairs_original_weighting": "Acc. with adv. pairs (%)",
    "category": "Category",
    "yes_ratio": "Yes (%)",
    "refusal_rate": "Refusals (%)",
    "unparsed_rate": "Unparsed (%)",
    "failed": "Failed after retries",
    "missing": "Missing",
    **CATEGORY_TITLES,
}


def to_markdown(frame: pd.DataFrame, title: str = "") -> str:
    """A GitHub-flavoured Markdown table (no extra dependency)."""
    table = markdown_table(frame, headers=[_HEADERS.get(c, c) for c in frame.columns], cell=number_cell("/"))
    return f"**{title}**\n\n{table}" if title else table


def to_csv(frame: pd.DataFrame) -> str:
    """The table as CSV without the index (empty cells where a value is undefined)."""
    return frame.to_csv(index=False)


def table_known_absent(runs: Runs) -> pd.DataFrame:
    """Strict accuracy on the full set and on its known-absent subset (every "no" rests on evidence)."""
    rows = []
    for name, run in runs.items():
        scores = _scores(run)
        ka = scores.known_absent
        if ka is None:
            continue
        for cat in scores.categories:
            sub = ka.scores.category(cat)
            rows.append({"model": name, "category": cat, "accuracy_adv_pairs": _r(scores.number(cat, "accuracy_adv_pairs")),
                         "known_absent_accuracy_adv_pairs": _r(ka.scores.number(cat, "accuracy_adv_pairs")),
                         "n_questions": scores.category(cat).get("n_questions"),
                         "known_absent_n_questions": sub.get("n_questions", 0)})
        rows.append({"model": name, "category": "overall",
                     "accuracy_adv_pairs": _r(_overall(scores, "accuracy_adv_pairs_original_weighting")),
                     "known_absent_accuracy_adv_pairs": _r(_overall(ka.scores, "accuracy_adv_pairs_original_weighting")),
                     "n_questions": scores.meta.n_questions if scores.meta else None,
                     "known_absent_n_questions": ka.n_questions})
    return pd.DataFrame(rows, dtype=object, columns=["model", "category", "accuracy_adv_pairs", "known_absent_accuracy_adv_pairs",
                                                     "n_questions", "known_absent_n_questions"])


TABLES: dict[str, tuple[str, Any]] = {
    "table2": ("Table 2: averaged accuracy vs accuracy with adversarial pairs", table2),
    "table3": ("Table 3: accuracy (%) with adversarial pairs per category and overall", table3),
    "table_image_types": ("Appendix A: results per image type", table_image_types),
    "table4": ("Table 4: procedural diagnosis, accuracy and error shares (%)", table4),
    "table_subsets": ("Appendix C: accuracy on seeded random image subsets", table_subsets),
    "table_known_absent": ("Accuracy (%) with adversarial pairs on the known-absent subset (every 'no' rests on a label or QA answer)",
                           table_known_absent),
    "table_responses": ("Responses: yes share, refusals, unparsed (%); failed after retries, missing (counts)",
                        table_responses),
}


def render_all(runs: Runs) -> dict[str, str]:
    """File name -> text for every table, as CSV and Markdown."""
    out: dict[str, str] = {}
    runs = {name: m.to_dict() if isinstance(m, ScoreReport) else m for name, m in runs.items()}  # table_responses reads dicts
    for name, (title, build) in TABLES.items():
        frame = build(runs)
        out[f"{name}.csv"] = to_csv(frame)
        out[f"{name}.md"] = to_markdown(frame, title)
    return out
