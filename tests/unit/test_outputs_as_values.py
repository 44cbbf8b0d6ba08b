"""Outputs as values (issue 49): a composite transform returns its outputs from `expand` (a
NamedTuple of PCollections when it has more than one, as Beam's
`RunInference.with_exception_handling` does) and sets nothing on itself while it is applied.

An output set on `self` (`gate.alerts`, `audit.cap_alerts`) exists only after the transform is
applied, only on the branches that set it, and only for the last application of the instance.
The modules of pipeline/ and transforms/ are parsed (never imported); in a class that has an
`expand`, any method but `__init__` that assigns an attribute of `self` is counted (a helper
that `expand` calls is where such an assignment hides).

The figure (assignments, today 0; 6 directly in `expand` and 2 in a helper it called before
issue 49): `.venv/bin/python tests/unit/test_outputs_as_values.py [ROOT]`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "transforms")


def self_assignments(source: str) -> Iterator[tuple[str, int, str]]:
    """(class.method, line, statement) of each assignment to an attribute of `self` in a
    method other than `__init__` of a class that defines `expand`."""
    for cls in ast.walk(ast.parse(source)):
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        if "expand" not in {m.name for m in methods}:
            continue
        for method in methods:
            if method.name == "__init__":
                continue
            for node in ast.walk(method):
                if _sets_self(node):
                    yield f"{cls.name}.{method.name}", node.lineno, ast.unparse(node)


def _sets_self(node: ast.AST) -> bool:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    else:
        return False
    return any(isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)
               and part.value.id == "self"
               for target in targets for part in ast.walk(target))


def found(root: Path = ROOT) -> list[str]:
    """Every such assignment under root's pipeline/ and transforms/, as `path:line: code`."""
    out = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for where, line, code in self_assignments(path.read_text(encoding="utf-8")):
                out.append(f"{path.relative_to(root)}:{line}: {where}: {code}")
    return out


def test_no_transform_sets_an_output_on_itself():
    assert found() == []


def test_the_count_sees_an_assignment_in_expand_and_in_a_helper_it_calls():
    source = '''
class Gate(beam.PTransform):
    def __init__(self, config):
        self._config = config  # configuration: allowed

    def expand(self, items):
        self.alerts, other = items, None
        return self._split(items)

    def _split(self, items):
        self.dead_letters: object = items
        return items

class Fn(beam.DoFn):
    def setup(self):
        self._client = object()  # a DoFn, not a composite: not counted
'''
    got = [(where, line) for where, line, _ in self_assignments(source)]
    assert got == [("Gate.expand", 7), ("Gate._split", 11)]


if __name__ == "__main__":
    hits = found(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(hits))
    print(f"assignments to self outside __init__ in composite transforms: {len(hits)}")
