"""Every difference the report shows, with a paired bootstrap interval over the same images.

Three kinds of difference, all computed by probmed.scoring.compare from the
per-image sums ``probmed score`` writes beside each metrics.json:

- setting differences: each ablation minus the same model's ``vanilla`` run
  (cot, described, blank, shuffled);
- visual reliance: ``vanilla`` minus each image control (blank, shuffled), with
  the "answers without looking" flag per model and category;
- model differences: model A minus model B in ``vanilla`` on the same question
  set, for the pairs named in ``report.model_comparisons``.

It also finds runs of one model whose answers are identical to another of its
settings (equal answers digest): such a difference is 0 by construction, and
the report says so instead of letting two equal bars pass for a result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import pandas as pd

from probmed.core.settings import ABLATIONS, BASE_SETTING, IMAGE_CONTROLS
from probmed.infra.tables import read_parquet
from probmed.reporting.runs import Run
from probmed.scoring.compare import Bootstrap, accuracies, paired_differences, visual_reliance, without_looking

PER_IMAGE_FILE = "per_image.parquet"  # written by probmed.scoring.run.write_run
ALL = "all"  # the image-type label of whole-set rows
DIFFERENCE_COLUMNS: tuple[str, ...] = (
    "question_set", "kind", "model", "a", "b", "image_type", "category", "metric", "acc_a", "acc_b", "diff", "ci_low",
    "ci_high", "n_images", "n",
)
INTERVAL_COLUMNS: tuple[str, ...] = (
    "question_set", "model", "setting", "image_type", "category", "metric", "accuracy", "ci_low", "ci_high",
    "n_images", "n",
)
RELIANCE_COLUMNS: tuple[str, ...] = (
    "question_set", "model", "category", "control", "metric", "real", "with_control", "drop", "ci_low", "ci_high",
    "n_images", "n",
)


def per_image(run: Run) -> pd.DataFrame | None:
    """The run's per-image sums, or None when its score directory has none (an older score run)."""
    if run.path is None:
        return None
    path = Path(run.path).parent / PER_IMAGE_FILE
    return read_parquet(path, "per-image score table") if path.is_file() else None


@dataclass
class Comparisons:
    """All paired differences of one report, and every run's accuracies with their intervals (long tables,
    one row per category and metric; ``image_type`` is ``all`` for the whole set)."""

    differences: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(DIFFERENCE_COLUMNS)))
    reliance: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(RELIANCE_COLUMNS)))
    without_looking: dict[tuple[str, str, str], bool | None] = field(default_factory=dict)  # (set, model, cat)
    identical: list[tuple[str, str, str, str]] = field(default_factory=list)  # (set, model, setting, same as)
    intervals: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(INTERVAL_COLUMNS)))

    def for_set(self, question_set: str) -> "Comparisons":
        return Comparisons(
            self.differences[self.differences["question_set"] == question_set],
            self.reliance[self.reliance["question_set"] == question_set],
            {k: v for k, v in self.without_looking.items() if k[0] == question_set},
            [w for w in self.identical if w[0] == question_set],
            self.intervals[self.intervals["question_set"] == question_set],
        )

    def interval(self, run: Run, category: str, metric: str, image_type: str = ALL) -> tuple[float, float, int | None]:
        """(low, high, n_images) of a run's accuracy; NaN / None where there is none."""
        f = self.intervals
        hit = f[(f["question_set"] == run.question_set) & (f["model"] == run.model) & (f["setting"] == run.setting)
                & (f["image_type"] == image_type) & (f["category"] == category) & (f["metric"] == metric)]
        if hit.empty:
            return float("nan"), float("nan"), None
        r = hit.iloc[0]
        return _float(r["ci_low"]), _float(r["ci_high"]), int(r["n_images"])


def _float(value) -> float:
    return float("nan") if value is None or pd.isna(value) else float(value)


def _rows(question_set: str, kind: str, model: str, a: str, b: str, diff: pd.DataFrame, image_type: str = ALL
          ) -> list[dict]:
    return [{"question_set": question_set, "kind": kind, "model": model, "a": a, "b": b, "image_type": image_type,
             "category": r.category, "metric": r.metric, "acc_a": r.a, "acc_b": r.b, "diff": r.diff,
             "ci_low": r.ci_low, "ci_high": r.ci_high, "n_images": r.n_images, "n": r.n}
            for r in diff.itertuples(index=False)]


