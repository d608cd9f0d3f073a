"""Ray as the engine: a model's questions answered by tasks on a Ray cluster, every answer stored by this process.

Why a backend: :class:`RayBackend` stands in for the backend a ``models:`` entry builds, so the run loop
(probmed.inference.predict), the answer store, its keys, the sink and every output are those of a local run
or a ``--shard i/N`` run; only where answers are computed changes. The wrapped backend stays here for what
defines an answer (its fingerprint, the redaction of its secrets); each task builds its own copy on a worker
from the same ``models:`` entry (once per worker process) and asks for the entry's ``cpus`` and ``gpus``.

One writer: a task sends its answers back as a Ray streaming generator (an API's each as it arrives, a local
model's image by image) and this process hands each to the run loop, which appends it to the store: the
store never leaves this machine, and the images travel with the tasks (their bytes), so a worker node needs
the model (a hub id, or the same path on a shared disk) but no copy of the data.

No answer lost or paid twice: Ray would retry a task whose worker or node died by running its generator again
from the first question, asking what is already stored a second time; so tasks run with Ray's retries off,
and a lost task is resubmitted here with only the questions whose answers have not arrived (at most
``engine.ray.max_resubmits`` times). What a dying task had in flight (computed or requested, not yet
returned) is asked again: at most one image of a local model, the requests in flight of an API.
"""

from __future__ import annotations

