"""One scoring run end to end: metrics, procedural diagnosis, subset robustness, tables.

Everything is computed before anything is written, and every file is written
atomically, so a failure never leaves a half-scored run behind.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probmed.core.params_schema import Score
from probmed.infra.io import (
    remove_stale_temps,
    write_json_atomic,
    write_parquet,
    write_text_atomic,
)
from probmed.scoring.compare import per_image_table
from probmed.scoring.evidence import known_absent_scores
from probmed.scoring.metrics import Prepared, prepare, score_prepared
from probmed.scoring.procedural import procedural
from probmed.scoring.robustness import subset_robustness_prepared
from probmed.scoring.score_report import (
    ScoreMeta,
    ScoreReport,
    ScoreSection,
    SubsetScore,
)
from probmed.scoring.tables import render_all


def from_response_records(records: list[dict[str, Any]], where: str = "responses") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(questions, predictions) from original-format response records, for the project's scorer.

    The question set is rebuilt from the records (``gt_ans`` is the answer) and checked by
    the strict question reader; each response is parsed with probmed.core.answer_parser.parse_answer.
    """
    from probmed.core.answer_parser import parse_answer
    from probmed.core.errors import RecordError
    from probmed.core.release_format import questions_from_official

    question_records = [
        {
            "id": r["id"],
            "i": i,
            "image": "",
            "image_type": r["image_type"],
            "qa_type": r["qa_type"],
            "question": r["question"],
            "answer": r["gt_ans"],
            "src_dataset": str(r.get("src_dataset") or "response-file"),
        }
        for i, r in enumerate(records)
    ]
    try:
        questions = questions_from_official(question_records, where)
    except RecordError as exc:  # name the field as the response file spells it
        raise RecordError(str(exc).replace("field 'answer'", "field 'gt_ans'")) from None
    responses = [r["response"] for r in records]
    predictions = pd.DataFrame(
        {
            "qid": questions["qid"].to_numpy(),
            "model": "response-file",
            "setting": "vanilla",
            "response": responses,
            "label": [parse_answer(t) for t in responses],
        }
    )
    return questions, predictions


def question_set_kind(questions: pd.DataFrame) -> str:
    """"vqarad" for a VQA-RAD adversarial set (pairs scored one by one), else "probmed"."""
    qa = questions["qa_type"].astype(str)
    return "vqarad" if len(qa) and qa.str.startswith("vqarad").all() else "probmed"


def evaluate(
    questions: pd.DataFrame,
    predictions: pd.DataFrame,
    score: Score | None = None,
    name: str | None = None,
) -> ScoreReport:
    """The full score result of one run (shape documented in probmed.scoring.metrics)."""
    return score_run(questions, predictions, score, name).result


@dataclass(frozen=True)
class ScoredRun:
    """What `probmed score` computes from one join of predictions onto questions."""

    result: ScoreReport
    per_image: pd.DataFrame  # probmed.scoring.compare.per_image_table: what paired comparisons resample


def score_run(
    questions: pd.DataFrame,
    predictions: pd.DataFrame,
    score: Score | None = None,
    name: str | None = None,
) -> ScoredRun:
    """Score one run: the result and its per-image sums, joined once (:func:`probmed.scoring.metrics.prepare`)."""
    score = score or Score()
    prepared = prepare(questions, predictions)
    scores = _json_safe(score_prepared(prepared, score.bootstrap_resamples, score.seed, score.ci_level))
    baseline = scores["random_baseline"]
    rows = subset_robustness_prepared(prepared, score.subset_fractions, score.subset_seed)
    result = ScoreReport(
        scores["overall"], scores["by_category"], scores["by_image_type"],
        meta=_meta(prepared, questions, predictions, score, name),
        baseline=ScoreSection(baseline["overall"], baseline["by_category"], baseline["by_image_type"]),
        procedural=_json_safe(procedural(prepared)),
        subset_robustness=[SubsetScore(**row) for row in _json_safe(rows)],
        known_absent=known_absent_scores(prepared),  # ratios of counts: finite or None already
    )
    return ScoredRun(result, per_image_table(prepared))


def _meta(prepared: Prepared, questions: pd.DataFrame, predictions: pd.DataFrame, score: Score,
          name: str | None) -> ScoreMeta:
    """What was scored: the model and setting named by the predictions (or ``name``), counts, bootstrap."""
    def names(column: str) -> list[str]:
        if column not in predictions or not len(predictions):
            return []
        return sorted(predictions[column].dropna().astype(str).unique())

    models, setting = names("model"), names("setting")
    return ScoreMeta(
        model=name or (models[0] if len(models) == 1 else ",".join(models)),
        setting=setting[0] if len(setting) == 1 else ",".join(setting),
        question_set=question_set_kind(questions),
        n_questions=int(len(questions)),
        n_predictions=prepared.n_predictions,
        extra_predictions=prepared.extra_predictions,
        n_failed=int((prepared.label == "failed").sum()),
        n_missing=int((prepared.label == "missing").sum()),
        answers_sha256=answers_digest(prepared),
        bootstrap_resamples=score.bootstrap_resamples,
        ci_level=score.ci_level,
        seed=score.seed,
    )


def answers_digest(prepared: Prepared) -> str:
    """SHA-256 over (qid, parsed label) in question order: equal digests mean identical answers to
    every question (the report warns when two settings of one model give identical predictions)."""
    lines = "".join(f"{qid}\t{label}\n" for qid, label in zip(prepared.frame["qid"].astype(str), prepared.label))
    return hashlib.sha256(lines.encode()).hexdigest()


def per_image(questions: pd.DataFrame, predictions: pd.DataFrame) -> pd.DataFrame:
    """The run's per-image sums (probmed.scoring.compare.per_image_table) without scoring it (see :func:`score_run`)."""
    return per_image_table(prepare(questions, predictions))


def _json_safe(obj: Any) -> Any:
    """NaN/inf -> None and numpy scalars -> Python, so metrics.json is strict JSON."""
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_work(out_dir: str | Path, scoring_started: str) -> Path:
    """When the run was scored, in the score directory's work log (infra.clock.work_log_path), not in it.

    The MLflow run of the evaluation spans this work and the answering (the predictions' work log),
    not the moment it was logged; the score directory, a DVC output, holds no time.
    """
    from probmed.infra.clock import iso_time, write_work_log

    return write_work_log(out_dir, {"scoring": {"started_at": scoring_started, "finished_at": iso_time()}})


PER_IMAGE_FILE = "per_image.parquet"


def write_run(result: ScoreReport, out_dir: str | Path, label: str | None = None,
              per_image_sums: pd.DataFrame | None = None) -> list[Path]:
    """Write metrics.json, every table (CSV + Markdown) and the per-image sums into ``out_dir``."""
    out_dir = Path(out_dir)
    remove_stale_temps(out_dir)  # a killed earlier score run's hidden .tmp files
    label = label or str((result.meta.model if result.meta else None) or "model")
    metrics = result.to_dict()
    texts = render_all({label: metrics})
    written = []
    for fname, text in texts.items():
        write_text_atomic(text, out_dir / fname)
        written.append(out_dir / fname)
    if per_image_sums is not None:
        write_parquet(per_image_sums, out_dir / PER_IMAGE_FILE)
        written.append(out_dir / PER_IMAGE_FILE)
    write_json_atomic(metrics, out_dir / "metrics.json")  # last: its presence marks a complete run
    written.append(out_dir / "metrics.json")
    return written
