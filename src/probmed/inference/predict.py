"""The prediction run loop: shard, describe, look up the store, ask, append, export.

Questions -> predictions, one way. Answers go to the answer store as soon as
they exist: the answers of one image together, in one append and one fsync,
when the backend answers image by image (a local model); each answer the moment
it arrives otherwise (an API, fsynced per batch). A kill loses at most the
answers of the image in flight (or the API answers in flight) and never
duplicates one; a re-run asks only what the store does not hold.
A :class:`Shard` splits the work deterministically by image (image k in
question-table order goes to shard k mod n), so processes or GPUs can share a
run; `merge_shards` puts the shard tables back together, checking that every
question is there exactly once.

Everything a run needs besides the questions and the models is one
:class:`PredictJob`, its setting resolved once (core.settings.Setting); the
answers go through one :class:`~probmed.inference.answer_sink.AnswerSink`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from probmed.core.answer_parser import parse_answer
from probmed.core.errors import ConfigError, RecordError
from probmed.core.params_schema import Params, Predict
from probmed.core.records import PREDICTION_COLUMNS
from probmed.core.settings import BASE_SETTING, Setting
from probmed.inference.ablation import control_images
from probmed.inference.answer_record import AnswerRecord, prediction_table
from probmed.inference.answer_sink import AnswerSink
from probmed.inference.answer_store import AnswerStore, cache_keys, file_hash, open_store, stable_hash
from probmed.inference.describe import describe_images
from probmed.inference.images import DecodedImages, resolve_image
from probmed.inference.models.base import Answer, Backend, Item
from probmed.inference.prompting import PromptSet
from probmed.infra.clock import iso_time
from probmed.infra.process import stopped
from probmed.infra.progress import progress as progress_bar


@dataclass
class RunResult:
    """What one prediction run produced: the predictions table and the counts its summary reports."""

    predictions: pd.DataFrame
    n_questions: int = 0
    n_cached: int = 0
    n_shared: int = 0  # answered by another question's request of this run (the same request)
    n_asked: int = 0
    n_failed: int = 0
    n_truncated: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    backend_stats: dict[str, Any] = field(default_factory=dict)
    # how the backend answered (model family, prompt path, counted yes/no tokens): it depends on what was cached,
    # so it goes to the predictions' work log, never into the table (a DVC output equal across runs)
    run_info: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        extra = {"run_info": self.run_info} if self.run_info else {}
        return {
            "questions": self.n_questions,
            "cached": self.n_cached,
            "shared": self.n_shared,
            "asked": self.n_asked,
            "failed": self.n_failed,
            "truncated": self.n_truncated,
            "cost_usd": round(self.cost_usd, 6),
            "elapsed_s": round(self.elapsed_s, 3),
            **{f"backend_{k}": v for k, v in self.backend_stats.items()},
            **extra,
        }


@dataclass(frozen=True)
class Shard:
    """Shard `index` of `count`: the images k with k mod count == index (0 of 1: everything)."""

    index: int = 0
    count: int = 1

    @property
    def file_name(self) -> str:
        """This shard's file in an answer store (shards of one run append to files of their own)."""
        return "answers.jsonl" if self.count == 1 else f"shard-{self.index:03d}-of-{self.count:03d}.jsonl"

    @property
    def suffix(self) -> str:
        """What a shard's prediction table adds to its name ("" for a whole run)."""
        return "" if self.count == 1 else f".shard-{self.index:03d}-of-{self.count:03d}"


def parse_shard(text: str | None) -> Shard:
    """"i/N" -> Shard(i, N) with 0 <= i < N."""
    if not text:
        return Shard()
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ConfigError(f"shard {text!r} is not of the form i/N (e.g. 0/4)") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"shard {text!r}: need 0 <= i < N")
    return Shard(i, n)


