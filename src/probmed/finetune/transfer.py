"""The transfer study (paper Figure 5): base vs domain-adapted model on every (source, modality, organ) group.

Both models answer the held-out (`eval`) questions through the project's own
prediction engine (HF backend in logit mode: P(yes) vs P(no) from one forward
pass, answers kept in an answer store) and are scored by the project's scorer,
group by group. Each group is labelled with the comparison it supports relative
to the adaptation domain: in-domain held-out patients, the same modality and
organ from another source, the same organ in another modality (the paper's
claim: chest X-ray -> chest CT, measured on the COVID-19 and ROCO chest CT
groups), the same modality on another organ, or neither.

Outputs under `<out_dir>`: transfer.csv / transfer.md / transfer.json (one row
per group and category), metrics.json (the same, compact, for `dvc metrics`), transfer.png,
scores/finetune-heldout/<model>/vanilla/ (what `probmed score` writes, through the same writer, for
all probed held-out questions, in the layout `probmed report` reads), predictions/<model>.parquet and
the answer store answers/. Two MLflow runs (base, adapted) are tagged with the
training run they evaluate.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from probmed.core.categories import CATEGORIES
from probmed.core.errors import ConfigError, MissingFileError
from probmed.core.markdown import markdown_table
from probmed.core.params_schema import FinetuneProfile, Params, Tracking, as_mapping
from probmed.core.records import QUESTION_COLUMNS, read_questions
from probmed.core.vocab import image_type
from probmed.finetune import data
from probmed.finetune.stages import BASE_STAGE, DOMAIN_STAGE, run_file
from probmed.finetune.train import PARENT_TAG, finetune_params, prompt_set, resolve_base, seed_of
from probmed.infra.io import (
    atomic_path,
    write_json_atomic,
    write_parquet,
    write_text_atomic,
)
from probmed.scoring.score_report import ScoreReport

MODELS: tuple[str, ...] = ("finetune-base", "finetune-adapted")
QUESTION_SET = "finetune-heldout"  # the held-out questions, as a question-set name in the scores layout
TABLE_COLUMNS: tuple[str, ...] = (
    "source", "modality", "organ", "image_type", "comparison", "category", "n_images", "n_questions",
    "base_accuracy_adv_pairs", "adapted_accuracy_adv_pairs", "delta_accuracy_adv_pairs",
    "base_averaged_accuracy", "adapted_averaged_accuracy", "delta_averaged_accuracy",
    "base_ci95_low", "base_ci95_high", "adapted_ci95_low", "adapted_ci95_high",
    "delta_ci95_low", "delta_ci95_high", "delta_averaged_ci95_low", "delta_averaged_ci95_high",
)


def comparison(group: Mapping[str, str], domain: Mapping[str, Any]) -> str:
    """Which transfer question a group answers, relative to the adaptation domain."""
    same_src = domain.get("source") in (None, group["source"])
    same_mod = domain.get("modality") in (None, group["modality"])
    same_org = domain.get("organ") in (None, group["organ"])
    if group["modality"] in ("unknown", "other"):
        return "same organ, modality unknown" if same_org else "other organ, modality unknown"
    if same_mod and same_org:
        return "in-domain (held-out patients)" if same_src else "same modality and organ, other source"
    if same_org:
        return "same organ, other modality"
    if same_mod:
        return "same modality, other organ"
    return "other modality and organ"


def backend_config(fcfg: FinetuneProfile, model_id: str, revision: str | None, adapter: str | None) -> dict[str, Any]:
    """An HF backend entry (as under params `models:`) in logit mode."""
    return {
        "backend": "hf",
        "model_id": model_id,
        "revision": revision,
        "adapter": adapter,
        "dtype": fcfg.dtype or "float32",
        "device": fcfg.transfer.device,
        "threads": fcfg.transfer.threads,
        "mode": "logits",
    }


def held_out_questions(
    questions_path: str | Path, splits_path: str | Path, max_images_per_group: int | None = None, seed: int = 0
) -> pd.DataFrame:
    """The questions of the `eval` images of the training run (its saved split, not a recomputed one).

    `max_images_per_group` keeps at most that many held-out images per
    (source, modality, organ), chosen by a seeded hash of the image id, so the
    CPU default stays within minutes; null keeps them all.
    """
    if not Path(splits_path).is_file():
        raise MissingFileError(
            f"split table {splits_path} not found (run `probmed finetune --stage {BASE_STAGE.name}` first)")
    splits = pd.read_parquet(splits_path)
    questions = read_questions(questions_path)
    held = splits[splits["split"] == "eval"]
    if max_images_per_group is not None:
        held = held.assign(_rank=[data._rank(seed, i) for i in held["image_id"]]).sort_values("_rank")
        held = held.groupby(list(data.GROUP_KEYS), sort=True, dropna=False).head(int(max_images_per_group))
    keep = held.set_index("image_id")
    frame = questions[questions["image_id"].isin(keep.index)].copy()
    if frame.empty:
        raise ConfigError(f"{splits_path}: no held-out question to evaluate")
    for key in ("modality", "organ"):
        frame[key] = keep.loc[frame["image_id"], key].to_numpy()
    frame["source"] = keep.loc[frame["image_id"], "source"].to_numpy()
    return frame.reset_index(drop=True)


def paired_deltas(questions: pd.DataFrame, predictions: Mapping[str, pd.DataFrame], resamples: int, seed: int
                  ) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    """(category, metric) -> the paired bootstrap interval of adapted - base over the same images."""
    from probmed.scoring.compare import Bootstrap, paired_differences
    from probmed.scoring.run import per_image

    base, adapted = (per_image(questions, predictions[m][predictions[m]["qid"].isin(questions["qid"])])
                     for m in MODELS)
    diff = paired_differences(adapted, base, Bootstrap(resamples, seed))
    return {(r.category, r.metric): (r.ci_low, r.ci_high) for r in diff.itertuples(index=False)}


def group_table(
    questions: pd.DataFrame, predictions: Mapping[str, pd.DataFrame], domain: Mapping[str, Any], resamples: int, seed: int
) -> pd.DataFrame:
    """One row per (group, category): base vs adapted strict and averaged accuracy, and the paired
    bootstrap interval of the difference (the same held-out images resampled for both models)."""
    from probmed.scoring.metrics import score

    rows = []
    for (src, mod, org), part in questions.groupby(list(data.GROUP_KEYS), sort=True):
        q = part[list(QUESTION_COLUMNS)]
        scores = {
            name: ScoreReport.from_dict(
                score(q, preds[preds["qid"].isin(q["qid"])], resamples=resamples, seed=seed, by_image_type=False))
            for name, preds in predictions.items()
        }
        deltas = paired_deltas(q, predictions, resamples, seed)
        group = {"source": src, "modality": mod, "organ": org}
        for cat in CATEGORIES:
            cat_q = q[q["category"] == cat]
            if cat_q.empty:
                continue
            base, adapted = scores[MODELS[0]], scores[MODELS[1]]
            row = {
                **group,
                "image_type": image_type(mod, org),
                "comparison": comparison(group, domain),
                "category": cat,
                "n_images": int(cat_q["image_id"].nunique()),
                "n_questions": int(len(cat_q)),
            }
            for key in ("accuracy_adv_pairs", "averaged_accuracy"):
                b, a = base.number(cat, key), adapted.number(cat, key)
                row[f"base_{key}"], row[f"adapted_{key}"] = b, a
                row[f"delta_{key}"] = None if a is None or b is None else round(a - b, 4)
            for name, block in (("base", base), ("adapted", adapted)):
                row[f"{name}_ci95_low"] = block.number(cat, "ci95_low")
                row[f"{name}_ci95_high"] = block.number(cat, "ci95_high")
            for prefix, metric in (("delta", "strict"), ("delta_averaged", "averaged")):
                row[f"{prefix}_ci95_low"], row[f"{prefix}_ci95_high"] = deltas.get((cat, metric), (None, None))
            rows.append(row)
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def to_markdown(table: pd.DataFrame) -> str:
    """The transfer table: each difference with its paired 95% interval (adapted - base, points)."""
    from probmed.core.markdown import difference_cell

    cols = ["source", "image_type", "comparison", "category", "n_images",
            "base_accuracy_adv_pairs", "adapted_accuracy_adv_pairs", "delta_accuracy_adv_pairs",
            "base_averaged_accuracy", "adapted_averaged_accuracy", "delta_averaged_accuracy"]
    head = ["source", "image type", "comparison", "category", "images", "base strict %", "adapted strict %",
            "Δ strict [95% CI]", "base avg %", "adapted avg %", "Δ avg [95% CI]"]

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "—"
        return f"{v:.2f}" if isinstance(v, float) else str(v)

    shown = table[cols].astype(object)
    shown["n_images"] = [str(int(v)) for v in table["n_images"]]
    for col, prefix in (("delta_accuracy_adv_pairs", "delta"), ("delta_averaged_accuracy", "delta_averaged")):
        shown[col] = [difference_cell(v, lo, hi) for v, lo, hi in
                      zip(table[col], table[f"{prefix}_ci95_low"], table[f"{prefix}_ci95_high"])]
    return markdown_table(shown, headers=head, cell=cell)


def plot_transfer(table: pd.DataFrame, path: Path, categories: list[str], title: str,
                  palette: Mapping[str, str] | None = None) -> Path:
    """Figure 5 style: per category, accuracy with adversarial pairs per group, base vs adapted, with each
    model's bootstrap interval and the images behind each group, and beside it the paired difference; at most
    MAX_AXIS_CATEGORIES groups a category (those with the most images; transfer.csv keeps them all)."""
    import matplotlib.pyplot as plt

    from probmed.core.figure_style import DPI, MAX_AXIS_CATEGORIES, colour, model_colours, n_label, report_style
    from probmed.finetune.transfer_figure import Difference, TransferPanel, TransferSeries, draw_transfer

    cats = [c for c in categories if c in set(table["category"])]
    if not cats:
        raise ConfigError(f"finetune.transfer.plot_categories {categories}: none present in the transfer table")
    palette = {**model_colours(MODELS), **(palette or {})}  # base and adapted never share a colour
    panels, left_out = [], 0
    for cat in cats:
        part = table[table["category"] == cat].sort_values("n_images", ascending=False, kind="stable")
        left_out += max(0, len(part) - MAX_AXIS_CATEGORIES)
        part = part.head(MAX_AXIS_CATEGORIES)
        series = [TransferSeries(f"{prefix} ({model})", colour(palette, model),
                                 part[f"{prefix}_accuracy_adv_pairs"].astype(float).to_numpy(),
                                 part[f"{prefix}_ci95_low"].to_numpy(), part[f"{prefix}_ci95_high"].to_numpy())
                  for model, prefix in ((MODELS[0], "base"), (MODELS[1], "adapted"))]
        differences = [Difference(float(r.delta_accuracy_adv_pairs), float(r.delta_ci95_low), float(r.delta_ci95_high))
                       for r in part.itertuples()]
        labels = [n_label(f"{r.source}: {r.image_type}{' (domain)' if r.comparison.startswith('in-domain') else ''}",
                          int(r.n_images)) for r in part.itertuples()]
        panels.append(TransferPanel(cat, labels, series, differences))
    with report_style():
        fig = draw_transfer(panels, "accuracy with adversarial pairs (%; abnormality: single questions)",
                            "adapted − base (points)",
                            suptitle=title + "\n95% bootstrap intervals; n = images; right: paired difference"
                            + (f"\n{left_out} (category, group) rows with the fewest images not drawn: see transfer.csv"
                               if left_out else ""))
        try:
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format="png", dpi=DPI)
        finally:
            plt.close(fig)
    return path


@dataclass
class TransferResult:
    """What the transfer study produced: the per-group table, its MLflow runs and the headline numbers."""

    table: pd.DataFrame
    run_ids: dict[str, str]
    out_dir: Path
    seconds: dict[str, float]
    headline: dict[str, dict[str, float | None]]


def transfer_headline(
    questions: pd.DataFrame, predictions: Mapping[str, pd.DataFrame], domain: Mapping[str, Any]
) -> dict[str, dict[str, float | None]]:
    """The study's headline (metrics/transfer.json): per model, strict accuracy in domain, elsewhere, overall.

    In domain: the held-out patients of the adaptation domain; elsewhere: every
    other group. Strict accuracy with the original weighting (the paper's Overall).
    """
    from probmed.scoring.metrics import score

    in_domain = questions.apply(lambda row: comparison(row, domain).startswith("in-domain"), axis=1).astype(bool)
    parts = {"in_domain": questions[in_domain], "other_domains": questions[~in_domain], "all": questions}
    out: dict[str, dict[str, float | None]] = {}
    for name, preds in predictions.items():
        out[name] = {}
        for part, frame in parts.items():
            if frame.empty:
                out[name][part] = None
                continue
            q = frame[list(QUESTION_COLUMNS)]
            scores = ScoreReport.from_dict(score(q, preds[preds["qid"].isin(q["qid"])], resamples=0, by_image_type=False))
            out[name][part] = scores.overall.get("accuracy_adv_pairs_original_weighting")
    return out


def run_transfer(
    params: Params,
    questions_path: str | Path,
    image_root: str | Path,
    finetune_dir: str | Path,
    out_dir: str | Path,
    progress: bool = True,
) -> TransferResult:
    """Probe base and adapted model on every held-out group; write table, plot, scores and MLflow runs."""
    from probmed.core.figure_style import palette_from_params
    from probmed.core.params_schema import Score
    from probmed.core.settings import BASE_SETTING, SETTINGS
    from probmed.inference.models.hf import HFBackend
    from probmed.inference.predict import PredictJob, run_predictions
    from probmed.scoring.run import score_run, write_run

    fcfg = finetune_params(params)
    finetune_dir, out_dir = Path(finetune_dir), Path(out_dir)
    adapter = finetune_dir / DOMAIN_STAGE.output
    if not (adapter / "adapter_config.json").is_file():
        raise MissingFileError(f"no adapter in {adapter} (run `probmed finetune --stage {DOMAIN_STAGE.name}` first)")
    base_id, revision = resolve_base(finetune_dir / BASE_STAGE.output)
    seed = seed_of(fcfg)
    questions = held_out_questions(questions_path, finetune_dir / "splits.parquet", fcfg.transfer.max_images_per_group,
                                   seed)
    prompts = prompt_set(params)
    resamples = fcfg.transfer.bootstrap_resamples
    domain = as_mapping(fcfg.domain)

    predictions: dict[str, pd.DataFrame] = {}
    seconds: dict[str, float] = {}
    answering: dict[str, dict[str, str]] = {}
    reports: dict[str, ScoreReport] = {}
    score = Score(bootstrap_resamples=resamples, seed=seed)  # the study's resamples; the rest as `probmed score`
    for name, adapter_dir in zip(MODELS, (None, str(adapter))):
        backend = HFBackend(name, backend_config(fcfg, base_id, revision, adapter_dir))
        try:
            job = PredictJob.in_folders(SETTINGS[BASE_SETTING], prompts, image_root, out_dir / "answers",
                                        batch_size=fcfg.transfer.batch_size)
            result = run_predictions(questions[list(QUESTION_COLUMNS)], backend, job, progress=progress)
        finally:
            backend.close()
        if result.n_failed:
            raise RuntimeError(f"transfer: model {name}: {result.n_failed} question(s) failed; see {out_dir / 'answers'}")
        answering[name] = result.predictions.attrs.pop("answering", None) or {}  # a time: kept out of the DVC output
        predictions[name] = result.predictions
        seconds[name] = round(result.elapsed_s, 2)
        write_parquet(result.predictions, out_dir / "predictions" / f"{name}.parquet")
        scored = score_run(questions[list(QUESTION_COLUMNS)], result.predictions, score, name=name)
        write_run(scored.result, _scores_path(out_dir, name).parent, label=name, per_image_sums=scored.per_image)
        reports[name] = scored.result

    table = group_table(questions, predictions, domain, resamples, seed)
    write_text_atomic(table.to_csv(index=False), out_dir / "transfer.csv")
    write_text_atomic(to_markdown(table), out_dir / "transfer.md")
    adapt_run = _read_json(run_file(finetune_dir, DOMAIN_STAGE.name))  # untracked: the run id differs per run
    meta = {
        "domain": domain,
        "base_model": base_id,
        "adapter": str(adapter),
        "training_run": adapt_run.get("run_id"),
        "n_questions": int(len(questions)),
        "n_images": int(questions["image_id"].nunique()),
        "scale": "smoke" if fcfg.base_model == "tiny" else "full",
    }
    # transfer.json is DVC-tracked: the adapt run's id and the timings go to the untracked summary.json only
    tracked = {k: v for k, v in meta.items() if k != "training_run"}
    write_json_atomic({"meta": tracked, "rows": _records(table)}, out_dir / "transfer.json")
    write_json_atomic(compact_metrics(table), out_dir / "metrics.json")
    title = f"Transfer after LoRA on {domain.get('source')} {image_type(domain.get('modality') or '', domain.get('organ') or '')}"
    if meta["scale"] == "smoke":
        title += " (smoke scale: tiny model)"
    plot_transfer(table, out_dir / "transfer.png", fcfg.transfer.plot_categories, title,
                  palette_from_params(params))
    headline = transfer_headline(questions, predictions, domain)
    started = {name: answering[name].get("started_at") for name in predictions}
    run_ids = log_transfer_runs(fcfg, params.tracking, out_dir, reports, meta, headline, started)
    write_json_atomic({**meta, "prediction_seconds": seconds, "mlflow_runs": run_ids}, out_dir / "summary.json")
    return TransferResult(table, run_ids, out_dir, seconds, headline)


def compact_metrics(table: pd.DataFrame) -> dict[str, Any]:
    """`dvc metrics show` shape: {source/image_type: {category: {base, adapted, delta}}} (strict accuracy)."""
    out: dict[str, Any] = {}
    for row in table.itertuples(index=False):
        out.setdefault(f"{row.source} / {row.image_type}", {})[row.category] = {
            "base": _finite(row.base_accuracy_adv_pairs),
            "adapted": _finite(row.adapted_accuracy_adv_pairs),
            "delta": _finite(row.delta_accuracy_adv_pairs),
        }
    return out


def _finite(value: Any) -> float | None:
    """NaN -> None, so JSON outputs stay strict."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _scores_path(out_dir: Path, model: str) -> Path:
    """The report's layout: <scores_root>/<question_set>/<model>/<setting>/metrics.json."""
    return out_dir / "scores" / QUESTION_SET / model / "vanilla" / "metrics.json"


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(table.to_json(orient="records"))


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def log_transfer_runs(
    fcfg: FinetuneProfile, tracking: Tracking, out_dir: Path, scores: Mapping[str, ScoreReport], meta: Mapping[str, Any],
    headline: Mapping[str, Mapping[str, float | None]], started: Mapping[str, str | None],
) -> dict[str, str]:
    """One MLflow run per model, tagged with (and nested under) the adapt training run; updated in place on re-runs.

    Like an evaluation run: grouped metrics (probmed.reporting.run_metrics) plus the study's headline
    (``transfer/in_domain``, ``transfer/other_domains``, ``transfer/all``), the per-group table as an
    artifact, and the run spanning its work (from the first question asked to now, when it is scored).
    """
    from mlflow import MlflowClient

    from probmed.infra.tracking_store import open_tracking_db, tracking_lock

    with tracking_lock(tracking.uri):
        open_tracking_db(tracking.uri, tracking.artifact_root)  # never replaced; follows a moved project
        return _log_transfer_runs(MlflowClient(tracking_uri=tracking.uri), fcfg, tracking, out_dir, scores, meta,
                                  headline, started)


def _log_transfer_runs(client, fcfg: FinetuneProfile, tracking: Tracking, out_dir: Path, scores: Mapping[str, ScoreReport],
                       meta: Mapping[str, Any], headline: Mapping[str, Mapping[str, float | None]],
                       started: Mapping[str, str | None]) -> dict[str, str]:
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

    from probmed.infra.clock import epoch_ms
    from probmed.infra.tracking_store import DVC_EXPERIMENT_TAG, dvc_experiment, ensure_experiment, unique_run_name
    from probmed.reporting.run_metrics import metrics_from_scores

    exp_id = ensure_experiment(client, fcfg.mlflow.experiment, tracking.artifact_root)
    parent = meta.get("training_run") or ""
    run_ids = {}
    for name in MODELS:
        prefix = name.split("-", 1)[1]
        tags = {"probmed.kind": "finetune-transfer", "probmed.model": name, PARENT_TAG: parent}
        clause = " and ".join(f"tags.`{k}` = '{v}'" for k, v in tags.items())
        found = client.search_runs([exp_id], clause, max_results=1)
        if dvc_experiment():
            tags[DVC_EXPERIMENT_TAG] = dvc_experiment()
        logged: dict[str, str] = {}
        if found:  # a run a killed call left RUNNING is completed below (params it lacks, metrics, artifacts)
            run_id, logged = found[0].info.run_id, dict(found[0].data.params)
            client.update_run(run_id, status="RUNNING")
        else:
            run_name = unique_run_name(client, exp_id, f"transfer/{prefix}")
            all_tags = {**tags, MLFLOW_RUN_NAME: run_name, **({MLFLOW_PARENT_RUN_ID: parent} if parent else {})}
            started_at = started.get(name)
            start = epoch_ms(started_at) if started_at else None
            run_id = client.create_run(exp_id, start_time=start, run_name=run_name, tags=all_tags).info.run_id
        params = {"base_model": meta["base_model"], "adapter": meta["adapter"] if prefix == "adapted" else "none",
                  "domain": json.dumps(meta["domain"]), "scale": meta["scale"], "n_questions": meta["n_questions"]}
        client.log_batch(run_id, params=[Param(k, str(v)) for k, v in params.items() if k not in logged])
        values = {**metrics_from_scores(scores[name]),
                  **{f"transfer/{k}": round(v, 2) for k, v in headline.get(name, {}).items() if v is not None}}
        now = int(time.time() * 1000)
        client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in sorted(values.items())],
                         tags=[RunTag(k, v) for k, v in tags.items()])
        client.log_artifact(run_id, str(_scores_path(out_dir, name)), "scores")
        client.log_artifact(run_id, str(out_dir / "predictions" / f"{name}.parquet"), "predictions")
        for f in ("transfer.csv", "transfer.md", "transfer.json", "transfer.png"):
            client.log_artifact(run_id, str(out_dir / f), "transfer")
        client.set_terminated(run_id, "FINISHED")
        run_ids[name] = run_id
    return run_ids
