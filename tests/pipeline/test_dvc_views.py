"""What `dvc dag` and `dvc exp show` see of the plan: a file dependency on params.yaml, not 380 params, and
an edge only to the stages that would otherwise run before it (every other stage is after it anyway)."""

from __future__ import annotations

import networkx as nx
import yaml


def _stages(repo_root) -> dict:
    return yaml.safe_load((repo_root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def test_the_plan_reads_params_yaml_as_a_file_not_as_every_param(repo_root):
    plan = _stages(repo_root)["plan"]
    assert "params" not in plan  # `params: - params.yaml:` made every key a tracked param of the plan stage
    assert "params.yaml" in plan["deps"]


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


def _stage_params(repo_root, name: str) -> set[str]:
    """The params.yaml keys a stage declares, as DVC resolves them (templated keys filled in)."""
    from dvc.repo import Repo

    with Repo(str(repo_root)) as repo:
        stage = next(s for s in repo.index.stages if s.addressing == name)
        return {key for dep in stage.deps if hasattr(dep, "params") for key in dep.params}


def test_track_declares_the_models_the_pipeline_runs_not_the_registry(repo_root):
    """`track` logs each planned run's model entry: it declares exactly those entries, so editing a model the
    pipeline does not run (gpt-4o, llava, ...) re-runs nothing, and a model added to the runs must be added here."""
    from probmed.core.config import load_params, to_plain
    from probmed.core.params_schema import parse_params

    params = parse_params(to_plain(load_params(repo_root / "params.yaml")))
    runs = [*params.pipeline.runs.values(), *params.pipeline.described_runs.values()]
    used = {run.model for run in runs} | ({params.settings.describer} if params.pipeline.described_runs else set())
    declared = _stage_params(repo_root, "track")
    assert "models" not in declared  # the whole registry (118 keys) made every model's edit re-run track
    assert {key.removeprefix("models.") for key in declared if key.startswith("models.")} == used