import dataclasses
import queue
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from probmed.core.errors import ConfigError, LostTaskError, ProbmedError
from probmed.core.params_schema import RayEngine
from probmed.inference.answer_store import stable_hash
from probmed.inference.models.base import Answer, AnswerCallback, Backend, Item, not_asked
from probmed.inference.models.registry import BACKENDS
from probmed.infra.cpu_kernels import PORTABLE_ENV, portable_in_force


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker needs to build the backend of one ``models:`` entry (never a secret: keys stay in each node's
    environment)."""

    kind: str
    name: str
    entry: Mapping[str, Any]  # local directories made absolute: a worker's current directory is Ray's own
    context: Mapping[str, Any]

    @property
    def key(self) -> str:
        return stable_hash([self.kind, self.name, dict(self.entry), dict(self.context)])


@dataclass(frozen=True)
class Chunk:
    """The questions one task answers: positions in the batch the run loop handed over, the items (their
    image_path a file name in ``images``) and the images' bytes."""

    positions: tuple[int, ...]
    items: tuple[Item, ...]
    images: Mapping[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class Done:
    """A task's last message: how its backend answered (run_info)."""

    run_info: Mapping[str, Any]


def worker_spec(backend: Backend, entry: Mapping[str, Any]) -> WorkerSpec:
    """The spec of `backend`'s ``models:`` entry, every local directory of an answer field absolute."""
    entry = dict(entry)
    for f in dataclasses.fields(backend.config):
        value = entry.get(f.name)
        if f.metadata.get("hash_as") and isinstance(value, str) and Path(value).exists():
            entry[f.name] = str(Path(value).resolve())
    return WorkerSpec(backend.kind, backend.name, entry, dict(backend.context))


# per worker process: a model is loaded once, not once per task; a backend that prepares on the question table
# (a baseline trains or seeds on it) once per table, since one driver runs several evaluations (`probmed run-plan`)
_WORKER_BACKENDS: dict[tuple[str, str | None], Backend] = {}


def _worker_backend(spec: WorkerSpec, questions: Any, table: str | None) -> Backend:
    """`spec`'s backend on this worker, prepared on the question table `table` names (the driver's object id)."""
    kind = BACKENDS.load(spec.kind)
    per_table = kind.prepare is not Backend.prepare
    key = (spec.key, table if per_table else None)
    backend = _WORKER_BACKENDS.get(key)
    if backend is None:
        backend = kind(spec.name, spec.entry, spec.context)
        if questions is not None:
            backend.prepare(questions)  # baselines train or seed on the whole table, as in a local run
        _WORKER_BACKENDS[key] = backend
    return backend


def _materialise(chunk: Chunk, folder: Path) -> list[Item]:
    """The chunk's items with their images written into `folder`."""
    for name, data in chunk.images.items():
        (folder / name).write_bytes(data)
    return [item if item.image_path is None else dataclasses.replace(item, image_path=folder / item.image_path.name)
            for item in chunk.items]


def answer_chunk(spec: WorkerSpec, chunk: Chunk, questions: Any = None, table: str | None = None) -> Iterator[Any]:
    """The task (a Ray streaming generator): ``[(position, Answer), ...]`` as answers arrive, then :class:`Done`.
    `questions`: the run's whole question table (what `prepare` sees), `table` a name of it."""
    backend = _worker_backend(spec, questions, table)
    before = backend.run_info()  # a worker's backend serves many tasks: this task reports what it added
    with tempfile.TemporaryDirectory(prefix="probmed-task-") as tmp:
        items = _materialise(chunk, Path(tmp))
        if backend.batch_by_image:  # a local model: the questions of one image together
            start = 0
            while start < len(items):
                end = start + 1
                while end < len(items) and items[end].image_id == items[start].image_id:
                    end += 1
                answers = backend.answer(items[start:end])
                yield [(chunk.positions[start + i], ans) for i, ans in enumerate(answers)]
                start = end
        else:
            yield from _as_they_arrive(backend, items, chunk.positions)
    yield Done(run_info=run_info_added(backend.run_info(), before))


def _as_they_arrive(backend: Backend, items: list[Item], positions: tuple[int, ...]) -> Iterator[Any]:
    """An API's answers, each yielded the moment the backend reports it (the backend runs in a thread)."""
    arrived: queue.Queue[Any] = queue.Queue()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            backend.answer(items, on_answer=lambda i, ans: arrived.put([(positions[i], ans)]))
        except BaseException as exc:  # noqa: BLE001 - raised in the task below, where Ray reports it
            failure.append(exc)
        finally:
            arrived.put(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    while (message := arrived.get()) is not None:
        yield message
    thread.join()
    if failure:
        raise failure[0]


def _count(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def run_info_added(after: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """What a task added to its backend's run_info: counts minus the counts before (those that did not grow left
    out), other values as they are after."""
    out: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, Mapping):
            nested = run_info_added(value, old if isinstance(old, Mapping) else {})
            if nested or not value:
                out[key] = nested
        elif _count(value) and _count(old):
            if value != old:
                out[key] = value - old
        else:
            out[key] = value
    return out


def merge_run_info(infos: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One run_info from the tasks': counts added up, nested mappings merged, other values as the first task had."""
    merged: dict[str, Any] = {}
    for info in infos:
        for key, value in info.items():
            old = merged.get(key)
            if isinstance(value, Mapping) and isinstance(old, Mapping):
                merged[key] = merge_run_info([old, value])
            elif _count(value) and _count(old):
                merged[key] = old + value
            elif key not in merged:
                merged[key] = dict(value) if isinstance(value, Mapping) else value
    return merged


def chunks(items: list[Item], images_per_task: int) -> list[Chunk]:
    """The batch in tasks of `images_per_task` images each (in order; questions without an image: as many)."""
    out: list[Chunk] = []
    positions: list[int] = []
    images: list[str] = []
    for position, item in enumerate(items):
        image = item.image_id if item.image_path is not None else f"#{position}"
        if images and image != images[-1] and len(set(images)) >= images_per_task:
            out.append(_chunk(items, positions))
            positions, images = [], []
        positions.append(position)
        images.append(image)
    if positions:
        out.append(_chunk(items, positions))
    return out


def _chunk(items: list[Item], positions: list[int]) -> Chunk:
    """A chunk of these positions, each distinct image file shipped once under a name of its own."""
    names: dict[Path, str] = {}
    shipped: list[Item] = []
    for p in positions:
        item = items[p]
        if item.image_path is not None:
            path = Path(item.image_path)
            names.setdefault(path, f"{len(names)}{path.suffix}")
            item = dataclasses.replace(item, image_path=Path(names[path]))
        shipped.append(item)
    return Chunk(tuple(positions), tuple(shipped), {name: path.read_bytes() for path, name in names.items()})


class RayBackend(Backend):
    """The backend of a ``models:`` entry, its questions answered by tasks on a Ray cluster (see the module)."""

    batch_by_image = False  # the run loop stores each answer as it comes back, whatever the model

    def __init__(self, inner: Backend, entry: Mapping[str, Any], engine: RayEngine):
        self.inner = inner
        self.name = inner.name
        self.kind = inner.kind
        self.config = inner.config
        self.context = inner.context
        self.supports_images = inner.supports_images
        self.sends_system_prompt = inner.sends_system_prompt
        self.batch_size = engine.batch_questions
        self.engine = engine
        self.spec = worker_spec(inner, entry)
        self._questions_ref: Any = None
        self._infos: list[Mapping[str, Any]] = []
        self._stats = {"tasks": 0, "resubmitted": 0, "lost_tasks": 0}

    def fingerprint(self) -> dict[str, Any]:
        return self.inner.fingerprint()

    def redact(self, text: str) -> str:
        return self.inner.redact(text)

    def prepare(self, questions: Any) -> None:
        ray = connect(self.engine)
        self._questions_ref = ray.put(questions)

    def run_info(self) -> dict[str, Any]:
        return merge_run_info(self._infos)

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def close(self) -> None:
        self.inner.close()

    def _remote(self) -> Any:
        """The task with this model's resources; Ray's own retries off (see the module)."""
        ray = connect(self.engine)
        env = dict(PORTABLE_ENV) if portable_in_force() else {}  # the workers compute with this process's kernels
        options: dict[str, Any] = {"num_cpus": self.config.cpus, "num_gpus": self.config.gpus, "max_retries": 0,
                                   "num_returns": "streaming"}
        if env:
            options["runtime_env"] = {"env_vars": env}
        return ray.remote(answer_chunk).options(**options)

    def answer(self, items: list[Item], on_answer: AnswerCallback | None = None) -> list[Answer]:
        ray = connect(self.engine)
        remote = self._remote()
        answers: list[Answer | None] = [None] * len(items)
        resubmits: dict[Any, int] = {}
        running: dict[Any, Chunk] = {}

        def submit(chunk: Chunk, tries: int) -> None:
            table = None if self._questions_ref is None else self._questions_ref.hex()
            task = remote.remote(self.spec, chunk, self._questions_ref, table)
            running[task] = chunk
            resubmits[task] = tries
            self._stats["tasks"] += 1

        def deliver(position: int, ans: Answer) -> None:
            answers[position] = ans
            if on_answer is not None:
                on_answer(position, ans)

        for chunk in chunks(items, self.engine.images_per_task):
            submit(chunk, 0)
        try:
            while running:
                if self.stop_requested:
                    break
                ready, _ = ray.wait(list(running), num_returns=1, timeout=1.0)
                for task in ready:
                    self._next(ray, task, running, resubmits, answers, deliver, submit)
        finally:
            for task in running:
                ray.cancel(task)
        for position, ans in enumerate(answers):
            if ans is None:
                deliver(position, not_asked())
        return [a for a in answers if a is not None]

    def _next(self, ray: Any, task: Any, running: dict[Any, Chunk], resubmits: dict[Any, int],
              answers: list[Answer | None], deliver: Any, submit: Any) -> None:
        """Take the next message of a ready task: answers (delivered), its end, or its loss (resubmitted)."""
        chunk = running[task]
        try:
            message = ray.get(next(task))
        except StopIteration:
            del running[task]
            return
        except ray.exceptions.RayTaskError as exc:  # the backend raised: as in a local run, the run stops
            cause = exc.as_instanceof_cause()
            raise (cause if isinstance(cause, ProbmedError) else exc) from None
        except (ray.exceptions.RayError, ConnectionError) as exc:  # the worker or its node died
            del running[task]
            self._stats["lost_tasks"] += 1
            left = [i for i, p in enumerate(chunk.positions) if answers[p] is None]
            if not left:
                return
            tries = resubmits.pop(task) + 1
            if tries > self.engine.max_resubmits:
                raise LostTaskError(f"model {self.name}: a task was lost {tries} times ({type(exc).__name__}); "
                                    f"{len(left)} of its questions were not answered; the answers received are "
                                    "stored: re-run to ask only the rest") from None
            self._stats["resubmitted"] += 1
            keep = {chunk.items[i].image_path for i in left}
            submit(Chunk(tuple(chunk.positions[i] for i in left), tuple(chunk.items[i] for i in left),
                         {n: b for n, b in chunk.images.items() if Path(n) in keep}), tries)
            return
        if isinstance(message, Done):
            self._infos.append(message.run_info)
            return
        for position, ans in message:
            deliver(position, ans)


_CONNECTING = threading.Lock()  # the evaluations of `probmed run-plan` connect from threads of their own


def connect(engine: RayEngine) -> Any:
    """Ray, joined to the cluster of ``engine.address`` (a Ray instance of this process when null), once."""
    try:
        import ray
    except ImportError:
        raise ConfigError("engine.kind: ray needs Ray: pip install 'probmed[ray]'") from None
    with _CONNECTING:
        _join(ray, engine)
    return ray


def _join(ray: Any, engine: RayEngine) -> None:
    if not ray.is_initialized():
        t0 = time.perf_counter()
        try:
            ray.init(address=engine.address, log_to_driver=False, include_dashboard=False, configure_logging=False)
        except ConnectionError as exc:  # no cluster where the address says: the user's setting, not a bug
            raise ConfigError(f"engine.ray.address={engine.address}: no Ray cluster there ({exc}); start one with "
                              "`ray start --head`, or set engine.ray.address to null for a Ray instance of this "
                              "process") from None
        print(f"ray: joined {engine.address or 'local'} in {time.perf_counter() - t0:.1f} s "
              f"({ray.cluster_resources().get('CPU', 0):g} CPUs)", file=sys.stderr)


def wrap(backend: Backend, models: Mapping[str, Any], engine: RayEngine) -> RayBackend:
    """`backend` (built from ``models[backend.name]``) answered on the cluster of `engine`."""
    return RayBackend(backend, dict(models[backend.name] or {}), engine)