def run_intervals(tables: dict[tuple[str, str, str], pd.DataFrame | None], boot: Bootstrap) -> pd.DataFrame:
    """Every run's accuracies with bootstrap intervals, whole set and per image type (what figures draw)."""
    parts = []
    for (qset, model, setting), table in tables.items():
        if table is None:
            continue
        for image_type in [None, *sorted(set(table["image_type"]))]:
            acc = accuracies(table, boot, image_type)
            parts.append(acc.assign(question_set=qset, model=model, setting=setting, image_type=image_type or ALL))
    if not parts:
        return Comparisons().intervals
    return pd.concat(parts, ignore_index=True)[list(INTERVAL_COLUMNS)]


def _digest(run: Run) -> str | None:
    return run.scores.meta.answers_sha256 if run.scores.meta else None


def identical_settings(runs: Sequence[Run]) -> list[tuple[str, str, str, str]]:
    """(question set, model, setting, earlier setting) for every run whose answers equal an earlier
    setting's of the same model (same answers digest), in the runs' order."""
    seen: dict[tuple[str, str, str], str] = {}
    out = []
    for run in runs:
        digest = _digest(run)
        if digest is None:
            continue
        key = (run.question_set, run.model, digest)
        if key in seen:
            out.append((run.question_set, run.model, run.setting, seen[key]))
        else:
            seen[key] = run.setting
    return out


def compare_runs(runs: Sequence[Run], boot: Bootstrap, model_pairs: Iterable[Sequence[str]] = ()) -> Comparisons:
    """Every setting difference, visual reliance and named model difference the runs support."""
    tables = {(r.question_set, r.model, r.setting): per_image(r) for r in runs}
    rows: list[dict] = []
    reliance: list[pd.DataFrame] = []
    flags: dict[tuple[str, str, str], bool | None] = {}
    for (qset, model, setting), table in tables.items():
        base = tables.get((qset, model, BASE_SETTING))
        if setting not in ABLATIONS or table is None or base is None:
            continue
        rows += _rows(qset, "setting", model, setting, BASE_SETTING, paired_differences(table, base, boot))
    for qset, model in sorted({(q, m) for q, m, _ in tables}):
        real = tables.get((qset, model, BASE_SETTING))
        controls = {c: tables[(qset, model, c)] for c in IMAGE_CONTROLS if tables.get((qset, model, c)) is not None}
        if real is None or not controls:
            continue
        drops, without = visual_reliance(real, controls, boot)
        reliance.append(drops.assign(question_set=qset, model=model))
        flags.update({(qset, model, cat): flag for cat, flag in without.items()})
    for pair in model_pairs:
        rows += _model_rows(tables, str(pair[0]), str(pair[1]), boot)
    frame = pd.DataFrame(rows, columns=list(DIFFERENCE_COLUMNS))
    drops = pd.concat(reliance, ignore_index=True)[list(RELIANCE_COLUMNS)] if reliance else Comparisons().reliance
    return Comparisons(frame, drops, flags, identical_settings(runs), run_intervals(tables, boot))


def _model_rows(tables: dict[tuple[str, str, str], pd.DataFrame | None], a: str, b: str, boot: Bootstrap) -> list[dict]:
    """The differences a - b in vanilla on every question set both have, whole set and per image type (Figure 5 reads these)."""
    rows: list[dict] = []
    for qset in sorted({q for q, _, _ in tables}):
        ta, tb = tables.get((qset, a, BASE_SETTING)), tables.get((qset, b, BASE_SETTING))
        if ta is None or tb is None:
            continue
        rows += _rows(qset, "model", f"{a} - {b}", a, b, paired_differences(ta, tb, boot))
        for image_type in sorted(set(ta["image_type"])):
            diff = paired_differences(ta, tb, boot, image_type=image_type)
            rows += _rows(qset, "model", f"{a} - {b}", a, b, diff, image_type)
    return rows


# --- tables -------------------------------------------------------------------------


def _cell(frame: pd.DataFrame) -> str:
    """One difference row as "+4.2 [-1.0, +9.5]" (an em dash when the frame is empty)."""
    from probmed.core.markdown import difference_cell

    if frame.empty:
        return "—"
    r = frame.iloc[0]
    return difference_cell(r["diff"] if "diff" in r else r["drop"], r["ci_low"], r["ci_high"])


def _category_name(category: str) -> str:
    """A category as the tables show it: ``overall`` named for its definition (probmed.reporting.overall)."""
    return f"{category} (pooled units)" if category == "overall" else category


