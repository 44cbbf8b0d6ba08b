"""No module state in the package (issue 35): what a run or a worker shares lives in objects
the run or the worker runtime owns and passes on, not in module globals or the process's
environment.

Every module of pipeline/, transforms/ and schemas/ is parsed (never imported) and fails on:

- a write to the process environment: ``os.environ[K] = V`` (or ``del``), its ``setdefault``,
  ``update``, ``pop``, ``popitem``, ``clear``, and ``os.putenv``/``os.unsetenv``;
- an assignment to ``tempfile.tempdir``;
- a module-level mutable container (a dict, list or set literal or comprehension, or a call of
  dict/list/set/defaultdict/OrderedDict/Counter/deque/WeakValueDictionary/...) that a function
  body mutates (item assignment or deletion, ``append``/``add``/``update``/``setdefault``/
  ``pop``/``clear``/...), or a module global a function rebinds (``global X; X = ...``).

Read-only module tables are allowed, and so are caches made with ``functools.cache`` /
``lru_cache`` (a memo of a pure function, not a registry). Each module of the package also
has every ``expand()`` typed: its parameters and its return annotated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "transforms", "schemas")

MUTABLE_CALLS = frozenset({
    "dict", "list", "set", "bytearray", "defaultdict", "OrderedDict", "Counter", "deque",
    "ChainMap", "WeakValueDictionary", "WeakKeyDictionary", "WeakSet"})
MUTATORS = frozenset({
    "append", "add", "update", "setdefault", "pop", "popitem", "clear", "extend", "insert",
    "remove", "discard", "appendleft", "extendleft", "popleft", "__setitem__", "__delitem__",
    "difference_update", "intersection_update", "symmetric_difference_update", "sort",
    "reverse"})
ENV_MUTATORS = frozenset({"setdefault", "update", "pop", "popitem", "clear", "__setitem__",
                          "__delitem__"})


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")
                  if "__pycache__" not in p.parts)


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` (or a bare `environ`, imported from os)."""
    if isinstance(node, ast.Attribute):
        return (node.attr == "environ" and isinstance(node.value, ast.Name)
                and node.value.id == "os")
    return isinstance(node, ast.Name) and node.id == "environ"


def _targets(node: ast.AST) -> list[ast.AST]:
    """The expressions a statement stores into or deletes, tuples unpacked."""
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        found = [node.target]
    elif isinstance(node, ast.Delete):
        found = list(node.targets)
    else:
        return []
    out = []
    while found:
        target = found.pop()
        if isinstance(target, ast.Tuple | ast.List):
            found.extend(target.elts)
        elif isinstance(target, ast.Starred):
            found.append(target.value)
        else:
            out.append(target)
    return out


def environment_writes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) of each write to the process environment or to tempfile.tempdir."""
    for node in ast.walk(tree):
        for target in _targets(node):
            if isinstance(target, ast.Subscript) and _is_environ(target.value):
                yield node.lineno, "os.environ[...] written"
            if (isinstance(target, ast.Attribute) and target.attr == "tempdir"
                    and isinstance(target.value, ast.Name) and target.value.id == "tempfile"):
                yield node.lineno, "tempfile.tempdir assigned"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            func = node.func
            if func.attr in ENV_MUTATORS and _is_environ(func.value):
                yield node.lineno, f"os.environ.{func.attr}()"
            if (func.attr in ("putenv", "unsetenv") and isinstance(func.value, ast.Name)
                    and func.value.id == "os"):
                yield node.lineno, f"os.{func.attr}()"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (
                "putenv", "unsetenv"):
            yield node.lineno, f"{node.func.id}()"


def _is_mutable(value: ast.AST | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set | ast.DictComp | ast.ListComp
                  | ast.SetComp):
        return True
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        return name in MUTABLE_CALLS
    return False


def _module_containers(tree: ast.Module) -> set[str]:
    """The names a module binds, at its top level, to a mutable container."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and _is_mutable(node.value):
            names.update(t.id for t in _targets(node) if isinstance(t, ast.Name))
    return names


