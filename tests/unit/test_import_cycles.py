"""The package's import graph, read with `ast` (function-level imports count): no cycles, and
no argparse below `pipeline/` (stages declare their options, `pipeline/` parses them)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"pipeline": "rt4chart.pipeline", "transforms": "rt4chart.transforms",
            "schemas": "rt4chart.schemas"}
# Cycles owned by issue 22's other parts (in progress elsewhere); remove when they are cut.
ELSEWHERE = {
    "rt4chart.pipeline.io", "rt4chart.pipeline.sources.read", "rt4chart.pipeline.inputs",
    "rt4chart.transforms.judges.openai_judge", "rt4chart.transforms.judges.job_limits",
    "rt4chart.transforms.judges.pricing",
}


def _modules() -> dict[str, Path]:
    out = {}
    for folder, package in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


def _imported(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The package's modules `tree` imports, wherever the import statement is."""
    out: set[str] = set()
    base = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                target = f"{anchor}.{target}" if target else anchor
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return {m for m in out if m in known and m != module}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {m: _imported(ast.parse(p.read_text()), m, p.name == "__init__.py", known)
            for m, p in modules.items()}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The modules that import each other (directly or not), one set per cycle group."""
    reach = {v: _reachable(graph, v) for v in graph}
    groups = {frozenset({v} | {w for w in reach[v] if v in reach[w]}) for v in graph
              if v in reach[v]}
    return [set(g) for g in sorted(groups, key=sorted)]


def test_no_import_cycles():
    assert [c for c in cycles(import_graph()) if not c <= ELSEWHERE] == []


def test_the_options_cycle_is_gone():
    graph = import_graph()
    assert "rt4chart.pipeline.args" not in graph["rt4chart.pipeline.options"]
    assert "rt4chart.pipeline.eval.cli" not in graph["rt4chart.pipeline.options"]


def test_no_argparse_below_pipeline():
    for folder in ("transforms", "schemas"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert "argparse" not in names, path
