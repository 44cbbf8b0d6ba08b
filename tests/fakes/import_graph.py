"""The package's import graph, function-level and relative imports included: what the
import-cycle and package-direction tests read (tests/unit/test_import_cycles.py,
tests/unit/test_package_direction.py)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# rt4chart.<sub> -> its folder (pyproject's package-dir mapping).
FOLDERS = {"pipeline": "pipeline", "transforms": "transforms", "schemas": "schemas",
           "prompts": "prompts"}

# Cycles allowed while they are being removed; each entry is one cycle's modules. Remove an
# entry when its cycle is gone: the test then keeps it gone.
ALLOWED: list[frozenset[str]] = []


def _modules() -> dict[str, Path]:
    """Module name (without `rt4chart.`) -> file, for every module of the package."""
    found = {}
    for sub, folder in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = [sub, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, here: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    """The package's modules an import statement imports (names that are submodules too)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
        return {n.removeprefix("rt4chart.") for n in names if n.startswith("rt4chart.")}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:  # relative: from the module's package, up `level - 1` more
        base = here.split(".") if is_package else here.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    elif (node.module or "").startswith("rt4chart."):
        module = node.module.removeprefix("rt4chart.")
    else:
        return set()
    got = {f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules}
    if len(got) < len(node.names):
        got.add(module)  # names defined in the module itself
    return got


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at module or function level."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = path.name == "__init__.py"
        graph[name] = {t for node in ast.walk(tree)
                       for t in _targets(node, name, package, modules)
                       if t in modules and t != name}
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph[todo.pop()] - seen:
            seen.add(w)
            todo.append(w)
    return seen


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The modules that import each other, directly or not: each group of more than one
    module in which every module reaches every other (a strongly connected component)."""
    reach = {v: _reach(graph, v) for v in graph}
    groups = {frozenset({v} | {w for w in reach[v] if v in reach[w]}) for v in graph}
    return sorted((g for g in groups if len(g) > 1), key=sorted)