def shard_questions(questions: pd.DataFrame, shard: Shard) -> pd.DataFrame:
    """The questions of every count-th image, starting at image `index` (order of first appearance)."""
    if shard.count == 1:
        return questions
    order = {img: k for k, img in enumerate(pd.unique(questions["image_id"]))}
    mask = questions["image_id"].map(order) % shard.count == shard.index
    return questions[mask.to_numpy()]


def resolve_images(questions: pd.DataFrame, image_root: Path) -> dict[str, Path]:
    """image_id -> real image path inside the image root; every image must exist there (checked before
    anything is asked; see probmed.inference.images)."""
    return {row.image_id: resolve_image(image_root, row.image_path, row.image_id)
            for row in questions.drop_duplicates("image_id").itertuples(index=False)}


@dataclass(frozen=True)
class PredictJob:
    """What one prediction run answers and where it keeps what it gets: all but the questions and the models."""

    setting: Setting  # resolved once (core.settings.get_setting) by whoever starts the run
    prompts: PromptSet
    predict: Predict  # params.yaml `predict:`: image root, store folders, batch size, how stores are kept
    shard: Shard = Shard()
    control_seed: int = Params.seed  # draws the `shuffled` image control (params.yaml `seed`)
    label: str = ""  # what its progress calls the run (default: model/setting); `probmed run-plan` names each

    @classmethod
    def in_folders(cls, setting: Setting, prompts: PromptSet, image_root: str | Path, store_dir: str | Path, *,
                   shard: Shard = Shard(), control_seed: int = Params.seed, **predict: Any) -> PredictJob:
        """A job with the `predict:` section's defaults but these folders (and any other `predict:` key given):
        for callers without params.yaml (fine-tuning's transfer study, benchmarks, tests)."""
        section = Predict(image_root=str(image_root), store_dir=str(store_dir), **predict)
        return cls(setting, prompts, section, shard=shard, control_seed=control_seed)

    @property
    def image_root(self) -> Path:
        """The folder question image_path values are relative to."""
        return Path(self.predict.image_root)

    def store_dir(self, backend: Backend) -> Path:
        """The answer store of `backend` (one folder per model)."""
        return Path(self.predict.store_dir) / backend.name

    def open_store(self, directory: Path) -> AnswerStore:
        """This shard's file of the store in `directory`, written by this process alone."""
        return open_store(directory, self.shard.file_name, self.predict)


@dataclass(frozen=True)
class KeyedQuestion:
    """A question of the shard with its answer-store key."""

    key: str
    row: Any  # the question's row of the question table (a namedtuple from itertuples)


@dataclass(frozen=True)
class PendingQuestion(KeyedQuestion):
    """A question the store does not answer yet, and what the backend is asked for it."""

    item: Item


def answer_record(question: KeyedQuestion, ans: Answer, backend: Backend, job: PredictJob) -> AnswerRecord:
    """The store record of one answer: the response capped at ``predict.max_response_chars`` (the original
    length kept in ``truncated_from``), every text the backend got from outside redacted."""
    cap = job.predict.max_response_chars
    response = ans.response or ""
    truncated_from = None
    if cap is not None and len(response) > cap:
        truncated_from, response = len(response), response[:cap]
    response = backend.redact(response)
    label = "unparsed" if ans.error else ans.label or parse_answer(response)
    finish = ans.extra.get("finish_reason")
    return AnswerRecord(
        key=question.key,
        qid=question.row.qid,
        image_id=question.row.image_id,
        model=backend.name,
        setting=job.setting.name,
        prompt_version=job.prompts.version,
        response=response,
        label=label,
        p_yes=ans.p_yes,
        latency_s=round(float(ans.latency_s), 6),
        prompt_tokens=int(ans.prompt_tokens),
        completion_tokens=int(ans.completion_tokens),
        cost_usd=float(ans.cost_usd),
        retries=int(ans.retries),
        error=backend.redact(ans.error),
        finish_reason=None if finish is None else backend.redact(str(finish)),
        truncated_from=truncated_from,
        time=time.time(),
    )


