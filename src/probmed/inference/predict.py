"""The prediction run loop: shard, describe, look up the store, ask, append, export.

Questions -> predictions, one way. Every answer is appended to the answer store
the moment the backend reports it (fsynced per batch), so a kill loses at most
the answers in flight; a re-run asks only what the store does not hold.
`shard=(i, n)` splits the work deterministically by image (image k in
question-table order goes to shard k mod n), so processes or GPUs can share a
run; `merge_shards` puts the shard tables back together, checking that every
question is there exactly once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from probmed.inference.answer_parser import parse_answer
from probmed.core.errors import ConfigError, MissingFileError, RecordError
from probmed.inference.describe import describe_images
from probmed.inference.models.base import Answer, Backend, Item
from probmed.core.settings import BASE_SETTING, get_setting
from probmed.inference.prompting import PromptSet
from probmed.core.records import PREDICTION_COLUMNS, write_parquet
from probmed.inference.answer_store import AnswerStore, cache_key, file_hash


@dataclass
class RunResult:
    predictions: pd.DataFrame
    n_questions: int = 0
    n_cached: int = 0
    n_asked: int = 0
    n_failed: int = 0
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
    """image_id -> absolute image path; every image must exist (checked before anything is asked)."""
    paths: dict[str, Path] = {}
    for row in questions.drop_duplicates("image_id").itertuples(index=False):
        rel = row.image_path
        if rel is None or (isinstance(rel, float) and pd.isna(rel)) or not str(rel):
            raise RecordError(f"questions: image {row.image_id}: field 'image_path' is empty")
        path = Path(image_root) / str(rel)
        if not path.is_file():
            raise MissingFileError(f"image {row.image_id}: file {path} not found (image root {image_root})")
        paths[row.image_id] = path
    return paths


def _record(key: str, q: Any, backend: Backend, setting: str, prompts: PromptSet, ans: Answer) -> dict[str, Any]:
    if ans.error:
        label = "unparsed"
    else:
        label = ans.label or parse_answer(ans.response)
    return {
        "key": key,
        "qid": q.qid,
        "image_id": q.image_id,
        "model": backend.name,
        "setting": setting,
        "prompt_version": prompts.version,
        "response": ans.response,
        "label": label,
        "p_yes": ans.p_yes,
        "latency_s": round(float(ans.latency_s), 6),
        "prompt_tokens": int(ans.prompt_tokens),
        "completion_tokens": int(ans.completion_tokens),
        "cost_usd": float(ans.cost_usd),
        "retries": int(ans.retries),
        "error": ans.error,
        "finish_reason": ans.extra.get("finish_reason"),
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
) -> RunResult:
    """Answer every question of the shard; returns the prediction table in question order."""
    t_start = time.perf_counter()
    spec = get_setting(setting)
    if spec.description_by is not None and not backend.supports_images:
        raise ConfigError(f"model {backend.name!r} never sees the image; only setting={BASE_SETTING} applies to it")
    part = shard_questions(questions, *shard)
    image_paths = resolve_images(part, Path(image_root)) if backend.supports_images else {}
    image_hashes = {img: file_hash(p) for img, p in image_paths.items()}

    descriptions: dict[str, str | None] = {}
    if spec.description_by is not None:
        who = backend if spec.description_by == "self" else describer
        if who is None:
            raise ConfigError("setting=described needs a describer model (settings.describer)")
        if describe_dir is None:
            raise ConfigError("descriptions need a cache directory (predict.describe_dir)")
        dstore = AnswerStore(Path(describe_dir) / who.name, store_file_name(shard), fsync=fsync)
        try:
            with tqdm(total=len(image_paths), desc=f"describe[{who.name}]", unit="img", disable=not progress) as bar:
                descriptions = describe_images(who, list(image_paths.items()), prompts, dstore, on_progress=bar.update)
        finally:
            dstore.close()

    store = AnswerStore(Path(store_dir) / backend.name, store_file_name(shard), fsync=fsync)
    fingerprint = backend.fingerprint()
    keys: list[str] = []
    pending: list[tuple[str, Any, Item]] = []
    n_cached = 0
    for q in part.itertuples(index=False):
        desc = descriptions.get(q.image_id) if spec.description_by is not None else None
        no_description = spec.description_by is not None and desc is None
        prompt = "" if no_description else prompts.question_prompt(setting, q.question, desc)
        # a backend that never sees the image answers per question (a seeded table, a cross-fitted fold)
        image_part = image_hashes.get(q.image_id) if backend.supports_images else f"qid:{q.qid}"
        key = cache_key(fingerprint, setting, prompts.version, prompt, image_part, q.question)
        keys.append(key)
        if no_description:  # recorded as failed, re-asked on the next run
            failure = Answer(error="no description (the describer failed)")
            store.append([_record(key, q, backend, setting, prompts, failure)], sync=False)
        elif key in store:
            n_cached += 1
        else:
            item = Item(qid=q.qid, image_id=q.image_id, image_path=image_paths.get(q.image_id), prompt=prompt,
                        question=q.question, category=q.category)
            pending.append((key, q, item))

    if pending:  # baselines train or seed on the whole table (not the shard); skipped when all is cached
        backend.prepare(questions)

    batches: list[list[tuple[str, Any, Item]]] = []
    if backend.batch_by_image:
        for item in pending:
            if batches and batches[-1][0][1].image_id == item[1].image_id:
                batches[-1].append(item)
            else:
                batches.append([item])
    else:
        batches = [pending[i : i + batch_size] for i in range(0, len(pending), batch_size)]

    n_asked = n_failed = 0
    cost = 0.0
    bar = tqdm(total=len(part), initial=n_cached, desc=f"predict[{backend.name}/{setting}]", unit="q",
               disable=not progress)
    try:
        for batch in batches:
            def on_answer(i: int, ans: Answer, batch=batch) -> None:
                nonlocal n_asked, n_failed, cost
                key, q, _ = batch[i]
                store.append([_record(key, q, backend, setting, prompts, ans)], sync=False)
                n_asked += 1
                n_failed += bool(ans.error)
                cost += ans.cost_usd
                bar.update(1)

            try:
                backend.answer([it for _, _, it in batch], on_answer=on_answer)
            finally:
                store.sync()
            st = backend.stats()
            bar.set_postfix(cached=n_cached, failed=n_failed, retries=st.get("retries", 0),
                            cost=f"${st.get('cost_usd', cost):.4f}", refresh=False)
    finally:
        bar.close()
        store.close()

    records = []
    for key, q in zip(keys, part.itertuples(index=False)):
        rec = store.get(key) or store.record(key)
        if rec is None:  # cannot happen unless the backend broke its contract
            raise RuntimeError(f"question {q.qid}: no answer recorded")
        records.append({**rec, "qid": q.qid, "model": backend.name, "setting": setting})
    preds = records_to_predictions(records)
    run_info = backend.run_info()
    if run_info:  # travels with the table: Parquet keeps DataFrame.attrs
        preds.attrs["run_info"] = run_info
    return RunResult(
        predictions=preds,
        n_questions=len(part),
        n_cached=n_cached,
        n_asked=n_asked,
        n_failed=int((preds["error"] != "").sum()),
        cost_usd=cost,
        elapsed_s=time.perf_counter() - t_start,
        backend_stats=backend.stats(),
        run_info=run_info,
    )


def merge_shards(questions: pd.DataFrame, shard_tables: list[pd.DataFrame], where: list[str] | None = None) -> pd.DataFrame:
    """Concatenate shard prediction tables into question order; every qid exactly once."""
    if not shard_tables:
        raise RecordError("merge: no shard tables given")
    frame = pd.concat(shard_tables, ignore_index=True)
    dup = frame["qid"].duplicated()
    if dup.any():
        raise RecordError(f"merge: qid {frame['qid'][dup].iat[0]!r} appears in more than one shard")
    known = set(questions["qid"])
    extra = [q for q in frame["qid"] if q not in known]
    if extra:
        raise RecordError(f"merge: qid {extra[0]!r} is not in the question table")
    missing = [q for q in questions["qid"] if q not in set(frame["qid"])]
    if missing:
        raise RecordError(f"merge: {len(missing)} question(s) have no prediction, e.g. qid {missing[0]!r}")
    order = {q: i for i, q in enumerate(questions["qid"])}
    frame = frame.assign(_o=frame["qid"].map(order)).sort_values("_o").drop(columns="_o")
    return frame.reset_index(drop=True)[list(PREDICTION_COLUMNS)]


def write_predictions_table(frame: pd.DataFrame, path: str | Path) -> None:
    write_parquet(frame[list(PREDICTION_COLUMNS)], path)
