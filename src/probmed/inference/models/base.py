"""One small backend interface: every model backend answers a batch of items the same way.

Every backend answers a batch of (image, prompt) items and reports each answer
through a callback the moment it has it, so the run loop can put it on disk
before anything else can go wrong. A backend is built from its typed config
(`config_class`, see models.config); `fingerprint()`, the model's part of the
answer-store key, is derived from that config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

from probmed.inference.models.config import BackendConfig
from probmed.infra.process import STOP

if TYPE_CHECKING:  # only an annotation here: checking a model's config must not import pandas
    import pandas as pd


@dataclass(frozen=True)
class Item:
    """One question to ask: the rendered prompt plus the image it is about."""

    qid: str
    image_id: str
    image_path: Path | None
    prompt: str
    question: str
    category: str = ""
    task: str = "answer"  # "answer": a yes/no question; "describe": free text about the image
    max_new_tokens: int | None = None  # None: the backend's own default


@dataclass
class Answer:
    """One backend answer. `label` is set only when the backend knows better than the parser
    (logit mode, refusals signalled by the API); `error` is non-empty when it gave up."""

    response: str = ""
    label: str | None = None
    p_yes: float | None = None
    latency_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


AnswerCallback = Callable[[int, Answer], None]
NOT_ASKED = "not_asked"  # Answer.extra flag: the backend stopped before asking this item


def not_asked() -> Answer:
    """The placeholder answer of an item the backend never asked because the run was stopping."""
    return Answer(error="not asked (the run was stopping)", extra={NOT_ASKED: True})


class Backend:
    """Base class: subclasses implement `_answer` (synchronous) or override `answer`."""

    kind: str = "base"
    config_class: ClassVar[type[BackendConfig]] = BackendConfig
    supports_images: bool = True  # False: a blind baseline; settings that describe images make no sense
    batch_by_image: bool = True  # True: the run loop hands over the questions of one image at a time
    batch_size: int | None = None  # otherwise this many at a time (None: predict.batch_size; the Ray engine: more)
    sends_system_prompt: bool = False  # True: settings.system_prompt reaches the model, so it is keyed

    def __init__(self, name: str, cfg: Mapping[str, Any], context: Mapping[str, Any] | None = None):
        self.name = name
        self.config = self.config_class.from_entry(name, cfg)  # unknown or mistyped keys stop here
        self.context = dict(context or {})  # run-wide values: seed, pricing table, system prompt
        self._fingerprint: dict[str, Any] | None = None

    def fingerprint(self) -> dict[str, Any]:
        """Everything that can change an answer (no secrets): the config's answer fields and the
        content hashes of local weights (computed once), plus the system prompt where it is sent."""
        if self._fingerprint is None:
            key = self.config.answer_key(self.kind)
            if self.sends_system_prompt:
                key["system_prompt"] = self.context.get("system_prompt")
            self._fingerprint = key
        return self._fingerprint

    def fingerprints(self) -> list[dict[str, Any]]:
        """`fingerprint()`, then any this model's answers were stored under before (read, never written)."""
        return [self.fingerprint()]

    def prepare(self, questions: pd.DataFrame) -> None:
        """Called once with the whole question table before any answer (baselines train or seed here)."""

    def answer(self, items: list[Item], on_answer: AnswerCallback | None = None) -> list[Answer]:
        if self.stop_requested:
            answers = [not_asked() for _ in items]
        else:
            answers = self._answer(items)
        if on_answer is not None:
            for i, ans in enumerate(answers):
                on_answer(i, ans)
        return answers

    def _answer(self, items: list[Item]) -> list[Answer]:
        raise NotImplementedError

    def run_info(self) -> dict[str, Any]:
        """Facts about how this backend answered that belong with the run's predictions (JSON-ready)."""
        return {}

    def stats(self) -> dict[str, Any]:
        """Counters for the progress bar (retries, cost so far, requests)."""
        return {}

    def redact(self, text: str) -> str:
        """`text` with any secret this backend holds removed (API backends override it)."""
        return text

    _stop: bool = False

    @property
    def stop_requested(self) -> bool:
        """True once the run must ask nothing new (disk full, or the parent process is gone)."""
        return self._stop or STOP.is_set()

    def request_stop(self) -> None:
        """Ask no more: answers in flight still arrive, items not yet started come back as
        ``Answer(extra={"not_asked": True})`` (the run loop can no longer store answers, e.g. disk full)."""
        self._stop = True

    def close(self) -> None:
        """Release models, clients and event loops."""
