"""Per category, can the data tell a model from a blind one? Random and the blind ceiling side by side.

Exact random is not the bar a benchmark with structured pairs sets: a model
that never looks at the image can learn a fixed answer per text and beat it
(the audit's blind ceiling, probmed.benchmark.audit.blind_ceiling). So for each
vanilla run of a model that is not a baseline the report states, per category:

- its accuracy with adversarial pairs, with its bootstrap 95% interval over images
  and the scoring units behind it;
- whether that interval lies above or below exact random and the audit's
  blind ceiling on the same unit (both fixed numbers), or includes them, and
  what that reads as (:func:`reading`: "worse than random" only where the
  interval lies below random, "above random, below a blind policy" where it
  lies between them);
- its paired difference to the blind baseline run on the same images
  (scoring.compare.paired_differences), and whether that interval excludes 0.

A category resting on fewer than ``report.min_units`` units gets no verdict.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import pandas as pd

from probmed.core.categories import PAIRED_CATEGORIES
from probmed.core.errors import RecordError
from probmed.core.markdown import difference_cell, is_missing
from probmed.core.params_schema import Report
from probmed.core.settings import BASE_SETTING
from probmed.reporting.comparisons import ALL, Comparisons, per_image
from probmed.reporting.runs import Run
from probmed.scoring.compare import OVERALL, Bootstrap, paired_differences

BASELINE_MODELS = ("random", "always-yes", "always-no")  # the scorer's own baselines (scoring.baselines)


def scoring_units(section: Any, category: str, image_type: str | None = None) -> float:
    """The units a category's strict accuracy rests on: pairs (or all-or-nothing images) for a paired category,
    questions for a category of single questions (abnormality); NaN when the scorer did not say."""
    return section.value(category, "n_units" if category in PAIRED_CATEGORIES else "n_questions", image_type)


def ceiling_by_category(audit: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """{category: {ceiling, random, floor, units, unit, reached_by}} of an audit's blind ceiling on the unit the
    scorer's strict accuracy uses (the paper's: pairs, per image for condition and position, single questions);
    empty when the audit has none (probmed.benchmark.audit.blind_ceiling.BlindCeiling)."""
    from probmed.benchmark.audit.blind_ceiling import BlindCeiling

    ceiling = BlindCeiling.from_json((audit or {}).get("blind_ceiling"))
    if ceiling is None:
        return {}
    out = {}
    for category in dict.fromkeys(c.category for c in ceiling.cells):
        cell = ceiling.paper(category)
        if cell is not None:
            out[category] = {"ceiling": cell.ceiling, "random": cell.random, "floor": cell.floor, "units": cell.units,
                             "unit": cell.unit, "reached_by": cell.reached_by}
    return out


def reading(low: float | None, high: float | None, rnd: float | None, ceiling: float | None) -> str:
    """What an accuracy interval says against exact random and the blind ceiling, in words.

    "worse than random" only where the interval lies below random and so below every blind bar (a blind model
    can always guess); above random but not above the blind ceiling is said as it is."""
    if is_missing(low) or is_missing(high) or is_missing(rnd):
        return "—"
    assert low is not None and high is not None and rnd is not None
    bar = rnd if is_missing(ceiling) else max(rnd, float(ceiling))  # type: ignore[arg-type]
    if high < rnd:
        return "worse than random"
    if low <= rnd:
        return "not distinguishable from random"
    if low > bar:
        return "above random and the blind ceiling"
    if high < bar:
        return "above random, below a blind policy"
    return "above random, not distinguishable from a blind policy"


def verdict(low: float | None, high: float | None, bar: float | None) -> str:
    """"above" / "below" when the interval [low, high] excludes `bar`, "not distinguishable" when it includes it."""
    if is_missing(low) or is_missing(high) or is_missing(bar):
        return "—"
    assert low is not None and high is not None and bar is not None
    if low > bar:
        return "above"
    if high < bar:
        return "below"
    return "not distinguishable"


def _accuracy_cell(value: float, low: float, high: float) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:.1f}" + ("" if math.isnan(low) or math.isnan(high) else f" [{low:.1f}, {high:.1f}]")


def _blind_differences(run: Run, blind: Run | None, boot: Bootstrap) -> pd.DataFrame | None:
    a, b = per_image(run), per_image(blind) if blind is not None else None
    if a is None or b is None:
        return None
    try:
        diff = paired_differences(a, b, boot)
    except RecordError:  # not scored on the same questions: no paired difference, the table says so with a dash
        return None
    return diff[diff["metric"] == "strict"].set_index("category")


def _row(run: Run, category: str, comp: Comparisons, ceiling: Mapping[str, Any], blind_diff: pd.DataFrame | None,
         report: Report) -> dict[str, Any]:
    low, high, _ = comp.interval(run, category, "strict", ALL)
    if category == OVERALL:
        value, units = run.scores.overall_value("accuracy_adv_pairs"), run.scores.overall_value("n_units")
        baseline = run.scores.random_baseline
        rnd = baseline.overall_value("accuracy_adv_pairs") if baseline is not None else math.nan
    else:
        value, units = run.scores.value(category, "accuracy_adv_pairs"), scoring_units(run.scores, category)
        baseline = run.scores.random_baseline
        rnd = baseline.value(category, "accuracy_adv_pairs") if baseline is not None else math.nan
    bar = (ceiling.get(category) or {}).get("ceiling")
    few = math.isnan(units) or units < report.min_units
    diff = blind_diff.loc[category] if blind_diff is not None and category in blind_diff.index else None
    row: dict[str, Any] = {
        "question set": run.question_set, "model": run.model,
        "category": "overall (pooled units)" if category == OVERALL else category,
        "units": None if math.isnan(units) else int(units),
        "strict % [95% CI]": _accuracy_cell(value, low, high),
        "exact random": rnd,
        "blind ceiling (audit)": math.nan if bar is None else float(bar),
        "reading": reading(low, high, None if math.isnan(rnd) else rnd, bar),
        "Δ vs blind run [95% CI]": "—" if diff is None else difference_cell(diff["diff"], diff["ci_low"], diff["ci_high"]),
        "vs blind run": "—" if diff is None else verdict(diff["ci_low"], diff["ci_high"], 0.0),
    }
    if few:  # too few units for any verdict: say so instead of a verdict that looks like a finding
        for key in ("reading", "vs blind run"):
            row[key] = f"— (n={row['units'] if row['units'] is not None else '?'})"
    return row


def distinguishability_table(runs: list[Run], comp: Comparisons, ceilings: Mapping[str, Mapping[str, Any]],
                             report: Report, boot: Bootstrap) -> pd.DataFrame:
    """One row per (question set, model, category) of every vanilla run that is not a baseline; ``ceilings``:
    question set -> :func:`ceiling_by_category` of its audit."""
    skip = {*BASELINE_MODELS, report.blind_model}
    rows = []
    for run in runs:
        if run.setting != BASE_SETTING or run.model in skip:
            continue
        blind = next((r for r in runs if r.question_set == run.question_set and r.model == report.blind_model
                      and r.setting == BASE_SETTING), None)
        blind_diff = _blind_differences(run, blind, boot)
        ceiling = ceilings.get(run.question_set) or {}
        for category in [*run.scores.categories, OVERALL]:
            rows.append(_row(run, category, comp, ceiling, blind_diff, report))
    return pd.DataFrame(rows)