def reliance_table(comp: Comparisons) -> pd.DataFrame:
    """Visual reliance, one row per (question set, model, category): accuracy with the real image and its
    drop with each control, strict and averaged, with paired 95% intervals, and the flag."""
    rows = []
    keys = comp.reliance[["question_set", "model", "category"]].drop_duplicates()
    for qset, model, cat in keys.itertuples(index=False):
        part = comp.reliance[(comp.reliance["question_set"] == qset) & (comp.reliance["model"] == model)
                             & (comp.reliance["category"] == cat)]
        strict = part[part["metric"] == "strict"]
        row: dict = {"question set": qset, "model": model, "category": _category_name(cat),
                     "images": int(strict["n_images"].max()) if len(strict) else 0}
        for metric, short in (("strict", "strict"), ("averaged", "avg")):
            m = part[part["metric"] == metric]
            row[f"{short} real %"] = round(float(m["real"].iat[0]), 2) if len(m) else float("nan")
            for control in IMAGE_CONTROLS:
                row[f"Δ{short} {control}"] = _cell(m[m["control"] == control])
        flag = comp.without_looking.get((qset, model, cat))
        row["answers without looking"] = "—" if flag is None else ("yes" if flag else "no")
        rows.append(row)
    return pd.DataFrame(rows)


def differences_table(comp: Comparisons) -> pd.DataFrame:
    """Every setting and model difference, one row per (question set, comparison, category): strict and
    averaged difference with its paired 95% interval, and the images behind it."""
    rows = []
    frame = comp.differences[comp.differences["image_type"] == ALL]
    keys = frame[["question_set", "kind", "model", "a", "b", "category"]].drop_duplicates()
    for qset, kind, model, a, b, cat in keys.itertuples(index=False):
        part = frame[(frame["question_set"] == qset) & (frame["model"] == model) & (frame["a"] == a)
                     & (frame["b"] == b) & (frame["category"] == cat)]
        strict, avg = part[part["metric"] == "strict"], part[part["metric"] == "averaged"]
        rows.append({
            "question set": qset,
            "comparison": f"{model}: {a} - {b}" if kind == "setting" else model,
            "category": _category_name(cat),
            "images": int(part["n_images"].max()),
            "Δ strict [95% CI]": _cell(strict),
            "Δ averaged [95% CI]": _cell(avg),
        })
    return pd.DataFrame(rows)


def warnings(comp: Comparisons) -> list[str]:
    """What a reader must know before reading a difference: identical settings, models that do not look."""
    out = [f"{qset}: {model} ({setting}) gave the same answer as {model} ({same}) to every question; every "
           f"difference between them is 0 by construction, not a finding." for qset, model, setting, same in comp.identical]
    blind: dict[tuple[str, str], list[str]] = {}
    for (qset, model, cat), flag in comp.without_looking.items():
        if flag:
            blind.setdefault((qset, model), []).append(cat)
    out += [f"{qset}: {model} answers without looking in {', '.join(cats)} (the drop with a blank or shuffled "
            f"image is indistinguishable from 0)." for (qset, model), cats in blind.items()]
    return out


def reliance_metrics(reliance: pd.DataFrame) -> dict[tuple[str, str], dict[str, float]]:
    """(question set, model) -> the MLflow metrics of its visual reliance, short and grouped like the run's
    other metrics (probmed.reporting.run_metrics): per control the strict overall drop and its interval
    (``reliance/<control>``, ``reliance/<control>_ci95_low|_high``) and ``reliance/answers_without_looking``
    as 1 / 0 where the flag is known, rounded. Per-category drops stay in the report's reliance table (the
    vanilla run keeps at most ~40 metrics). NaNs are left out."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for (qset, model), part in reliance.groupby(["question_set", "model"], sort=False):
        metrics: dict[str, float] = {}
        headline = part[(part["metric"] == "strict") & (part["category"] == "overall")]
        for r in headline.itertuples(index=False):
            base = f"reliance/{r.control}"
            for suffix, value in (("", r.drop), ("_ci95_low", r.ci_low), ("_ci95_high", r.ci_high)):
                if value is not None and not pd.isna(value):
                    metrics[base + suffix] = round(float(value), 2)
        flag = without_looking(part).get("overall")
        if flag is not None:
            metrics["reliance/answers_without_looking"] = float(flag)
        out[(str(qset), str(model))] = metrics
    return out
