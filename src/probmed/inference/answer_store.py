"""The resumable answer store: JSON Lines, appended and flushed the moment answers arrive.

Model answers cost time or money, so none may ever be lost or paid for twice.
Each answer is one line keyed by a hash of everything that can change it (see
:func:`cache_key`); a re-run skips stored keys, a killed run resumes, and
changing one parameter re-asks only the affected questions. A store is a
directory of ``*.jsonl`` files: each process (shard) appends to its own file,
readers take the union. Answers recorded as failed are kept for the record but
re-asked on the next run.

A writer (``writer=True``, or the first ``append``) holds an exclusive lock on
its file for its whole life (``.<file>.lock`` beside it, holding the pid): a
second writer on the same file stops with an error naming that pid, or waits
when asked (``lock_wait_s``), so two processes never ask the same questions.
Writers of one store also agree on how its questions are split
(:mod:`probmed.inference.store_lock`): the shards of one ``--shard i/N`` write
together, a run split another way (unsharded beside ``--shard 0/2``) is refused
the same way, since the questions the two share would be paid for twice.

Every line is validated on load and on write against the answer record
(:func:`probmed.inference.answer_record.validate_line`). A writer moves a
bad line (not JSON, not an object, a wrong type, an unknown label) into the
side file ``<file>.quarantine`` (JSON lines: file, line number, reason, the
text) and out of the store, so its question is asked again and the bad text is
kept for inspection; a reader skips it. When a file's last line has no newline
(a write cut by a kill), a complete, valid record is kept (the newline is
added) and a partial one is cut.

Appends go through one ``write`` on an ``O_APPEND`` descriptor; a failed write
(disk full) is cut back so the file never holds half a line, and raises
:class:`~probmed.core.errors.DiskFullError`. A writer keeps ``reserve_bytes``
of disk allocated beside the store (``.<file>.reserve``): released when the
disk fills, it leaves room for the answers still in flight.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from probmed.core.errors import DiskFullError, StoreLockedError
from probmed.inference.answer_record import TIMING_FIELDS, validate_line
from probmed.inference.store_lock import ShardingLock, sharding_of
from probmed.infra.clock import work_log_path
from probmed.infra.filelock import FileLock

if TYPE_CHECKING:
    from probmed.core.params_schema import Predict

log = logging.getLogger(__name__)

STORE_FORMAT = 1
QUARANTINE_SUFFIX = ".quarantine"
TIMES_SUFFIX = ".times.jsonl"
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def stable_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of `obj` (sorted keys, no whitespace)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def file_hash(path: str | Path) -> str:
    """sha256 of a file's bytes, memoised by (path, size, mtime): a changed file is hashed again."""
    st = os.stat(path)
    return _file_hash(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=1 << 16)
def _file_hash(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cache_key(
    fingerprint: Mapping[str, Any],
    setting: str,
    prompt_version: str,
    prompt: str,
    image_hash: str | None,
    question: str,
) -> str:
    """The answer-store key: backend fingerprint (backend, model id, revision, adapter,
    generation parameters), setting, prompt template version, the rendered prompt
    (which holds any description), image content hash and question text."""
    return stable_hash(
        {
            "store": STORE_FORMAT,
            "fingerprint": dict(fingerprint),
            "setting": setting,
            "prompt_version": prompt_version,
            "prompt": prompt,
            "image": image_hash,
            "question": question,
        }
    )


def cache_keys(fingerprints: Sequence[Mapping[str, Any]], *question: Any) -> Iterator[str]:
    """:func:`cache_key` of one question (`question`: its arguments after the fingerprint) under each fingerprint,
    lazily: today's first, then those older stores were keyed by (Backend.fingerprints)."""
    return (cache_key(fingerprint, *question) for fingerprint in fingerprints)


def parse_line(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None) for a valid line, (None, reason) otherwise."""
    try:
        rec = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg})"
    except RecursionError:
        return None, "JSON nested too deeply"
    reason = validate_line(rec)
    return (None, reason) if reason else (rec, None)


def encode_records(records: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], bytes]:
    """Records (validated) and their JSON lines as UTF-8; a lone surrogate becomes U+FFFD."""
    out, lines = [], []
    for rec in records:
        rec = dict(rec)
        reason = validate_line(rec)
        if reason:
            raise ValueError(f"answer record {rec.get('key')!r}: {reason}")
        line = json.dumps(rec, ensure_ascii=False, sort_keys=True)
        if _SURROGATE.search(line):  # not encodable as UTF-8: store (and keep) U+FFFD instead
            line = _SURROGATE.sub("\ufffd", line)
            rec = json.loads(line)
        out.append(rec)
        lines.append(line + "\n")
    return out, "".join(lines).encode("utf-8")


def timing_log_dir(store_dir: Path) -> Path:
    """Where a store's timing logs go: ``build/logs/<its folder below build>/`` (``logs/<folder>`` beside it
    elsewhere), never inside the store, which is a DVC output that must not change with the clock."""
    return work_log_path(store_dir).with_name(store_dir.name)


def split_timing(rec: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A record as its store line (no :data:`TIMING_FIELDS`) and its timing-log line (None without timings)."""
    line = {k: v for k, v in rec.items() if k not in TIMING_FIELDS}
    timing = {k: rec[k] for k in TIMING_FIELDS if k in rec}
    return line, ({"key": rec.get("key"), **timing} if timing else None)


