"""The report's first screen: every model x category in one table, and one line per finding with its numbers.

A reader opening the report should see the story before any definition: per
model and category the accuracy with adversarial pairs with its 95% interval
and the units behind it, the averaged accuracy beside it, and the two bars it
must clear, exact random and the audit's blind ceiling (read through
probmed.reporting.distinguish.ceiling_by_category, the one reader of the
audit's ceiling); then one line each for the adversarial drop, chain of thought
and described prompts, visual reliance and transfer, every number with its
paired interval. Only vanilla runs are rows (a setting is a difference to its
vanilla run, told in the lines); the models under test come first, the
baselines after them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

from probmed.core.categories import CATEGORIES, PAIRED_CATEGORIES
from probmed.core.markdown import difference_cell
from probmed.core.params_schema import Report
from probmed.core.settings import BASE_SETTING, PROMPT_ABLATIONS
from probmed.reporting.comparisons import ALL, Comparisons
from probmed.reporting.distinguish import BASELINE_MODELS, scoring_units
from probmed.reporting.runs import Run
from probmed.scoring.compare import OVERALL

SUMMARY_COLUMNS: tuple[str, ...] = (
    "question_set", "model", "category", "strict", "ci_low", "ci_high", "averaged", "random", "blind_ceiling",
    "units",
)
SUMMARY_CATEGORIES: tuple[str, ...] = (*CATEGORIES, OVERALL)


def model_rank(model: str, report: Report) -> int:
    """Where a model stands in every list of the report: models under test first, then the blind model, random,
    always-yes and always-no (the bars from the hardest to clear down)."""
    baselines = [report.blind_model, *BASELINE_MODELS]
    return baselines.index(model) + 1 if model in baselines else 0


def headline_runs(runs: Sequence[Run], question_set: str, report: Report) -> list[Run]:
    """The set's vanilla runs: models under test first (in the runs' order), then the baselines."""
    vanilla = [r for r in runs if r.question_set == question_set and r.setting == BASE_SETTING]
    return sorted(vanilla, key=lambda r: model_rank(r.model, report))


def ceiling_values(run: Run, ceiling: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Category -> the audit's blind ceiling on the scorer's unit (strict %), and ``overall`` pooled as the run's
    own pooled overall is (paired categories, weighted by the run's scoring units), so the two compare."""
    out = {cat: float(entry["ceiling"]) for cat, entry in ceiling.items() if entry.get("ceiling") is not None}
    weights = {cat: scoring_units(run.scores, cat) for cat in PAIRED_CATEGORIES if cat in out}
    weights = {cat: w for cat, w in weights.items() if not math.isnan(w) and w > 0}
    if weights:
        out[OVERALL] = sum(out[cat] * w for cat, w in weights.items()) / sum(weights.values())
    return out


def _cell(run: Run, category: str, comp: Comparisons, ceiling: Mapping[str, float]) -> dict[str, Any]:
    low, high, _ = comp.interval(run, category, "strict", ALL)
    baseline = run.scores.random_baseline
    if category == OVERALL:
        strict, averaged = run.scores.overall_value("accuracy_adv_pairs"), run.scores.overall_value("averaged_accuracy")
        units = run.scores.overall_value("n_units")
        rnd = baseline.overall_value("accuracy_adv_pairs") if baseline is not None else math.nan
    else:
        strict, averaged = run.scores.value(category, "accuracy_adv_pairs"), run.scores.value(category, "averaged_accuracy")
        units = scoring_units(run.scores, category)
        rnd = baseline.value(category, "accuracy_adv_pairs") if baseline is not None else math.nan
    return {"question_set": run.question_set, "model": run.model, "category": category, "strict": strict,
            "ci_low": low, "ci_high": high, "averaged": averaged, "random": rnd,
            "blind_ceiling": ceiling.get(category, math.nan), "units": units}


def summary_table(runs: Sequence[Run], comp: Comparisons, ceilings: Mapping[str, Mapping[str, Mapping[str, Any]]],
                  report: Report) -> pd.DataFrame:
    """One row per (question set, vanilla model, category or overall): strict with its interval, averaged,
    exact random, the blind ceiling and the units; ``ceilings``: question set -> ceiling_by_category."""
    rows = []
    for question_set in dict.fromkeys(r.question_set for r in runs):
        for run in headline_runs(runs, question_set, report):
            ceiling = ceiling_values(run, ceilings.get(question_set) or {})
            rows += [_cell(run, cat, comp, ceiling) for cat in SUMMARY_CATEGORIES
                     if cat == OVERALL or cat in run.scores.categories]
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


