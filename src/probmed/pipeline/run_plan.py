"""The pipeline's evaluations at once, from one process, written where `dvc repro` writes them (`probmed run-plan`).

Why the stages' own commands: dvc.yaml states where each evaluation's question table, answer store, prediction
table and scores live (a `predict` or `predict-described` stage per entry of ``pipeline.runs`` /
``pipeline.described_runs``). :func:`load_plan` reads those commands as DVC resolves them, so the runner runs
exactly what `dvc repro` would run, and the layout is stated once, in dvc.yaml.

:func:`run_concurrently` runs one evaluation per thread of this process: each thread is its store's one
writer (the run loop of probmed.inference.predict), its questions answered wherever the engine sends them
(`probmed run-plan` sends them to Ray tasks). An evaluation that fails leaves the others running; every
answer received is stored either way.

DVC: prediction tables and scores are the bytes the stage writes; an answer store's need not be (answers are
appended as they arrive, and tasks on a cluster come back in an order of their own), so `dvc status` may
report a stage whose answers were asked here as changed until `dvc commit` (:func:`commit`) records its
outputs, exactly as `dvc repro` records what a stage's command wrote.
"""

from __future__ import annotations

import fnmatch
import shlex
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from probmed.core.errors import ConfigError, ProbmedError, UserError
from probmed.infra.stopping import Stopped

COMMAND = ("probmed", "predict")  # the command of an evaluation's stage


@dataclass(frozen=True)
class PlanStage:
    """One evaluation's DVC stage: its name (``predict@<run>``), the run's name, its command line, what it reads
    and writes (paths relative to the repository; outputs with whether DVC keeps them across runs)."""

    stage: str
    run: str
    argv: tuple[str, ...]
    deps: tuple[str, ...]
    outs: tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class Plan:
    """The evaluation stages of dvc.yaml in its order, and which stage writes each output of the pipeline."""

    root: Path
    stages: tuple[PlanStage, ...]
    producers: dict[str, str] = field(default_factory=dict)

    def select(self, patterns: Sequence[str]) -> list[PlanStage]:
        """The stages whose run name matches a pattern (``probmed-tiny-*``), in plan order; every stage without
        patterns. A pattern that matches nothing is an error naming the runs there are."""
        if not patterns:
            return list(self.stages)
        names = [s.run for s in self.stages]
        for pattern in patterns:
            if not fnmatch.filter(names, pattern):
                raise ConfigError(f"no run of pipeline.runs or pipeline.described_runs matches {pattern!r}; "
                                  f"the runs: {', '.join(names)}")
        return [s for s in self.stages if any(fnmatch.fnmatchcase(s.run, p) for p in patterns)]

    def check_ready(self, stages: Sequence[PlanStage]) -> None:
        """Every input of the selected stages exists; a missing one names the stage that makes it."""
        for stage in stages:
            for dep in stage.deps:
                if not (self.root / dep).exists():
                    maker = self.producers.get(dep)
                    how = f"`dvc repro {maker}`" if maker else "it is no stage's output"
                    raise UserError(f"{stage.stage} reads {dep}, which is missing: make it first ({how})")

    def clear_outputs(self, stage: PlanStage) -> None:
        """Remove what `dvc repro` removes before running the stage: its outputs not marked ``persist``."""
        for path, persist in stage.outs:
            target = self.root / path
            if persist or not target.exists():
                continue
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()


def load_plan(root: str | Path = ".") -> Plan:
    """The evaluation stages of the DVC project at `root` (each stage whose command is ``probmed predict``)."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo
    from dvc.stage import PipelineStage

    root = Path(root)
    stages: list[PlanStage] = []
    producers: dict[str, str] = {}
    try:
        with Repo(str(root)) as repo:
            for stage in repo.index.stages:
                if not isinstance(stage, PipelineStage) or not stage.cmd:  # data.dvc: fetched, not made
                    continue
                for out in stage.outs:
                    producers[str(out.def_path)] = stage.name
                argv = tuple(shlex.split(stage.cmd))
                if argv[: len(COMMAND)] != COMMAND:
                    continue
                run = stage.name.partition("@")[2] or stage.name
                stages.append(PlanStage(stage.name, run, argv, tuple(str(d.def_path) for d in stage.deps),
                                        tuple((str(o.def_path), bool(o.persist)) for o in stage.outs)))
    except DvcException as exc:
        raise ConfigError(f"dvc.yaml of {root.resolve()} could not be read: {exc}") from None
    if not stages:
        raise ConfigError(f"dvc.yaml of {root.resolve()} has no stage whose command is `probmed predict`")
    return Plan(root, tuple(stages), producers)


@dataclass
class Outcome:
    """How one evaluation ended: the exit code `probmed predict` would have had, its summary, or its error."""

    run: str
    code: int
    summary: dict[str, Any] | None = None
    error: str = ""
    seconds: float = 0.0


Evaluation = Callable[[], tuple[dict[str, Any], int]]  # runs one evaluation: (its summary, its exit code)


def run_concurrently(jobs: Sequence[tuple[str, Evaluation]], on_done: Callable[[Outcome], None],
                     at_once: int = 0) -> list[Outcome]:
    """Run every job in a thread of its own, at most `at_once` at a time (0: all); `on_done` hears each as it
    ends. A job that raises a ProbmedError or is stopped ends with that exit code, the others go on; any other
    exception (a bug) is raised once every job has ended."""
    slots = threading.Semaphore(at_once if at_once > 0 else max(len(jobs), 1))
    outcomes: dict[str, Outcome] = {}
    bugs: list[BaseException] = []
    told = threading.Lock()

    def work(run: str, job: Evaluation) -> None:
        with slots:
            t0 = time.perf_counter()
            try:
                summary, code = job()
                outcome = Outcome(run, code, summary)
            except (ProbmedError, Stopped) as exc:
                outcome = Outcome(run, exc.exit_code, error=" ".join(str(exc).split()))
            except BaseException as exc:  # noqa: BLE001 - re-raised below, once the other evaluations have ended
                bugs.append(exc)
                outcome = Outcome(run, 4, error=f"internal error: {type(exc).__name__}: {exc}")
            outcome.seconds = time.perf_counter() - t0
            with told:
                outcomes[run] = outcome
                on_done(outcome)

    threads = [threading.Thread(target=work, args=job, name=f"run-plan:{job[0]}", daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if bugs:
        raise bugs[0]
    return [outcomes[run] for run, _ in jobs]


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """The plan's exit code: the first failed evaluation's (plan order), else 0."""
    return next((o.code for o in outcomes if o.code), 0)


def commit(root: str | Path, stages: Sequence[str]) -> None:
    """`dvc commit` the stages: their dependencies, params and outputs recorded in dvc.lock as they are now, as
    `dvc repro` records them after running a stage's command."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    try:
        with Repo(str(root)) as repo:
            for stage in stages:
                repo.commit(stage, force=True)
    except DvcException as exc:
        raise ConfigError(f"dvc commit {' '.join(stages)} failed: {exc}") from None