def _base_name(node: ast.AST) -> str | None:
    """The name an item chain starts from: `X` of `X[k]`, `X[k][j]`."""
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names a function binds itself (its arguments and plain assignments), which hide a
    module global of the same name unless it declares it `global`."""
    args = fn.args
    names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    declared = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
    return names - declared


def _mutations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[tuple[int, str, str]]:
    """(line, name, how) of each item write, item deletion or mutating method call in `fn`,
    and each global it rebinds."""
    declared = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
    for node in ast.walk(fn):
        for target in _targets(node):
            if isinstance(target, ast.Subscript) and (name := _base_name(target.value)):
                yield node.lineno, name, "item written"
            elif isinstance(target, ast.Name) and target.id in declared:
                yield node.lineno, target.id, "global rebound"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in MUTATORS and (name := _base_name(node.func.value))):
            yield node.lineno, name, f".{node.func.attr}()"


def module_state(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, what) of each module-level container a function mutates, and each module global
    a function rebinds."""
    containers = _module_containers(tree)
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        hidden = _local_names(fn)
        for line, name, how in _mutations(fn):
            if how == "global rebound" or (name in containers and name not in hidden):
                yield line, f"module-level {name}: {how} in {fn.name}()"


def untyped_expands(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, what) of each `expand()` method with a parameter or its return not annotated."""
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, ast.FunctionDef) or fn.name != "expand":
                continue
            args = fn.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs][1:]  # not self
            missing = [a.arg for a in params if a.annotation is None]
            if fn.returns is None:
                missing.append("return")
            if missing:
                yield fn.lineno, f"{cls.name}.expand: {', '.join(missing)} not annotated"


def _findings(check) -> list[str]:
    found = []
    for path in _modules():
        tree = ast.parse(path.read_text(), filename=str(path))
        found += [f"{path.relative_to(ROOT)}:{line}: {what}" for line, what in check(tree)]
    return found


def test_the_package_has_modules_to_check():
    names = {p.relative_to(ROOT).as_posix() for p in _modules()}
    assert {"transforms/spend_cap.py", "pipeline/stream/pubsub_leases.py", "schemas/records.py",
            "transforms/judges/openai/judge.py"} <= names


def test_no_package_code_writes_the_process_environment():
    found: dict[tuple[str, str], int] = {}
    for finding in _findings(environment_writes):
        path, _line, what = finding.split(":", 2)
        found[path, what.strip()] = found.get((path, what.strip()), 0) + 1
    assert found == {}


def test_no_module_level_container_is_mutated_by_a_function():
    assert _findings(module_state) == []


def test_every_expand_has_typed_parameters_and_return():
    assert _findings(untyped_expands) == []


PLANTED = '''
import os
import tempfile
from collections import defaultdict
from os import environ

_LEDGERS: dict[str, int] = {}
_SEEN = set()
_BY_KEY = defaultdict(list)
_TABLE = {"a": 1}  # read only: allowed
_COUNT = 0


def register(name, value):
    _LEDGERS[name] = value
    _SEEN.add(name)
    _BY_KEY[name].append(value)
    return _TABLE.get(name)


def forget(name):
    _LEDGERS.pop(name, None)
    del _BY_KEY[name]


def shadowed(name):
    _SEEN = set()  # a local of the same name: not module state
    _SEEN.add(name)


def bump():
    global _COUNT
    _COUNT += 1


def export(folder):
    os.environ["TMPDIR"] = folder
    environ.setdefault("KEY", "v")
    os.environ.pop("KEY", None)
    os.putenv("X", "1")
    tempfile.tempdir = folder
    del os.environ["X"]
    os.environ.get("READ_ONLY")  # reading is fine


class Write:
    def expand(self, rows):
        return rows


class Typed:
    def expand(self, rows: "PCollection") -> "PCollection":
        return rows
'''


@pytest.fixture
def planted() -> ast.Module:
    return ast.parse(PLANTED)


def test_the_detectors_find_planted_module_state(planted):
    state = sorted(module_state(planted))
    assert [what.split(":")[0] for _, what in state] == [
        "module-level _LEDGERS", "module-level _SEEN", "module-level _BY_KEY",
        "module-level _LEDGERS", "module-level _BY_KEY", "module-level _COUNT"]
    assert not any("_TABLE" in what for _, what in state)
    assert [what for _, what in sorted(environment_writes(planted))] == [
        "os.environ[...] written", "os.environ.setdefault()", "os.environ.pop()",
        "os.putenv()", "tempfile.tempdir assigned", "os.environ[...] written"]
    assert [what for _, what in untyped_expands(planted)] == [
        "Write.expand: rows, return not annotated"]
