"""What `dvc dag` and `dvc exp show` see: the plan as a file dependency on params.yaml and models.yaml, not
every key, with an edge only to the stages that would otherwise run before it (every other stage is after it
anyway); of the model registry only the entries stages declare; no outside path of the pinned data."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
import yaml

DVC = str(Path(sys.executable).parent / "dvc")


def _stages(repo_root) -> dict:
    return yaml.safe_load((repo_root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def test_the_plan_reads_params_yaml_as_a_file_not_as_every_param(repo_root):
    plan = _stages(repo_root)["plan"]
    assert "params" not in plan  # `params: - params.yaml:` made every key a tracked param of the plan stage
    assert "params.yaml" in plan["deps"] and "models.yaml" in plan["deps"]


def test_only_the_first_stages_name_the_gate_and_every_stage_runs_after_the_plan(repo_root):
    from dvc.repo import Repo

    with Repo(str(repo_root)) as repo:
        graph = repo.index.graph  # an edge from each stage to the stages it depends on
        names = {stage: stage.addressing for stage in graph.nodes}
        plan = next(s for s, n in names.items() if n == "plan")
        after_plan = nx.ancestors(graph, plan)
        gated = {names[s] for s in graph.nodes if any(str(d.def_path) == "build/plan/gate" for d in s.deps)}
    stages = {n for s, n in names.items() if not n.endswith(".dvc") and s is not plan}
    assert {names[s] for s in after_plan} >= stages
    # a direct edge from the plan to a stage that is after it through its inputs draws a line across the dag
    assert gated and all(n.startswith(("curate", "vqarad-adversarial")) for n in gated), gated


def _stage_params(repo_root, name: str, file: str = "models.yaml") -> set[str]:
    """The keys of `file` a stage declares, as DVC resolves them (templated keys filled in)."""
    from dvc.repo import Repo

    with Repo(str(repo_root)) as repo:
        stage = next(s for s in repo.index.stages if s.addressing == name)
        return {key for dep in stage.deps if hasattr(dep, "params") and Path(dep.def_path).name == file
                for key in dep.params}


def test_track_declares_the_models_the_pipeline_runs_not_the_registry(repo_root):
    """`track` logs each planned run's model entry: it declares exactly those entries, so editing a model the
    pipeline does not run (gpt-4o, llava, ...) re-runs nothing, and a model added to the runs must be added here."""
    from probmed.core.config import load_params, to_plain
    from probmed.core.params_schema import parse_params

    params = parse_params(to_plain(load_params(repo_root / "params.yaml")))
    runs = [*params.pipeline.runs.values(), *params.pipeline.described_runs.values()]
    used = {run.model for run in runs} | ({params.settings.describer} if params.pipeline.described_runs else set())
    for stage in ("track", "report"):
        declared = _stage_params(repo_root, stage)
        assert "models" not in declared  # the whole registry (118 keys) made every model's edit re-run it
        assert {key.removeprefix("models.") for key in declared if key.startswith("models.")} == used, stage
        assert not {key for key in _stage_params(repo_root, stage, "params.yaml") if key.startswith("models")}


def test_a_model_stage_declares_its_entry_in_the_registry_file(repo_root):
    """`dvc exp run -S models.yaml:models.tiny.threads=2` changes a param of tiny's stages, and only theirs."""
    tiny = _stage_params(repo_root, "predict@probmed-tiny-vanilla")
    assert tiny == {"models.tiny", "pricing"}
    assert _stage_params(repo_root, "predict@probmed-random-vanilla") == {"models.random", "pricing"}
    assert _stage_params(repo_root, "finetune-adapt") == {"finetune.profiles.cpu"}  # the selected profile only


def _scratch_copy(repo_root: Path, dst: Path) -> Path:
    """The project's own files (tracked or not ignored) committed in a fresh git repository, as a clone has them."""
    names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=repo_root,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, names):
        if (repo_root / name).is_file() and not name.startswith(("data/", "build/", "mlruns/")):
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo_root / name, dst / name)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "scratch"]):
        subprocess.run(cmd, cwd=dst, check=True, capture_output=True, env={**os.environ, **env})
    return dst


def _leaves(tree, prefix=""):
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from _leaves(value, f"{prefix}.{key}" if prefix else key)
    else:
        yield prefix


# measured: 614 columns on the layout before models.yaml (401 params), 423 (211 params, 91 deps) before one image
# policy for every source and one dependency folder each for records, images and the reporting package (178, 67);
# the bounds leave room for a few new keys; metrics: 121 once the audit's blind ceilings per category and unit joined
# the headline (issue 37)
MAX_PARAM_COLUMNS = 190
MAX_METRIC_COLUMNS = 135
MAX_DEP_COLUMNS = 75


