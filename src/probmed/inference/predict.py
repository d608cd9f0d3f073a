"""The prediction run loop: shard, describe, look up the store, ask, append, export.

Questions -> predictions, one way. Answers go to the answer store as soon as
they exist: the answers of one image together, in one append and one fsync,
when the backend answers image by image (a local model); each answer the moment
it arrives otherwise (an API, fsynced per batch). A kill loses at most the
answers of the image in flight (or the API answers in flight) and never
duplicates one; a re-run asks only what the store does not hold.
`shard=(i, n)` splits the work deterministically by image (image k in
question-table order goes to shard k mod n), so processes or GPUs can share a
run; `merge_shards` puts the shard tables back together, checking that every
question is there exactly once.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
from probmed.core.clock import iso_time
from probmed.core.progress import progress as progress_bar

from probmed.inference.ablation import control_images
from probmed.inference.answer_parser import parse_answer
from probmed.core.errors import ConfigError, DiskFullError, RecordError
from probmed.core.process import ParentExited, stop_reason
from probmed.inference.describe import describe_images
from probmed.inference.images import DecodedImages, resolve_image
from probmed.inference.models.base import NOT_ASKED, Answer, Backend, Item
from probmed.core.settings import BASE_SETTING, get_setting
from probmed.inference.prompting import PromptSet
from probmed.core.records import PREDICTION_COLUMNS
from probmed.inference.answer_store import AnswerStore, cache_key, file_hash


@dataclass
class RunResult:
    predictions: pd.DataFrame
    n_questions: int = 0
    n_cached: int = 0
    n_asked: int = 0
    n_failed: int = 0
    n_truncated: int = 0
    cost_usd: float = 0.0
    elapsed_s: float = 0.0
    backend_stats: dict[str, Any] = field(default_factory=dict)
    run_info: dict[str, Any] = field(default_factory=dict)  # also in predictions.attrs["run_info"]

    def summary(self) -> dict[str, Any]:
        extra = {"run_info": self.run_info} if self.run_info else {}
        return {
            "questions": self.n_questions,
            "cached": self.n_cached,
            "asked": self.n_asked,
            "failed": self.n_failed,
            "truncated": self.n_truncated,
            "cost_usd": round(self.cost_usd, 6),
            "elapsed_s": round(self.elapsed_s, 3),
            **{f"backend_{k}": v for k, v in self.backend_stats.items()},
            **extra,
        }


def parse_shard(text: str | None) -> tuple[int, int]:
    """"i/N" -> (i, N) with 0 <= i < N."""
    if not text:
        return 0, 1
    try:
        i, n = (int(x) for x in str(text).split("/"))
    except ValueError:
        raise ConfigError(f"shard {text!r} is not of the form i/N (e.g. 0/4)") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"shard {text!r}: need 0 <= i < N")
    return i, n


def shard_questions(questions: pd.DataFrame, index: int, count: int) -> pd.DataFrame:
    """The questions of every count-th image, starting at image `index` (order of first appearance)."""
    if count == 1:
        return questions
    order = {img: k for k, img in enumerate(pd.unique(questions["image_id"]))}
    mask = questions["image_id"].map(order) % count == index
    return questions[mask.to_numpy()]


def store_file_name(shard: tuple[int, int]) -> str:
    i, n = shard
    return "answers.jsonl" if n == 1 else f"shard-{i:03d}-of-{n:03d}.jsonl"


def resolve_images(questions: pd.DataFrame, image_root: Path) -> dict[str, Path]:
    """image_id -> real image path inside the image root; every image must exist there (checked before
    anything is asked; see probmed.inference.images)."""
    return {row.image_id: resolve_image(image_root, row.image_path, row.image_id)
            for row in questions.drop_duplicates("image_id").itertuples(index=False)}


def _record(key: str, q: Any, backend: Backend, setting: str, prompts: PromptSet, ans: Answer,
            max_response_chars: int | None = None) -> dict[str, Any]:
    """The store record of one answer: the response capped at `max_response_chars` (the original
    length kept in ``truncated_from``), every text the backend got from outside redacted."""
    response = ans.response or ""
    truncated_from = None
    if max_response_chars is not None and len(response) > max_response_chars:
        truncated_from, response = len(response), response[:max_response_chars]
    response = backend.redact(response)
    if ans.error:
        label = "unparsed"
    else:
        label = ans.label or parse_answer(response)
    finish = ans.extra.get("finish_reason")
    return {
        "key": key,
        "qid": q.qid,
        "image_id": q.image_id,
        "model": backend.name,
        "setting": setting,
        "prompt_version": prompts.version,
        "response": response,
        "label": label,
        "p_yes": ans.p_yes,
        "latency_s": round(float(ans.latency_s), 6),
        "prompt_tokens": int(ans.prompt_tokens),
        "completion_tokens": int(ans.completion_tokens),
        "cost_usd": float(ans.cost_usd),
        "retries": int(ans.retries),
        "error": backend.redact(ans.error),
        "finish_reason": None if finish is None else backend.redact(str(finish)),
        "truncated_from": truncated_from,
        "time": time.time(),
    }


def records_to_predictions(records: list[dict[str, Any]]) -> pd.DataFrame:
    rows = [{c: r.get(c) for c in PREDICTION_COLUMNS if c != "cache_key"} | {"cache_key": r["key"]} for r in records]
    frame = pd.DataFrame(rows, columns=list(PREDICTION_COLUMNS))
    frame["p_yes"] = pd.to_numeric(frame["p_yes"], errors="coerce").astype("float64")
    for c in ("prompt_tokens", "completion_tokens"):
        frame[c] = frame[c].fillna(0).astype("int64")
    for c in ("latency_s", "cost_usd"):
        frame[c] = frame[c].fillna(0.0).astype("float64")
    frame["error"] = frame["error"].fillna("").astype(str)
    frame["response"] = frame["response"].fillna("").astype(str)
    return frame


@dataclass
class StoreOptions:
    """How the run keeps its answer store (the ``predict:`` section of params.yaml)."""

    fsync: bool = True  # fsync once per batch
    lock_wait_s: float | None = 0.0  # another writer on the same file: fail at once (0), wait (s), None: forever
    reserve_bytes: int = 8 << 20  # disk kept free beside the store for the answers in flight when the disk fills
    max_response_chars: int | None = 32_000  # longer responses are cut (the original length is recorded)

    def open(self, directory: Path, file_name: str) -> AnswerStore:
        return AnswerStore(directory, file_name, fsync=self.fsync, writer=True, lock_wait_s=self.lock_wait_s,
                           reserve_bytes=self.reserve_bytes)


def _describe_for(setting: str, backend: Backend, describer: Backend | None, describe_dir: str | Path | None,
                  image_paths: dict[str, Path], prompts: PromptSet, shard: tuple[int, int], options: StoreOptions,
                  progress: bool, decoded: DecodedImages) -> dict[str, str | None]:
    """The descriptions `cot` / `described` prompts carry (cached per describer)."""
    by = get_setting(setting).description_by
    if by is None:
        return {}
    who = backend if by == "self" else describer
    if who is None:
        raise ConfigError("setting=described needs a describer model (settings.describer)")
    if describe_dir is None:
        raise ConfigError("descriptions need a cache directory (predict.describe_dir)")
    dstore = options.open(Path(describe_dir) / who.name, store_file_name(shard))
    try:
        with progress_bar(total=len(image_paths), desc=f"describe[{who.name}]", unit="img", disable=not progress) as bar:
            got = describe_images(who, list(image_paths.items()), prompts, dstore, on_progress=bar.update,
                                  decoded=decoded)
    finally:
        dstore.close()
    if who.stop_requested:
        raise ParentExited(f"{stop_reason()}; the descriptions received are stored")
    return got


@dataclass
class _Plan:
    keys: list[str] = field(default_factory=list)  # one per question of the shard, in order
    pending: list[tuple[str, Any, Item]] = field(default_factory=list)  # (key, question row, item) to ask
    no_description: list[tuple[str, Any]] = field(default_factory=list)  # recorded failed without asking
    n_cached: int = 0


def _plan(part: pd.DataFrame, backend: Backend, setting: str, prompts: PromptSet, store: AnswerStore,
          image_paths: dict[str, Path], descriptions: dict[str, str | None]) -> _Plan:
    """The cache key of every question, and which of them the store does not answer yet."""
    image_hashes = {img: file_hash(p) for img, p in image_paths.items()}
    fingerprint = backend.fingerprint()
    plan = _Plan()
    for q in part.itertuples(index=False):
        describes = get_setting(setting).description_by is not None
        desc = descriptions.get(q.image_id) if describes else None
        no_description = describes and desc is None
        prompt = "" if no_description else prompts.question_prompt(setting, q.question, desc)
        # a backend that never sees the image answers per question (a seeded table, a cross-fitted fold)
        image_part = image_hashes.get(q.image_id) if backend.supports_images else f"qid:{q.qid}"
        key = cache_key(fingerprint, setting, prompts.version, prompt, image_part, q.question)
        plan.keys.append(key)
        if no_description:  # recorded as failed, re-asked on the next run
            plan.no_description.append((key, q))
        elif key in store:
            plan.n_cached += 1
        else:
            item = Item(qid=q.qid, image_id=q.image_id, image_path=image_paths.get(q.image_id), prompt=prompt,
                        question=q.question, category=q.category)
            plan.pending.append((key, q, item))
    return plan


def _batches(pending: list[tuple[str, Any, Item]], by_image: bool, batch_size: int) -> list[list[tuple[str, Any, Item]]]:
    if not by_image:
        return [pending[i : i + batch_size] for i in range(0, len(pending), batch_size)]
    batches: list[list[tuple[str, Any, Item]]] = []
    for entry in pending:
        if batches and batches[-1][0][1].image_id == entry[1].image_id:
            batches[-1].append(entry)
        else:
            batches.append([entry])
    return batches


@dataclass
class _Progress:
    asked: int = 0
    failed: int = 0
    cost: float = 0.0
    unwritten: list[dict[str, Any]] = field(default_factory=list)  # received, not on disk (disk full)
    disk_error: str = ""


def _ask(plan: _Plan, backend: Backend, store: AnswerStore, record: Callable[..., dict[str, Any]],
         batch_size: int, bar: Any, decoded: DecodedImages) -> _Progress:
    """Ask every pending question and append the answers: a local model's answers of one image together (one
    append, one fsync per image), an API's each the moment it arrives.

    An answer counts (progress, `store.get`) only once it is on disk. When the disk fills, the
    backend is told to stop starting requests; answers still in flight are kept in memory
    (``unwritten``) for :func:`_write_unwritten`.
    """
    done = _Progress()

    def keep(recs: list[dict[str, Any]]) -> None:
        if not recs:
            return
        if done.unwritten:
            done.unwritten.extend(recs)
            return
        try:
            store.append(recs, sync=False)
        except DiskFullError as exc:
            done.unwritten.extend(recs)
            done.disk_error = str(exc)
            backend.request_stop()
            return
        done.asked += len(recs)
        done.failed += sum(bool(rec.get("error")) for rec in recs)
        bar.update(len(recs))

    for batch in _batches(plan.pending, backend.batch_by_image, batch_size):
        if backend.stop_requested:
            break
        decoded.check((it.image_id, it.image_path) for _, _, it in batch)  # before the backend sees them
        received: list[dict[str, Any]] = []  # a batch of one image: written together, in one append

        def on_answer(i: int, ans: Answer, batch=batch, received=received) -> None:
            if ans.extra.get(NOT_ASKED):
                return
            key, q, _ = batch[i]
            done.cost += ans.cost_usd
            if backend.batch_by_image:
                received.append(record(key, q, ans))
            else:  # answers of many images arriving one by one (an API): each on disk as it comes
                keep([record(key, q, ans)])

        try:
            backend.answer([it for _, _, it in batch], on_answer=on_answer)
        finally:  # one write and one fsync per batch, also for the answers that came before a failure
            keep(received)
            if not done.disk_error:
                try:
                    store.sync()
                except DiskFullError as exc:
                    done.disk_error = str(exc)
                    backend.request_stop()
        st = backend.stats()
        bar.set_postfix(cached=plan.n_cached, failed=done.failed, retries=st.get("retries", 0),
                        cost=f"${st.get('cost_usd', done.cost):.4f}", refresh=False)
    return done


def _write_unwritten(done: _Progress, plan: _Plan, store: AnswerStore) -> None:
    """The disk filled: write what was received into the freed reserve, then stop with exit 3 saying
    what is on disk and which questions remain."""
    n = len(done.unwritten)
    store.release_reserve()
    lost: list[dict[str, Any]] = []
    try:
        store.append(done.unwritten, sync=True)
    except DiskFullError:
        lost = done.unwritten
        for rec in lost:  # last resort: the answers go to stderr rather than nowhere
            print(json.dumps(rec, ensure_ascii=False), file=sys.stderr)
    remaining = [q.qid for key, q, _ in plan.pending if store.get(key) is None and store.record(key) is None]
    saved = (f"all {done.asked + n} answers received are on disk ({n} written into the space the store keeps "
             "in reserve)") if not lost else (f"{len(lost)} answers received could not be written and were printed "
                                             "to stderr as JSON lines")
    example = f", e.g. {', '.join(remaining[:3])}" if remaining else ""
    raise DiskFullError(f"{done.disk_error}: {saved}; {len(remaining)} question(s) remain to ask{example}; "
                        "free space and re-run (only those are asked)")


def run_predictions(
    questions: pd.DataFrame,
    backend: Backend,
    setting: str,
    prompts: PromptSet,
    image_root: str | Path,
    store_dir: str | Path,
    describer: Backend | None = None,
    describe_dir: str | Path | None = None,
    shard: tuple[int, int] = (0, 1),
    batch_size: int = 64,
    progress: bool = True,
    fsync: bool = True,
    options: StoreOptions | None = None,
    control_seed: int = 0,
) -> RunResult:
    """Answer every question of the shard; returns the prediction table in question order.

    Every image is found inside the image root before anything is asked, and decoded before a
    backend first sees it. In an image-control setting (`blank`, `shuffled`) every image is
    replaced before the backend sees it (probmed.inference.ablation; `control_seed` draws the
    shuffle); a backend that never sees the image answers exactly as in `vanilla`.
    """
    t_start = time.perf_counter()
    options = options or StoreOptions(fsync=fsync)
    if get_setting(setting).description_by is not None and not backend.supports_images:
        raise ConfigError(f"model {backend.name!r} never sees the image; only setting={BASE_SETTING} applies to it")
    part = shard_questions(questions, *shard)
    image_paths = resolve_images(part, Path(image_root)) if backend.supports_images else {}
    spec = get_setting(setting)
    if backend.supports_images and spec.is_image_control:
        image_paths = control_images(spec, questions, image_paths, lambda q: resolve_images(q, Path(image_root)),
                                     Path(store_dir) / backend.name, control_seed, file_hash)
    decoded = DecodedImages()  # every image is decoded before a backend sees it
    store = options.open(Path(store_dir) / backend.name, store_file_name(shard))
    try:
        descriptions = _describe_for(setting, backend, describer, describe_dir, image_paths, prompts, shard, options,
                                     progress, decoded)
        plan = _plan(part, backend, setting, prompts, store, image_paths, descriptions)

        def record(key: str, q: Any, ans: Answer) -> dict[str, Any]:
            return _record(key, q, backend, setting, prompts, ans, options.max_response_chars)

        store.append([record(key, q, Answer(error="no description (the describer failed)"))
                      for key, q in plan.no_description], sync=False)
        if plan.pending:  # baselines train or seed on the whole table (not the shard); skipped when all is cached
            backend.prepare(questions)
        with progress_bar(total=len(part), initial=plan.n_cached, desc=f"predict[{backend.name}/{setting}]", unit="q",
                  disable=not progress) as bar:
            done = _ask(plan, backend, store, record, batch_size, bar, decoded)
        if done.disk_error:
            _write_unwritten(done, plan, store)
        if backend.stop_requested:  # the parent is gone: what arrived is stored, nothing more is asked
            raise ParentExited(f"{stop_reason()}; {done.asked} answers received and stored")
        preds = _predictions(part, plan.keys, store, backend.name, setting)
    finally:
        store.close()
    run_info = backend.run_info()
    if run_info:  # travels with the table: Parquet keeps DataFrame.attrs
        preds.attrs["run_info"] = run_info
    return RunResult(
        predictions=preds,
        n_questions=len(part),
        n_cached=plan.n_cached,
        n_asked=done.asked,
        n_failed=int((preds["error"] != "").sum()),
        n_truncated=int(sum(1 for k in plan.keys if (store.record(k) or {}).get("truncated_from"))),
        cost_usd=done.cost,
        elapsed_s=time.perf_counter() - t_start,
        backend_stats=backend.stats(),
        run_info=run_info,
    )


def _predictions(part: pd.DataFrame, keys: list[str], store: AnswerStore, model: str, setting: str) -> pd.DataFrame:
    records = []
    for key, q in zip(keys, part.itertuples(index=False)):
        rec = store.get(key) or store.record(key)
        if rec is None:  # cannot happen unless the backend broke its contract
            raise RuntimeError(f"question {q.qid}: no answer recorded")
        records.append({**rec, "qid": q.qid, "model": model, "setting": setting})
    preds = records_to_predictions(records)
    answered = answering_interval(records)
    if answered:  # when the answers were asked (cached ones keep their time): the MLflow run's start
        preds.attrs["answering"] = answered
    return preds


def answering_interval(records: list[dict[str, Any]]) -> dict[str, str]:
    """When the answers of a table were asked: the first request's start to the last answer (ISO 8601, UTC).

    Store records keep the time each answer arrived and its latency; a cached
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
