"""The resumable answer store: JSON Lines, appended and flushed the moment answers arrive.

Model answers cost time or money, so none may ever be lost. Each answer is one
line keyed by a hash of everything that can change it (see :func:`cache_key`);
a re-run skips stored keys, a killed run resumes, and changing one parameter
re-asks only the affected questions. A store is a directory of ``*.jsonl``
files: each process (shard) appends to its own file, readers take the union.
A line cut short by a kill is dropped when the file is next opened; answers
recorded as failed are kept for the record but re-asked on the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

STORE_FORMAT = 1


def stable_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of `obj` (sorted keys, no whitespace)."""
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def file_hash(path: str | Path, _cache: dict[tuple[str, int, int], str] = {}) -> str:  # noqa: B006
    """sha256 of a file's bytes, memoised by (path, size, mtime) for the life of the process."""
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _cache:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _cache[key] = h.hexdigest()
    return _cache[key]


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


def _repair_tail(path: Path) -> None:
    """Cut a trailing partial line (a write interrupted by a kill) so appends start clean."""
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb+") as fh:
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return
        # find the last newline
        pos = size
        block = 4096
        while pos > 0:
            start = max(0, pos - block)
            fh.seek(start)
            chunk = fh.read(pos - start)
            idx = chunk.rfind(b"\n")
            if idx >= 0:
                fh.truncate(start + idx + 1)
                return
            pos = start
        fh.truncate(0)


def iter_store_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Records of one store file; a malformed *last* line (cut by a kill) is skipped."""
    with open(path, "r", encoding="utf-8") as fh:
        lines = fh.readlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines) - 1 and not line.endswith("\n"):
                continue
            raise ValueError(f"answer store {path}: line {i + 1} is not valid JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or "key" not in rec:
            raise ValueError(f"answer store {path}: line {i + 1} has no 'key' field")
        yield rec


class AnswerStore:
    """A directory of JSONL answer files; this process appends to `file_name`."""

    def __init__(self, directory: str | Path, file_name: str = "answers.jsonl", fsync: bool = True):
        self.dir = Path(directory)
        self.path = self.dir / file_name
        self.fsync = fsync
        self._records: dict[str, dict[str, Any]] = {}
        self._fh = None
        self.load()

    def load(self) -> None:
        """Read every file of the store: the first successful answer per key wins."""
        self._records = {}
        if not self.dir.exists():
            return
        for path in sorted(self.dir.glob("*.jsonl")):
            for rec in iter_store_lines(path):
                old = self._records.get(rec["key"])
                if old is None or (old.get("error") and not rec.get("error")):
                    self._records[rec["key"]] = rec

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer for `key`, or None; failed answers count as absent (re-asked)."""
        rec = self._records.get(key)
        if rec is None or rec.get("error"):
            return None
        return rec

    def record(self, key: str) -> dict[str, Any] | None:
        """The stored record for `key` including failed ones."""
        return self._records.get(key)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return len(self._records)

    def records(self) -> list[dict[str, Any]]:
        return list(self._records.values())

    def _open(self):
        if self._fh is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                _repair_tail(self.path)
            self._fh = open(self.path, "a", encoding="utf-8")
        return self._fh

    def append(self, records: Iterable[Mapping[str, Any]], sync: bool = True) -> int:
        """Append records as one write, flushed before returning (and fsynced when `sync`)."""
        lines = []
        for rec in records:
            rec = dict(rec)
            if "key" not in rec:
                raise ValueError("answer record without 'key'")
            lines.append(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
            old = self._records.get(rec["key"])
            if old is None or old.get("error"):  # a success is never replaced
                self._records[rec["key"]] = rec
        if not lines:
            return 0
        fh = self._open()
        fh.write("".join(lines))
        fh.flush()
        if sync:
            self.sync()
        return len(lines)

    def sync(self) -> None:
        """fsync the file this process appends to (once per batch)."""
        if self._fh is not None and self.fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> "AnswerStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