def read_timings(store_dir: Path) -> dict[str, dict[str, Any]]:
    """Each key's latest timing (``latency_s``, ``time``) from every timing log of a store ({} without logs).
    A timing is not an answer: an unreadable line is skipped."""
    timings: dict[str, dict[str, Any]] = {}
    folder = timing_log_dir(store_dir)
    for path in sorted(folder.glob(f"*{TIMES_SUFFIX}")) if folder.is_dir() else []:
        for raw in path.read_bytes().splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and isinstance(line.get("key"), str):
                timings[line["key"]] = {k: line[k] for k in TIMING_FIELDS if k in line}
    return timings


def with_timings(records: Iterable[dict[str, Any]], timings: Mapping[str, Mapping[str, Any]]) -> None:
    """Give each record read from a store its timing, where its line does not hold one (in place)."""
    for rec in records:
        for k, v in timings.get(rec["key"], {}).items():
            rec.setdefault(k, v)


def repair_tail(path: Path) -> None:
    """A last line without its newline: a complete valid record keeps it (newline added), a cut one is removed."""
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return
        pos, start = size, 0
        while pos > 0:  # find the last newline
            lo = max(0, pos - 65536)
            fh.seek(lo)
            idx = fh.read(pos - lo).rfind(b"\n")
            if idx >= 0:
                start = lo + idx + 1
                break
            pos = lo
        fh.seek(start)
        tail = fh.read()
        rec, _ = parse_line(tail)
        if rec is not None:
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
        else:
            fh.truncate(start)
        fh.flush()
        os.fsync(fh.fileno())