@pytest.mark.slow
def test_exp_show_lists_declared_params_and_no_outside_path(repo_root, tmp_path):
    """`dvc exp show` without flags: every params column is a key some stage declares (DVC lists every key of
    params.yaml, so the registries no stage reads live in models.yaml), bounded; no ../shared/data column."""
    from dvc.repo import Repo

    repo = _scratch_copy(repo_root, tmp_path / "repo")
    shown = json.loads(subprocess.run([DVC, "exp", "show", "--json"], cwd=repo, capture_output=True, text=True,
                                      check=True).stdout)[0]["data"]
    columns = {(file, key) for file, entry in shown["params"].items() for key in _leaves(entry["data"])}
    with Repo(str(repo)) as dvc:
        declared = {(Path(dep.def_path).name, key) for stage in dvc.index.stages for dep in stage.deps
                    if hasattr(dep, "params") for key in dep.params}
    undeclared = sorted(f"{file}:{key}" for file, key in columns
                        if not any(f == file and (key == k or key.startswith(f"{k}.")) for f, k in declared))
    assert not undeclared, undeclared
    assert {file for file, _ in columns} == {"params.yaml", "models.yaml"}
    assert len(columns) <= MAX_PARAM_COLUMNS, len(columns)
    assert len([file for file, _ in columns if file == "models.yaml"]) < 60  # the run models, not the registry
    metrics = [key for entry in shown["metrics"].values() for key in _leaves(entry["data"])]
    assert 0 < len(metrics) <= MAX_METRIC_COLUMNS
    outside = [dep for dep in shown["deps"] if "shared" in dep or dep.startswith("..")]
    assert not outside, outside
    assert len(shown["deps"]) <= MAX_DEP_COLUMNS, len(shown["deps"])
    # the first screen: metric columns come first, in stage order, and the evaluation's headline leads with the
    # overall of the plan's first run (the committed file was made by the current code)
    assert next(iter(shown["metrics"])) == "metrics/evaluation.json", list(shown["metrics"])
    first_run = next(iter(yaml.safe_load((repo_root / "params.yaml").read_text())["pipeline"]["runs"].values()))
    first_metric = next(_leaves(shown["metrics"]["metrics/evaluation.json"]["data"]))
    assert first_metric == (f"{first_run['question_set']}.{first_run['model']}/{first_run['setting']}"
                            ".overall_paper_weighted"), first_metric
    # one image policy (curate.images), not a copy per source: a source's folders are layout, not params; the
    # sources themselves (curate.all) are a param, the one list `probmed curate all` reads, and so is which
    # sources' text positions are asked (curate.positions, issue 38)
    assert not [key for file, key in columns if key.startswith("curate.") and not key.startswith(
        ("curate.images.", "curate.image_root", "curate.all", "curate.positions."))], \
        sorted(key for _, key in columns if key.startswith("curate."))


def _declared_values(repo: Path) -> dict[str, dict]:
    """Each stage's declared params as DVC reads them from the work tree (what `dvc status` compares)."""
    from dvc.repo import Repo

    with Repo(str(repo)) as dvc:
        return {stage.name: {f"{dep.def_path}:{key}": value for dep in stage.deps if hasattr(dep, "params")
                                   for key, value in dep.read_params().items()}
                for stage in dvc.index.stages if hasattr(stage, "name")}  # data.dvc is no pipeline stage


@pytest.mark.slow
def test_setting_one_registry_key_changes_the_params_of_that_models_stages_only(repo_root, tmp_path):
    """What `dvc exp run -S models.yaml:models.tiny.threads=2` writes changes the declared params of tiny's
    stages and of track and report (they log and draw every run model), nothing else; a model no run uses, none."""
    from dvc.utils.hydra import apply_overrides

    repo = _scratch_copy(repo_root, tmp_path / "repo")
    before = _declared_values(repo)
    apply_overrides(repo / "models.yaml", ["models.tiny.threads=2"])
    after = _declared_values(repo)
    changed = {name for name in before if before[name] != after[name]}
    # tiny's answers (and descriptions: settings.describer is tiny); its score stages follow through the table
    tiny = {name for name in before if name.startswith("predict") and "-tiny-" in name} | {"describe@probmed"}
    assert changed == tiny | {"track", "report"}, changed
    apply_overrides(repo / "models.yaml", ["models.gpt-4o.max_tokens=7"])
    assert _declared_values(repo) == after  # gpt-4o runs nowhere: no stage declares it
