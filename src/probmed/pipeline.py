"""What the DVC pipeline needs that belongs to no single stage: the run plan and the data fetch.

The plan is checked before any work: `probmed plan` is the first stage of
dvc.yaml and every other stage depends on its gate file, so an unknown model, a
missing question set or an invalid setting fails `dvc repro` at once with a
message naming the params key. The gate file's content is constant, so a change
to one model's params re-runs the (cheap) plan stage but only that model's
downstream stages.

The data fetch gets the pinned raw inputs (data.dvc) into ``data/`` and the DVC
cache: from a configured DVC remote when there is one (``dvc pull``), else by
re-importing from the recorded source (``dvc update``) or another copy of it,
and in every case checks the result against the hash data.dvc pins.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from omegaconf import OmegaConf

from probmed.benchmark.sources.registry import SOURCES
from probmed.core.errors import ConfigError, FetchError
from probmed.core.settings import SETTINGS, get_setting
from probmed.inference.models.hub import pin_problem
from probmed.inference.models.registry import check_model_entries

if TYPE_CHECKING:
    import pandas as pd

GATE_TEXT = "params checked\n"
# Settings whose prompt carries settings.describer's description: their runs need the describe stage.
DESCRIBED_SETTINGS = tuple(name for name, s in SETTINGS.items() if s.description_by == "describer")



# --- the run plan -----------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """One (question set, model, setting) the pipeline evaluates."""

    name: str
    question_set: str
    model: str
    setting: str


def evaluations(cfg: Mapping[str, Any]) -> list[Evaluation]:
    """The enabled evaluations of params ``pipeline.runs``, checked; ConfigError names the key."""
    pipeline = cfg.get("pipeline") or {}
    runs = {("runs", k): v for k, v in (pipeline.get("runs") or {}).items()}
    runs.update({("described_runs", k): v for k, v in (pipeline.get("described_runs") or {}).items()})
    if not runs:
        raise ConfigError("params: 'pipeline.runs' is missing or empty (nothing to evaluate)")
    question_sets = (cfg.get("datasets") or {}).get("question_sets") or {}
    models = cfg.get("models") or {}
    check_model_entries(models)
    out = []
    for (group, name), run in runs.items():
        key = f"pipeline.{group}.{name}"
        if not isinstance(run, Mapping):
            raise ConfigError(f"params: {key} must be a mapping with question_set, model, setting")
        for field in ("question_set", "model", "setting"):
            if not run.get(field):
                raise ConfigError(f"params: {key}.{field} is missing")
        qset, model, setting = str(run["question_set"]), str(run["model"]), str(run["setting"])
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
        check_model(models, model, f"{key}.model")
        expected = f"{qset}-{model}-{setting}"
        if name != expected:
            raise ConfigError(f"params: {key} should be named {expected!r} (stage and file names follow it)")
        out.append(Evaluation(name, qset, model, setting))
    if any(e.setting in DESCRIBED_SETTINGS for e in out):
        describer = (cfg.get("settings") or {}).get("describer")
        if not describer:
            raise ConfigError("params: settings.describer is missing (needed by the 'described' runs)")
        check_model(models, str(describer), "settings.describer")
        described = set(pipeline.get("describe") or [])
        for ev in out:
            if ev.setting in DESCRIBED_SETTINGS and ev.question_set not in described:
                raise ConfigError(
                    f"params: pipeline.described_runs.{ev.name} needs descriptions of {ev.question_set!r}: "
                    f"add it to pipeline.describe"
                )
    for name in pipeline.get("describe") or []:
        if name not in question_sets:
            raise ConfigError(f"params: pipeline.describe lists {name!r}, not in datasets.question_sets")
    return out


def check_model(models: Mapping[str, Any], name: str, key: str) -> None:
    """Known, enabled and (a hub checkpoint) pinned in params ``models``; the message names the key that
    refers to it."""
    if name not in models:
        raise ConfigError(
            f"params: {key} = {name!r} is not a model; 'models' defines: {', '.join(sorted(models))}"
        )
    entry = models[name] or {}
    if not entry.get("enabled", True):
        raise ConfigError(f"params: {key} = {name!r} is disabled; enable it with models.{name}.enabled=true")
    problem = pin_problem(name, entry)
    if problem:
        raise ConfigError(f"params: {key} = {name!r}: {problem}")


def check_datasets(cfg: Mapping[str, Any], root: str | Path = ".") -> None:
    """Every question set names a known kind and its raw sources exist under paths.data."""
    datasets = cfg.get("datasets") or {}
    question_sets = datasets.get("question_sets") or {}
    if not question_sets:
        raise ConfigError("params: 'datasets.question_sets' is missing or empty")
    data_dir = Path(root) / str((cfg.get("paths") or {}).get("data", "data"))
    sources = datasets.get("sources") or {}
    for name, qset in question_sets.items():
        for source in (qset or {}).get("sources") or []:
            if source not in sources:
                raise ConfigError(
                    f"params: datasets.question_sets.{name}.sources lists {source!r}, "
                    f"not in datasets.sources ({', '.join(sorted(sources))})"
                )
    for name, source in sources.items():
        SOURCES.check(name, f"datasets.sources.{name}")
        path = data_dir / str((source or {}).get("dir", name))
        if not path.is_dir():
            raise ConfigError(
                f"params: datasets.sources.{name}: raw data {path} not found (run `probmed fetch-data` first)"
            )


def write_plan(cfg: Mapping[str, Any], out_dir: str | Path, root: str | Path = ".") -> dict[str, Any]:
    """Check everything, then write the constant gate file and the resolved plan (for people)."""
    from probmed.core.records import write_json_atomic, write_text_atomic

    plan = {"evaluations": [e.__dict__ for e in evaluations(cfg)]}  # params first, then the filesystem
    check_datasets(cfg, root)
    out = Path(out_dir)
    write_json_atomic(plan, out / "plan.json")
    write_text_atomic(GATE_TEXT, out / "gate")
    return plan


# --- the data fetch -----------------------------------------------------------------


def _dvc(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    exe = shutil.which("dvc", path=str(Path(sys.executable).parent)) or "dvc"
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check and proc.returncode != 0:
        raise FetchError(f"`dvc {' '.join(args)}` failed: {(proc.stderr or proc.stdout).strip()[-800:]}")
    return proc


def pinned(dvc_file: Path) -> tuple[str, str, str]:
    """(pinned directory hash, recorded source path, output path) from a data.dvc file."""
    if not dvc_file.is_file():
        raise FetchError(f"{dvc_file} not found")
    spec = OmegaConf.to_container(OmegaConf.load(dvc_file)) or {}
    try:
        out = spec["outs"][0]
        source = spec["deps"][0]["path"]
    except (KeyError, IndexError, TypeError) as exc:
        raise FetchError(f"{dvc_file}: expected one dependency (the source) and one output") from exc
    return str(out["md5"]), str(source), str(out["path"])


def fetch_data(repo: str | Path = ".", dvc_file: str = "data.dvc", source: str | None = None, remote: str | None = None) -> dict[str, Any]:
    """Bring the pinned data into the workspace and cache; returns what was done.

    Order: already present and unchanged -> nothing; a DVC remote (``remote`` or
    the default) -> ``dvc pull``; else import from ``source`` (default: the
    path data.dvc records) and require the pinned hash. data.dvc is never left
    modified: a mismatch restores it and raises.
    """
    repo = Path(repo).resolve()
    path = repo / dvc_file
    md5, recorded, out_path = pinned(path)
    if (repo / out_path).exists():
        status = _dvc("status", dvc_file, "--json", cwd=repo, check=False)
        if status.returncode == 0 and json.loads(status.stdout or "{}") == {}:
            return {"action": "none", "md5": md5, "reason": "already present and unchanged"}
    default_remote = _dvc("config", "core.remote", cwd=repo, check=False).stdout.strip()
    if remote or (default_remote and source is None):
        args = ["pull", dvc_file] + (["--remote", remote] if remote else [])
        _dvc(*args, cwd=repo)
        return {"action": "pull", "md5": md5, "remote": remote or default_remote}
    original = path.read_text(encoding="utf-8")
    src = source or recorded
    if not (repo / src).exists() and not Path(src).exists() and "://" not in src:
        raise FetchError(
            f"data source {src} not found: pass --source PATH (a copy of the data) or configure a DVC remote"
        )
    try:
        if source is None or source == recorded:
            _dvc("update", dvc_file, cwd=repo)
        else:
            _dvc("import-url", "--force", src, out_path, cwd=repo)
        got, _, _ = pinned(path)
    finally:
        restored = path.read_text(encoding="utf-8") != original
        path.write_text(original, encoding="utf-8")
    if got != md5:
        raise FetchError(
            f"data source {src} holds version {got}, but {dvc_file} pins {md5}: "
            "point --source at the pinned copy, `dvc pull` it from a remote, or `dvc update` on purpose"
        )
    if restored:  # the output is the pinned one; only the recorded source path differed
        _dvc("checkout", dvc_file, cwd=repo)
    return {"action": "import", "md5": md5, "source": src}


# --- seeded subsets of a question set ------------------------------------------------


def drop_training_images(frame: "pd.DataFrame", splits: "pd.DataFrame") -> "pd.DataFrame":
    """The questions whose image the local default model never trained on.

    Why: the offline default model is the tiny LLaVA after `probmed finetune
    --stage pretrain`, which trains on the `train` images of the fine-tuning
    split (build/finetune/splits.parquet); scoring it on those would measure
    memorisation. Images the split does not list were never trained on and stay.
    """
    missing = [c for c in ("image_id", "split") if c not in splits.columns]
    if missing:
        raise ConfigError(f"fine-tuning split table lacks column(s) {missing}")
    trained = set(splits.loc[splits["split"] == "train", "image_id"])
    return frame[~frame["image_id"].isin(trained)].reset_index(drop=True)


def subset_questions(frame: "pd.DataFrame", max_images: int | None, seed: int) -> "pd.DataFrame":
    """A seeded image-level subset, spread across image types; rows keep their order.

    Why: the default `dvc repro` must fit a small CPU budget, yet every image
    type should still appear. Images are shuffled within each image type with a
    seeded RNG and taken round-robin across types (sorted by name) until
    ``max_images``; ``None`` or a value >= the number of images keeps the set
    whole. Whole images only, so pairs and per-image scoring stay intact.
    """
    import random

    images = list(dict.fromkeys(frame["image_id"]))
    if max_images is None or max_images >= len(images):
        return frame.reset_index(drop=True)
    if max_images <= 0:
        raise ConfigError(f"max_images must be positive or null, got {max_images}")
    first_type = frame.drop_duplicates("image_id").set_index("image_id")["image_type"]
    rng = random.Random(seed)
    queues = {}
    for image_type in sorted(set(first_type)):
        ids = sorted(first_type.index[first_type == image_type])
        rng.shuffle(ids)
        queues[image_type] = ids
    chosen: set[str] = set()
    while len(chosen) < max_images:
        for image_type in sorted(queues):
            if queues[image_type] and len(chosen) < max_images:
                chosen.add(queues[image_type].pop())
    return frame[frame["image_id"].isin(chosen)].reset_index(drop=True)