def _describe_for(job: PredictJob, backend: Backend, describer: Backend | None, image_paths: dict[str, Path],
                  progress: bool, decoded: DecodedImages) -> dict[str, str | None]:
    """The descriptions `cot` / `described` prompts carry (cached per describer)."""
    by = job.setting.description_by
    if by is None:
        return {}
    who = backend if by == "self" else describer
    if who is None:
        raise ConfigError("setting=described needs a describer model (settings.describer)")
    dstore = job.open_store(Path(job.predict.describe_dir) / who.name)
    try:
        with progress_bar(total=len(image_paths), desc=f"describe[{who.name}]", unit="img", disable=not progress) as bar:
            got = describe_images(who, list(image_paths.items()), job.prompts, dstore, on_progress=bar.update,
                                  decoded=decoded)
    finally:
        dstore.close()
    if who.stop_requested:
        raise stopped("the descriptions received are stored; run the same command again to ask the rest")
    return got


@dataclass
class _Plan:
    keys: list[str] = field(default_factory=list)  # one per question of the shard, in order
    pending: list[PendingQuestion] = field(default_factory=list)  # to ask
    # the same request as a pending question of this run (same prompt, image bytes and question: a blank control
    # asks one text of many images alike): answered by that one request, never paid twice
    shared: list[KeyedQuestion] = field(default_factory=list)
    no_description: list[KeyedQuestion] = field(default_factory=list)  # recorded failed without asking
    n_cached: int = 0

    def remaining(self, store: AnswerStore) -> list[str]:
        """The qids of the questions to ask that the store holds no record of (not even a failed one)."""
        return [p.row.qid for p in [*self.pending, *self.shared] if store.record(p.key) is None]


def table_set_hash(questions: pd.DataFrame) -> str:
    """What a backend that answers from a table over the whole set (a seeded draw per row, a model cross-fitted
    on the set's answers) answers from: the set's rows in order. Part of its answers' keys, so that a question
    asked again in another set is answered from that set's table, not from a store another set filled (a
    machine that had evaluated an older subset scored the random baseline otherwise than a fresh clone)."""
    columns = [c for c in ("qid", "image_id", "question", "answer") if c in questions.columns]
    return stable_hash(questions[columns].astype(str).to_numpy().tolist())


def _plan(part: pd.DataFrame, backend: Backend, job: PredictJob, store: AnswerStore, image_paths: dict[str, Path],
          descriptions: dict[str, str | None], set_hash: str | None = None) -> _Plan:
    """The cache key of every question, and which of them the store does not answer yet (`set_hash`: the
    whole set's table_set_hash, for a backend that never sees the image)."""
    image_hashes = {img: file_hash(p) for img, p in image_paths.items()}
    fingerprints = backend.fingerprints()
    setting, prompts = job.setting, job.prompts
    describes = setting.description_by is not None
    plan = _Plan()
    asking: set[str] = set()
    for q in part.itertuples(index=False):
        desc = descriptions.get(q.image_id) if describes else None
        no_description = describes and desc is None
        prompt = "" if no_description else prompts.question_prompt(setting, q.question, desc)
        # a backend that never sees the image answers per question of this set (a seeded table, a cross-fitted fold)
        image_part = image_hashes.get(q.image_id) if backend.supports_images else f"qid:{q.qid}|set:{set_hash}"
        key = store.answered_key(cache_keys(fingerprints, setting.name, prompts.version, prompt, image_part, q.question))
        plan.keys.append(key)
        if no_description:  # recorded as failed, re-asked on the next run
            plan.no_description.append(KeyedQuestion(key, q))
        elif key in store:
            plan.n_cached += 1
        elif key in asking:
            plan.shared.append(KeyedQuestion(key, q))
        else:
            asking.add(key)
            item = Item(qid=q.qid, image_id=q.image_id, image_path=image_paths.get(q.image_id), prompt=prompt,
                        question=q.question, category=q.category)
            plan.pending.append(PendingQuestion(key, q, item))
    return plan


