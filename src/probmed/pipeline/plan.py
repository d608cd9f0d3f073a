"""The run plan: what `dvc repro` evaluates, checked before any work.

`probmed plan` is the first stage of dvc.yaml and every other stage depends on
its gate file, so an unknown or disabled model, a model key its backend does
not take, an unpinned hub checkpoint, a backend, source or setting that is not
registered, a missing question set or raw source fails `dvc repro` at once
with a message naming the params key. The gate file's content is constant, so a
change to one model's params re-runs the (cheap) plan stage but only that
model's downstream stages.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from probmed.benchmark.sources.registry import SOURCES
from probmed.core.errors import ConfigError, did_you_mean
from probmed.core.params_schema import Params
from probmed.core.settings import SETTINGS, get_setting
from probmed.inference.models.hub import pin_problem
from probmed.inference.models.registry import check_model_entries
from probmed.infra.io import write_json_atomic, write_text_atomic

GATE_TEXT = "params checked\n"
# Settings whose prompt carries settings.describer's description: their runs need the describe stage.
DESCRIBED_SETTINGS = tuple(name for name, s in SETTINGS.items() if s.description_by == "describer")


@dataclass(frozen=True)
class Evaluation:
    """One (question set, model, setting) the pipeline evaluates."""

    name: str
    question_set: str
    model: str
    setting: str


def evaluations(params: Params) -> list[Evaluation]:
    """The enabled evaluations of params ``pipeline.runs``, checked; ConfigError names the key."""
    pipeline = params.pipeline
    runs = {("runs", k): v for k, v in pipeline.runs.items()}
    runs.update({("described_runs", k): v for k, v in pipeline.described_runs.items()})
    if not runs:
        raise ConfigError("params: 'pipeline.runs' is missing or empty (nothing to evaluate)")
    question_sets = params.datasets.question_sets
    check_model_entries(params.models)
    out = []
    for (group, name), run in runs.items():
        key = f"pipeline.{group}.{name}"
        for field in ("question_set", "model", "setting"):
            if not getattr(run, field):
                raise ConfigError(f"params: {key}.{field} is missing")
        qset, model, setting = run.question_set, run.model, run.setting
        if qset not in question_sets:
            raise ConfigError(
                f"params: {key}.question_set = {qset!r} is not a dataset; "
                f"datasets.question_sets defines: {', '.join(sorted(question_sets)) or 'nothing'}"
            )
        external = get_setting(setting, f"{key}.setting").description_by == "describer"
        if external != (group == "described_runs"):
            raise ConfigError(
                f"params: {key}.setting = {setting!r}: runs whose setting takes settings.describer's description "
                f"({', '.join(DESCRIBED_SETTINGS)}) go under pipeline.described_runs, the others under pipeline.runs"
            )
        check_model(params.models, model, f"{key}.model")
        expected = f"{qset}-{model}-{setting}"
        if name != expected:
            raise ConfigError(f"params: {key} should be named {expected!r} (stage and file names follow it)")
        out.append(Evaluation(name, qset, model, setting))
    _check_described(params, out)
    return out


def _check_described(params: Params, planned: list[Evaluation]) -> None:
    """The described runs have a describer and descriptions of their question set; pipeline.describe names sets."""
    if any(e.setting in DESCRIBED_SETTINGS for e in planned):
        describer = params.settings.describer
        if not describer:
            raise ConfigError("params: settings.describer is missing (needed by the 'described' runs)")
        check_model(params.models, describer, "settings.describer")
        for ev in planned:
            if ev.setting in DESCRIBED_SETTINGS and ev.question_set not in params.pipeline.describe:
                raise ConfigError(
                    f"params: pipeline.described_runs.{ev.name} needs descriptions of {ev.question_set!r}: "
                    f"add it to pipeline.describe"
                )
    for name in params.pipeline.describe:
        if name not in params.datasets.question_sets:
            raise ConfigError(f"params: pipeline.describe lists {name!r}, not in datasets.question_sets")


def check_model(models: Mapping[str, Any], name: str, key: str) -> None:
    """Known, enabled and (a hub checkpoint) pinned in params ``models``; the message names the key that
    refers to it."""
    if name not in models:
        raise ConfigError(
            f"params: {key} = {name!r} is not a model{did_you_mean(name, models)}; "
            f"'models' defines: {', '.join(sorted(models))}"
        )
    entry = models[name] or {}
    if not entry.get("enabled", True):
        raise ConfigError(f"params: {key} = {name!r} is disabled; enable it with models.{name}.enabled=true")
    problem = pin_problem(name, entry)
    if problem:
        raise ConfigError(f"params: {key} = {name!r}: {problem}")


def check_datasets(params: Params, root: str | Path = ".") -> None:
    """Every question set names a known kind and its raw sources exist under paths.data."""
    question_sets, sources = params.datasets.question_sets, params.datasets.sources
    if not question_sets:
        raise ConfigError("params: 'datasets.question_sets' is missing or empty")
    data_dir = Path(root) / params.paths.data
    for name, qset in question_sets.items():
        for source in qset.sources:
            if source not in sources:
                raise ConfigError(
                    f"params: datasets.question_sets.{name}.sources lists {source!r}, "
                    f"not in datasets.sources ({', '.join(sorted(sources))})"
                )
    for name, entry in sources.items():
        SOURCES.check(name, f"datasets.sources.{name}")
        path = data_dir / (entry.dir or name)
        if not path.is_dir():
            raise ConfigError(
                f"params: datasets.sources.{name}: raw data {path} not found (run `probmed fetch-data` first)"
            )


def write_plan(params: Params, out_dir: str | Path, root: str | Path = ".") -> dict[str, Any]:
    """Check everything, then write the constant gate file and the resolved plan (for people)."""
    plan = {"evaluations": [e.__dict__ for e in evaluations(params)]}  # params first, then the filesystem
    check_datasets(params, root)
    out = Path(out_dir)
    write_json_atomic(plan, out / "plan.json")
    write_text_atomic(GATE_TEXT, out / "gate")
    return plan
