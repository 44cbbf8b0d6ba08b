"""No code outside the judge package branches on a judge's name or probes a judge's attributes.

What differs between judges is asked of the judge's kind (`spec.kind()`: negotiating, prices,
speed, limits shared across workers, the workers' key) or of its traits (`judge.traits`), both
declared in `transforms/judges/contract.py`. A comparison or membership test against a judge's
name (`spec.name in OPENAI_JUDGES`, `config.judge.name == "openai-batch"`), an import of such a
list, or a `getattr(judge, "model")` probe anywhere else fails here, with its place.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from rt4chart.transforms.judges.contract import BUILTIN, Judge, JudgeKind, JudgeTraits

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pipeline", "transforms", "schemas", "prompts")
JUDGE_PACKAGE = ROOT / "transforms" / "judges"
JUDGE_NAMES = frozenset(BUILTIN)
# What a judge declares or offers through the contract: asked of its traits or called, never
# probed with getattr/hasattr.
CONTRACT_ATTRS = frozenset(
    {f.name for f in dataclasses.fields(JudgeTraits)}
    | {n for n in (*vars(Judge), *vars(JudgeKind)) if not n.startswith("_")}
    | {"call_deadline_s", "shares_event_loop", "speed", "config", "prices", "capabilities"})
# The command line's namespace and the options' values the command line and the API both pass
# to pipeline/settings.py: their flags may share a trait's name (--batch-api).
NOT_JUDGES = frozenset({"args", "values"})
# A name that lists judges (OPENAI_JUDGES, KEYED_JUDGES, OFFLINE_JUDGE…).
LIST_SUFFIXES = ("_JUDGES", "_JUDGE")


def outside_modules() -> list[Path]:
    """Every module of the package outside transforms/judges/."""
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                  if JUDGE_PACKAGE not in p.parents)


def _strings(node: ast.AST, constants: dict[str, frozenset[str]]) -> frozenset[str]:
    """The strings an expression denotes: a literal, a tuple/list/set of literals, or a name
    bound to one of those at module level."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return frozenset({node.value})
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return frozenset().union(*(_strings(e, constants) for e in node.elts))
    if isinstance(node, ast.Name):
        return constants.get(node.id, frozenset())
    return frozenset()


def _module_constants(tree: ast.Module) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            out[node.targets[0].id] = _strings(node.value, out)
    return out


def _is_judge_name(node: ast.AST) -> bool:
    """`spec.name`, `judge.name`, `config.judge.name`, `second.name` (a judge spec's)."""
    if not (isinstance(node, ast.Attribute) and node.attr == "name"):
        return False
    owner = ast.unparse(node.value).lower()
    return "judge" in owner or owner.endswith("spec") or owner == "second"


def name_branches(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, code) of every comparison or membership test against a judge's name."""
    constants = _module_constants(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        if any(_strings(o, constants) & JUDGE_NAMES or _is_judge_name(o) for o in operands):
            found.append((node.lineno, ast.unparse(node)))
    return found


def name_list_imports(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, name) of every import of a list of judge names."""
    return [(node.lineno, alias.name) for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) for alias in node.names
            if alias.name.endswith(LIST_SUFFIXES)]


def attribute_probes(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, code) of every getattr/hasattr of a contract attribute, or of anything of a
    judge's."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):
            continue
        target, attr = node.args[0], node.args[1]
        owner = ast.unparse(target)
        named = isinstance(attr, ast.Constant) and attr.value in CONTRACT_ATTRS
        if (named and owner not in NOT_JUDGES) or "judge" in owner.lower():
            found.append((node.lineno, ast.unparse(node)))
    return found


def _report(check) -> list[str]:
    out = []
    for path in outside_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        out += [f"{path.relative_to(ROOT)}:{line}: {code}" for line, code in check(tree)]
    return out


def test_no_code_outside_the_judge_package_branches_on_a_judge_name():
    found = _report(name_branches) + _report(name_list_imports)
    assert not found, "ask the judge's kind or traits instead:\n" + "\n".join(found)


def test_no_code_outside_the_judge_package_probes_a_judge_with_getattr():
    found = _report(attribute_probes)
    assert not found, "ask the judge's traits or call its method instead:\n" + "\n".join(found)


@pytest.mark.parametrize("code", [
    "if spec.name not in OPENAI_JUDGES: pass",
    "x = 0 if config.judge.name == 'openai-batch' else 1",
    "KEYED = ('openai', 'openai-batch')\nok = name in KEYED",
    "OFFLINE = 'offline'\ndef f(judge): return judge != OFFLINE",
])
def test_the_name_check_finds_each_form_it_forbids(code):
    assert name_branches(ast.parse(code))


def test_the_checks_find_imports_and_probes():
    tree = ast.parse("from rt4chart.transforms.judges.openai.config import OPENAI_JUDGES\n"
                     "mode = getattr(judge, 'request_mode', None)\n"
                     "speed = getattr(runner, 'speed', None)\n"
                     "late = getattr(element, 'late', False)\n"
                     "flag = getattr(args, 'batch_api', False)\n")
    assert [n for _, n in name_list_imports(tree)] == ["OPENAI_JUDGES"]
    assert [line for line, _ in attribute_probes(tree)] == [2, 3]
    assert not name_branches(ast.parse("ok = f.name in IDENTITY_COLUMNS"))