def _batches(pending: list[PendingQuestion], by_image: bool, batch_size: int) -> list[list[PendingQuestion]]:
    """The backend's batches: the questions of one image (a local model), or `batch_size` at a time (an API)."""
    if not by_image:
        return [pending[i : i + batch_size] for i in range(0, len(pending), batch_size)]
    batches: list[list[PendingQuestion]] = []
    for entry in pending:
        if batches and batches[-1][0].item.image_id == entry.item.image_id:
            batches[-1].append(entry)
        else:
            batches.append([entry])
    return batches


def _ask(plan: _Plan, backend: Backend, job: PredictJob, sink: AnswerSink, bar: Any, decoded: DecodedImages) -> None:
    """Ask every pending question, each batch through the sink: a local model's answers of one image together
    (one append, one fsync per image), an API's each the moment it arrives."""
    for batch in _batches(plan.pending, backend.batch_by_image, backend.batch_size or job.predict.batch_size):
        if backend.stop_requested:
            break
        decoded.check((p.item.image_id, p.item.image_path) for p in batch)  # before the backend sees them
        def to_record(i: int, ans: Answer, batch: list[PendingQuestion] = batch) -> AnswerRecord:
            return answer_record(batch[i], ans, backend, job)

        sink.execute([p.item for p in batch], to_record, together=backend.batch_by_image)
        st = backend.stats()
        bar.set_postfix(cached=plan.n_cached, failed=sink.failed, retries=st.get("retries", 0),
                        cost=f"${st.get('cost_usd', sink.cost):.4f}", refresh=False)


def _image_paths(questions: pd.DataFrame, part: pd.DataFrame, backend: Backend, job: PredictJob) -> dict[str, Path]:
    """The image each question's backend sees: found in the image root, or its control's replacement."""
    if not backend.supports_images:
        return {}
    image_paths = resolve_images(part, job.image_root)
    if job.setting.is_image_control:
        image_paths = control_images(job.setting, questions, image_paths,
                                     lambda q: resolve_images(q, job.image_root),
                                     job.store_dir(backend), job.control_seed, file_hash)
    return image_paths


def run_predictions(questions: pd.DataFrame, backend: Backend, job: PredictJob, describer: Backend | None = None,
                    progress: bool = True) -> RunResult:
    """Answer every question of the job's shard; returns the prediction table in question order.

    Every image is found inside the image root before anything is asked, and decoded before a
    backend first sees it. In an image-control setting (`blank`, `shuffled`) every image is
    replaced before the backend sees it (probmed.inference.ablation; `job.control_seed` draws the
    shuffle); a backend that never sees the image answers exactly as in `vanilla`. `describer`
    writes the descriptions of setting `described`.
    """
    t_start = time.perf_counter()
    if job.setting.description_by is not None and not backend.supports_images:
        raise ConfigError(f"model {backend.name!r} never sees the image; only setting={BASE_SETTING} applies to it")
    part = shard_questions(questions, job.shard)
    image_paths = _image_paths(questions, part, backend, job)
    decoded = DecodedImages()  # every image is decoded before a backend sees it
    store = job.open_store(job.store_dir(backend))
    try:
        descriptions = _describe_for(job, backend, describer, image_paths, progress, decoded)
        plan = _plan(part, backend, job, store, image_paths, descriptions,
                     None if backend.supports_images else table_set_hash(questions))
        failed = Answer(error="no description (the describer failed)")
        store.append([answer_record(q, failed, backend, job).to_line() for q in plan.no_description], sync=False)
        if plan.pending:  # baselines train or seed on the whole table (not the shard); skipped when all is cached
            backend.prepare(questions)
        label = job.label or f"{backend.name}/{job.setting.name}"
        settled = plan.n_cached + len(plan.shared) + len(plan.no_description)  # nothing to ask for these
        with progress_bar(total=len(part), initial=settled, desc=f"predict[{label}]", unit="q",
                          disable=not progress) as bar:
            sink = AnswerSink(store, backend, on_written=bar.update)
            _ask(plan, backend, job, sink, bar, decoded)
        sink.stop_if_disk_full(lambda: plan.remaining(store))
        if backend.stop_requested:  # a signal, or the parent is gone: what arrived is stored, nothing more is asked
            left = sum(1 for key in plan.keys if key not in store)
            raise stopped(f"{len(plan.keys) - left} of {len(plan.keys)} answers stored ({sink.asked} received in this "
                          f"run), {left} question(s) left; run the same command again to ask only those")
        preds = _predictions(part, plan.keys, store, backend.name, job.setting.name)
    finally:
        store.close()
    return RunResult(
        predictions=preds,
        n_questions=len(part),
        n_cached=plan.n_cached,
        n_shared=len(plan.shared),
        n_asked=sink.asked,
        n_failed=int((preds["error"] != "").sum()),
        n_truncated=int(sum(1 for k in plan.keys if (store.record(k) or {}).get("truncated_from"))),
        cost_usd=sink.cost,
        elapsed_s=time.perf_counter() - t_start,
        backend_stats=backend.stats(),
        run_info=backend.run_info(),
    )


