"""The package's import graph has no cycle.

Edges are every import statement in every module of src/probmed, including
imports inside functions (a lazy import hides a cycle from Python, not from a
reader), plus every string constant that names a probmed module the way the
registries and the CLI name them lazily ("probmed.inference.models.hf:HFBackend").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import probmed

PACKAGE_DIR = Path(probmed.__file__).parent
LAZY_NAME = re.compile(r"^(probmed(?:\.\w+)+)(?::\w+)?$")


def module_files() -> dict[str, Path]:
    out = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imported_names(module: str, path: Path) -> set[str]:
    """Dotted names one module imports (statements anywhere, and lazy "module:attr" strings)."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = LAZY_NAME.match(node.value)
            if match:
                names.add(match.group(1))
    return names


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {m: {n for n in imported_names(m, p) if n in files and n != m} for m, p in files.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path [a, b, ..., a], or None (depth-first search, colours)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_lazy_imports_and_registry_strings():
    graph = import_graph()
    assert "probmed.inference.models.hf" in graph["probmed.inference.models.registry"]  # a registry string
    assert "probmed.cli.predicting" in graph["probmed.cli"]  # the CLI's command table
    assert "probmed.inference.models.registry" in graph["probmed.cli.predicting"]  # an import inside a function


def test_find_cycle_finds_a_planted_cycle():
    graph = import_graph()
    graph["probmed.core.errors"] = graph["probmed.core.errors"] | {"probmed.cli"}
    cycle = find_cycle(graph)
    assert cycle is not None and cycle[0] == cycle[-1]


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _arrows(graph: dict[str, set[str]], source: str, target: str) -> list[str]:
    """Imports from package `source` into package `target`, as 'a -> b' lines."""
    def inside(module: str, package: str) -> bool:
        return module == package or module.startswith(package + ".")

    return sorted(f"{a} -> {b}" for a, names in graph.items() if inside(a, source) for b in names if inside(b, target))


def test_scoring_never_imports_inference_and_the_shared_layers_import_no_stage():
    """Data flows sources -> records -> questions -> predictions -> scores: the scorer reads prediction tables,
    not the code that made them (the answer parser both need lives in core), and the shared layers sit below
    every stage."""
    graph = import_graph()
    assert _arrows(graph, "probmed.scoring", "probmed.inference") == []
    for lower in ("probmed.core", "probmed.infra"):
        for stage in ("probmed.benchmark", "probmed.inference", "probmed.scoring", "probmed.reporting",
                      "probmed.finetune", "probmed.release", "probmed.pipeline", "probmed.cli"):
            assert _arrows(graph, lower, stage) == [], (lower, stage)
    # infra knows the one error root and nothing else of the domain
    assert all(arrow.endswith(" -> probmed.core.errors") for arrow in _arrows(graph, "probmed.infra", "probmed.core"))


def test_the_arrow_check_sees_a_planted_arrow():
    graph = import_graph()
    graph["probmed.scoring.run"] = graph["probmed.scoring.run"] | {"probmed.inference.predict"}
    assert _arrows(graph, "probmed.scoring", "probmed.inference") == ["probmed.scoring.run -> probmed.inference.predict"]