# --- the findings, one line each --------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One line of the first screen: what it is about and what the numbers say."""

    name: str
    text: str


def _pct(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.1f}%"


def _excludes_zero(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return ""
    return " (interval excludes 0)" if low > 0 or high < 0 else " (indistinguishable from 0)"


def _difference(row: Any) -> str:
    return difference_cell(row["diff"], row["ci_low"], row["ci_high"]) + " points" + _excludes_zero(
        float(row["ci_low"]), float(row["ci_high"]))


def adversarial_line(summary: pd.DataFrame, report: Report) -> str:
    """Averaged -> strict overall per model under test (every model when none is), beside random and ceiling."""
    overall = summary[summary["category"] == OVERALL]
    tested = overall[[model_rank(m, report) == 0 for m in overall["model"]]]
    parts = []
    for r in (tested if len(tested) else overall).itertuples(index=False):
        drop = r.averaged - r.strict
        parts.append(f"{r.model} {_pct(r.averaged)} averaged, {_pct(r.strict)} with adversarial pairs "
                     f"({'—' if math.isnan(drop) else f'{-drop:+.1f}'} points)")
    if not parts:
        return "no vanilla run scored"
    first = overall.iloc[0]
    return ("; ".join(parts) + f"; exact random {_pct(first['random'])}, blind ceiling {_pct(first['blind_ceiling'])}"
            " (overall, pooled units)")


def settings_line(comp: Comparisons, question_set: str) -> str:
    """Each prompt ablation minus vanilla, overall strict, with its paired interval."""
    d = comp.differences
    rows = d[(d["question_set"] == question_set) & (d["kind"] == "setting") & d["a"].isin(PROMPT_ABLATIONS)
             & (d["category"] == OVERALL) & (d["metric"] == "strict") & (d["image_type"] == ALL)]
    if rows.empty:
        return f"not measured (no {' or '.join(PROMPT_ABLATIONS)} run beside a vanilla run)"
    return "; ".join(f"{r['model']} {r['a']} − {r['b']} {_difference(r)}" for _, r in rows.iterrows())


def reliance_line(comp: Comparisons, question_set: str) -> str:
    """The real image minus each control, overall strict, and whether the model answers without looking."""
    d = comp.reliance
    rows = d[(d["question_set"] == question_set) & (d["metric"] == "strict") & (d["category"] == OVERALL)]
    if rows.empty:
        return "not measured (no blank or shuffled run beside a vanilla run)"
    parts = []
    for model, part in rows.groupby("model", sort=False):
        drops = ", ".join(f"real − {r['control']} {_difference(r.rename({'drop': 'diff'}))}" for _, r in part.iterrows())
        looks = comp.without_looking.get((question_set, str(model), OVERALL))
        parts.append(f"{model}: {drops}" + ("; answers without looking" if looks else ""))
    return "; ".join(parts)


def transfer_line(comp: Comparisons, report: Report) -> str:
    """The second transfer model minus the first, the transfer category, whole held-out set."""
    if len(report.transfer_models) < 2:
        return "not measured (report.transfer_models names fewer than two models)"
    base, adapted = report.transfer_models[0], report.transfer_models[1]
    d = comp.differences
    rows = d[(d["kind"] == "model") & (d["a"] == adapted) & (d["b"] == base) & (d["metric"] == "strict")
             & (d["image_type"] == ALL) & (d["category"].isin([report.transfer_category, OVERALL]))]
    if rows.empty:
        return f"not measured (no vanilla runs of both {adapted} and {base})"
    parts = [f"{r['category']} {_difference(r)} over {int(r['n_images'])} images"
             for _, r in rows.sort_values("category", key=lambda c: c == OVERALL).iterrows()]
    return f"{adapted} − {base} on {rows.iloc[0]['question_set']}: " + "; ".join(parts)


def findings(summary: pd.DataFrame, comp: Comparisons, question_set: str, report: Report) -> list[Finding]:
    """The first screen's lines for the main question set (transfer: wherever the transfer models ran)."""
    main = summary[summary["question_set"] == question_set]
    return [
        Finding("Adversarial drop", adversarial_line(main, report)),
        Finding("Chain of thought / described", settings_line(comp, question_set)),
        Finding("Visual reliance", reliance_line(comp, question_set)),
        Finding("Transfer", transfer_line(comp, report)),
    ]