def _predictions(part: pd.DataFrame, keys: list[str], store: AnswerStore, model: str, setting: str) -> pd.DataFrame:
    records = []
    for key, q in zip(keys, part.itertuples(index=False)):
        rec = store.get(key) or store.record(key)
        if rec is None:  # cannot happen unless the backend broke its contract
            raise RuntimeError(f"question {q.qid}: no answer recorded")
        records.append({**rec, "qid": q.qid, "model": model, "setting": setting})
    preds = prediction_table(records)
    answered = answering_interval(records)
    if answered:  # when the answers were asked (cached ones keep their time): the MLflow run's start
        preds.attrs["answering"] = answered
    return preds


def answering_interval(records: list[dict[str, Any]]) -> dict[str, str]:
    """When the answers of a table were asked: the first request's start to the last answer (ISO 8601, UTC).

    Store records carry the time each answer arrived and its latency (from the store's timing log); a cached
    answer keeps the time it was first asked, so the interval is the work's, not
    this call's. Empty when no record carries a time (stores written before it).
    """
    times = [(float(r["time"]) - float(r.get("latency_s") or 0.0), float(r["time"]))
             for r in records if isinstance(r.get("time"), (int, float))]
    if not times:
        return {}
    return {"started_at": iso_time(min(t[0] for t in times)), "finished_at": iso_time(max(t[1] for t in times))}


def merge_shards(questions: pd.DataFrame, shard_tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate shard prediction tables into question order; every qid exactly once.

    Linear in the number of questions: one index of the question order, one set of
    the predicted qids, one gather.
    """
    if not shard_tables:
        raise RecordError("merge: no shard tables given")
    frame = pd.concat(shard_tables, ignore_index=True)
    got = frame["qid"].tolist()
    dup = frame["qid"].duplicated()
    if dup.any():
        raise RecordError(f"merge: qid {frame['qid'][dup].iat[0]!r} appears in more than one shard")
    position = {qid: i for i, qid in enumerate(questions["qid"].tolist())}
    extra = next((qid for qid in got if qid not in position), None)
    if extra is not None:
        raise RecordError(f"merge: qid {extra!r} is not in the question table")
    if len(got) < len(position):
        have = set(got)
        missing = [qid for qid in position if qid not in have]
        raise RecordError(f"merge: {len(missing)} question(s) have no prediction, e.g. qid {missing[0]!r}")
    rows = np.empty(len(got), dtype=np.int64)
    rows[[position[qid] for qid in got]] = np.arange(len(got))  # rows[k]: the row answering question k
    return frame.iloc[rows].reset_index(drop=True)[list(PREDICTION_COLUMNS)]
