"""Where a run's answers go: onto the store's disk the moment they arrive, into memory only when it is full.

One object owns a run's answer-store file, the answers received but not yet on
disk, and the counts, so the disk-full path is in one place (the cache-aside
shape of lmms-eval's ``ResponseCache.execute``: the run loop asks only what the
store lacks, and :meth:`AnswerSink.execute` puts every answer the backend gives
into the store as it comes). An answer counts (progress bar, ``asked``) only
once it is on disk. When the disk fills, the backend is told to start nothing
new; the answers still in flight are kept until :meth:`AnswerSink.stop_if_disk_full`
writes them into the store's freed reserve and stops the run with exit 3.
"""

from __future__ import annotations

import json
import sys
from typing import Callable, Sequence

from probmed.core.errors import DiskFullError
from probmed.inference.answer_record import StoreRecord
from probmed.inference.answer_store import AnswerStore
from probmed.inference.models.base import NOT_ASKED, Answer, Backend, Item


class AnswerSink:
    """A run's answer-store file, what could not be written yet, and the counts of what was."""

    def __init__(self, store: AnswerStore, backend: Backend, on_written: Callable[[int], object] = lambda n: None):
        self.store = store
        self.backend = backend  # asked to stop starting requests when the disk fills
        self.on_written = on_written  # called with the number of answers each write put on disk
        self.asked = 0  # answers on disk
        self.failed = 0  # of them, answers recorded as failed
        self.cost = 0.0  # of every answer received, written or not
        self.unwritten: list[StoreRecord] = []  # received, not on disk (disk full)
        self.disk_error = ""

    def put(self, records: Sequence[StoreRecord]) -> None:
        """Append `records` in one write; once the disk is full, keep them (and all later ones) in memory."""
        if not records:
            return
        if self.unwritten:
            self.unwritten.extend(records)
            return
        try:
            self.store.append([rec.to_line() for rec in records], sync=False)
        except DiskFullError as exc:
            self.unwritten.extend(records)
            self._disk_full(exc)
            return
        self.asked += len(records)
        self.failed += sum(bool(rec.error) for rec in records)
        self.on_written(len(records))

    def sync(self) -> None:
        """One fsync for what was appended since the last (unless the disk is already full)."""
        if self.disk_error:
            return
        try:
            self.store.sync()
        except DiskFullError as exc:
            self._disk_full(exc)

    def _disk_full(self, exc: DiskFullError) -> None:
        self.disk_error = str(exc)
        self.backend.request_stop()

    def execute(self, items: Sequence[Item], to_record: Callable[[int, Answer], StoreRecord], together: bool) -> None:
        """Ask the backend `items` and store each answer (`to_record(i, answer)`): as it arrives, or, `together`,
        all of the batch in one append (the questions of one image); then one fsync, also after a failure."""
        received: list[StoreRecord] = []

        def on_answer(i: int, ans: Answer) -> None:
            if ans.extra.get(NOT_ASKED):
                return
            self.cost += ans.cost_usd
            if together:
                received.append(to_record(i, ans))
            else:  # answers of many images arriving one by one (an API): each on disk as it comes
                self.put([to_record(i, ans)])

        try:
            self.backend.answer(list(items), on_answer=on_answer)
        finally:
            self.put(received)
            self.sync()

    def stop_if_disk_full(self, remaining: Callable[[], list[str]], kind: tuple[str, str] = ("answers", "question")
                          ) -> None:
        """The disk filled: write what was received into the freed reserve, then raise DiskFullError (exit 3)
        saying what is on disk and what (`remaining()`, asked after the write) is left; `kind` names what is
        stored and what is asked (answers / question, descriptions / image)."""
        if not self.disk_error:
            return
        stored, asked = kind
        n = len(self.unwritten)
        self.store.release_reserve()
        lost: list[StoreRecord] = []
        try:
            self.store.append([rec.to_line() for rec in self.unwritten], sync=True)
        except DiskFullError:
            lost = self.unwritten
            for rec in lost:  # last resort: the answers go to stderr rather than nowhere
                print(json.dumps(rec.to_line(), ensure_ascii=False), file=sys.stderr)
        left = remaining()
        saved = (f"all {self.asked + n} {stored} received are on disk ({n} written into the space the store keeps "
                 "in reserve)") if not lost else (f"{len(lost)} {stored} received could not be written and were "
                                                 "printed to stderr as JSON lines")
        example = f", e.g. {', '.join(left[:3])}" if left else ""
        raise DiskFullError(f"{self.disk_error}: {saved}; {len(left)} {asked}(s) remain to ask{example}; "
                            "free space and re-run (only those are asked)")