def read_store_file(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(valid records, bad lines as {line, reason, text}); a last line without newline that does not parse is a
    write cut short (skipped, not bad)."""
    lines = path.read_bytes().split(b"\n")
    complete = len(lines) - 1  # the piece after the last newline is b"" or a write cut short
    good, bad = [], []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        rec, reason = parse_line(line)
        if rec is not None:
            good.append(rec)
        elif i < complete:
            bad.append({"line": i + 1, "reason": reason, "text": line.decode("utf-8", errors="replace")})
    return good, bad


def quarantine(path: Path, bad: list[dict[str, Any]]) -> None:
    """Move bad lines of `path` to `<path>.quarantine` (kept, fsynced) and rewrite `path` without them.
    The caller holds the file's writer lock."""
    side = path.with_name(path.name + QUARANTINE_SUFFIX)
    entries = "".join(
        json.dumps({"file": path.name, "line": b["line"], "reason": b["reason"], "text": b["text"],
                    "time": time.time()}, ensure_ascii=True) + "\n"
        for b in bad
    )
    with open(side, "a", encoding="utf-8") as fh:
        fh.write(entries)
        fh.flush()
        os.fsync(fh.fileno())
    drop = {b["line"] for b in bad}
    kept = [line for i, line in enumerate(path.read_bytes().split(b"\n"), start=1) if i not in drop]
    tmp = path.with_name(f".{path.name}.rewrite")
    with open(tmp, "wb") as fh:
        fh.write(b"\n".join(kept))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    for b in bad:
        log.warning("answer store %s: line %d quarantined to %s (%s); its question will be asked again",
                    path, b["line"], side.name, b["reason"])


def lock_path(path: Path) -> Path:
    """The lock file beside a store file: hidden, so listing a store folder shows only stores."""
    return path.with_name(f".{path.name}.lock")


class AnswerStore:
    """A directory of JSONL answer files; this process appends to `file_name`.

    ``writer=True`` takes the file's lock before reading (a second writer fails or waits,
    ``lock_wait_s``); a reader takes it at its first ``append``. ``reserve_bytes``: disk kept
    allocated for the answers in flight when the disk fills (writers only).
    """

    def __init__(self, directory: str | Path, file_name: str = "answers.jsonl", fsync: bool = True,
                 writer: bool = False, lock_wait_s: float | None = 0.0, reserve_bytes: int = 0,
                 shared: Iterable[Path] = ()):
        self.dir = Path(directory)
        self.shared_dirs = [Path(d) for d in shared]  # other stores of the model, read (never written) as well
        self._shared: dict[str, dict[str, Any]] = {}
        self._shared_used: dict[str, dict[str, Any]] = {}
        self.path = self.dir / file_name
        self.fsync = fsync
        self.reserve_bytes = int(reserve_bytes)
        self._records: dict[str, dict[str, Any]] = {}
        self._fd: int | None = None
        self._lock = FileLock(lock_path(self.path), f"answer store {self.path}", lock_wait_s, StoreLockedError,
                              on_wait=lambda msg: log.warning("%s", msg))
        self._sharding = ShardingLock(self.dir, sharding_of(file_name), lock_wait_s,
                                      on_wait=lambda msg: log.warning("%s", msg))
        if writer:
            self._start_writing()
        self.load()

    # --- reading ---------------------------------------------------------------------

    def load(self) -> None:
        """Read every file of the store: the first successful answer per key wins."""
        self._records = {}
        if not self.dir.exists():
            return
        for path in sorted(self.dir.glob("*.jsonl")):
            good, bad = read_store_file(path)
            if bad and self._quarantine_if_owned(path, bad):
                good, _ = read_store_file(path)
            elif bad:
                log.warning("answer store %s: %d invalid line(s) skipped (first: line %d, %s)",
                            path, len(bad), bad[0]["line"], bad[0]["reason"])
            for rec in good:
                old = self._records.get(rec["key"])
                if old is None or (old.get("error") and not rec.get("error")):
                    self._records[rec["key"]] = rec
        with_timings(self._records.values(), read_timings(self.dir))
        self._load_shared()

    def _load_shared(self) -> None:
        """The successful answers of the shared stores (the pipeline's): read as they are, never quarantined or
        repaired, since another process owns them; an invalid line there is just not used."""
        self._shared, self._shared_used = {}, {}
        for directory in self.shared_dirs:
            found: dict[str, dict[str, Any]] = {}
            for path in sorted(directory.glob("*.jsonl")):
                for rec in read_store_file(path)[0]:
                    if not rec.get("error"):
                        found.setdefault(rec["key"], rec)
            with_timings(found.values(), read_timings(directory))
            for key, rec in found.items():
                self._shared.setdefault(key, rec)

    def _quarantine_if_owned(self, path: Path, bad: list[dict[str, Any]]) -> bool:
        """Quarantine bad lines of our own file (we hold its lock) or of an idle writer's file."""
        if path == self.path:
            if not self._lock.held:
                return False
            quarantine(path, bad)
            return True
        other = FileLock(lock_path(path), f"answer store {path}", 0.0, StoreLockedError)
        try:
            other.acquire()
        except StoreLockedError:
            return False  # its writer is running and will quarantine them itself
        try:
            repair_tail(path)
            good, bad = read_store_file(path)
            if bad:
                quarantine(path, bad)
        finally:
            other.release()
        return True

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer for `key`, or None; failed answers count as absent (re-asked)."""
        rec = self.record(key)
        if rec is None or rec.get("error"):
            return None
        return rec

    def record(self, key: str) -> dict[str, Any] | None:
        """The stored record for `key` including failed ones; a shared store's answer where ours has none."""
        rec = self._records.get(key)
        if (rec is None or rec.get("error")) and key in self._shared:
            rec = self._shared_used[key] = self._shared[key]
        return rec

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def answered_key(self, keys: Iterable[str]) -> str:
        """The first of `keys` (one question's, :func:`cache_keys`) the store answers, else the first: where a
        new answer goes. Later keys are computed only while the earlier ones miss."""
        found = iter(keys)
        first = next(found)
        return first if first in self else next((key for key in found if key in self), first)

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> list[dict[str, Any]]:
        """Our records and the shared answers this run used (what it would have asked for)."""
        return list(self._records.values()) + [r for k, r in self._shared_used.items() if k not in self._records]

    # --- writing ---------------------------------------------------------------------

    def _start_writing(self) -> None:
        """Lock, repair the tail, open for appends, set the disk reserve aside."""
        if self._fd is not None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock.acquire()
        try:
            self._sharding.acquire()  # after the file's lock, whose pid a refused writer of another split is told
            if self.path.exists():
                repair_tail(self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._make_reserve()
        except BaseException:
            self.close()
            raise

    @property
    def reserve_path(self) -> Path:
        return self.path.with_name(f".{self.path.name}.reserve")

    def _make_reserve(self) -> None:
        if self.reserve_bytes <= 0:
            return
        fd = os.open(self.reserve_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, self.reserve_bytes)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                os.close(fd)
                self.reserve_path.unlink(missing_ok=True)
                raise DiskFullError(
                    f"no space for the answer store {self.path}: it keeps {self.reserve_bytes} bytes in reserve "
                    "for answers in flight; nothing was asked"
                ) from None
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise
        os.close(fd)

    def release_reserve(self) -> bool:
        """Free the disk reserve (the disk is full and answers still need writing); True if there was one."""
        if self.reserve_path.exists():
            self.reserve_path.unlink()
            return True
        return False

    def append(self, records: Iterable[Mapping[str, Any]], sync: bool = True) -> int:
        """Append records as one write (flushed; fsynced when `sync`); a failed write leaves no partial line.

        Records become visible to `get` only once written: an answer is never acknowledged before it is on disk.
        Their timings go to the store's timing log after the answers are written (:func:`split_timing`).
        """
        split = [split_timing(rec) for rec in records]
        recs, data = encode_records(line for line, _ in split)
        if not recs:
            return 0
        self._start_writing()
        assert self._fd is not None
        before = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            try:
                os.ftruncate(self._fd, before)
            except OSError:
                pass
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise DiskFullError(f"disk full writing the answer store {self.path} ({exc.strerror})") from None
            raise
        timings = [timing for _, timing in split if timing is not None]
        self._log_timings(timings)
        with_timings(recs, {t["key"]: t for t in timings})
        for rec in recs:
            old = self._records.get(rec["key"])
            if old is None or old.get("error"):  # a success is never replaced
                self._records[rec["key"]] = rec
        if sync:
            self.sync()
        return len(recs)

    def _log_timings(self, timings: list[dict[str, Any]]) -> None:
        """Append timings to this file's timing log (not fsynced; a failed write loses only timings)."""
        if not timings:
            return
        path = timing_log_dir(self.dir) / (self.path.stem + TIMES_SUFFIX)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write("".join(json.dumps(t, sort_keys=True) + "\n" for t in timings))
        except OSError as exc:
            log.warning("answer store %s: timings not logged (%s)", self.path, exc.strerror)

    def sync(self) -> None:
        """Fsync the file this process appends to (once per batch)."""
        if self._fd is not None and self.fsync:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                    raise DiskFullError(f"disk full syncing the answer store {self.path} ({exc.strerror})") from None
                raise

    def close(self) -> None:
        if self._fd is not None:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = None
        self._sharding.release()
        if self._lock.held:
            self.reserve_path.unlink(missing_ok=True)
            self._lock.release()

    def __enter__(self) -> "AnswerStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at interpreter exit
            pass


def open_store(directory: Path, file_name: str, predict: Predict) -> AnswerStore:
    """A writer on `file_name` in `directory`, kept as the ``predict:`` section says (fsync, lock wait, disk
    reserve), reading the pipeline's stores of the same model too (:func:`shared_stores`); its lock is held
    until ``close``."""
    wait = predict.lock_wait_s
    return AnswerStore(directory, file_name, fsync=predict.fsync, writer=True,
                       lock_wait_s=None if wait is None else float(wait),
                       reserve_bytes=int(float(predict.disk_reserve_mb) * 2**20),
                       shared=shared_stores(directory, predict.read_stores))


def shared_stores(directory: Path, roots: Iterable[str]) -> list[Path]:
    """Every store of the same model (a folder of the same name) below `roots` (``predict.read_stores``: the
    pipeline's answer and description folders), so a by-hand run asks nothing `dvc repro` has answered
    while writing only its own store; a store inside a root (a pipeline stage's) reads only itself, so a
    stage never depends on another stage's output."""
    here = directory.resolve()
    folders = [Path(r) for r in roots]
    if any(here.is_relative_to(root.resolve()) for root in folders):
        return []
    return sorted(d for root in folders if root.is_dir() for d in root.glob(f"**/{directory.name}")
                  if d.is_dir() and d.resolve() != here)
