"""One door into a judge backend: its kind (`transforms/judges/contract.py`, `JudgeKind`).

A backend is a folder under `transforms/judges/` (openai/, offline/). Nothing outside
`transforms/judges/` imports a backend's modules: it asks the judge's kind (its prices, the
estimate's basis and call sizes, its analysis, limit sharing, probing, measured speed). And the
generic package `transforms/judges/` imports no backend: a backend registers itself with one line
of `contract.KINDS`, imported by name when asked. Every import statement counts, wherever it is
in a module (function level and `TYPE_CHECKING` blocks too), read with `ast`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from rt4chart.transforms.judges.contract import KINDS, JudgeSpec

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("pipeline", "transforms", "schemas", "prompts", "rt4chart")
JUDGES = ROOT / "transforms" / "judges"
PACKAGE = "rt4chart.transforms.judges"


def backends() -> list[str]:
    """The backends' folders: the subpackages of transforms/judges/ named by a kind in KINDS."""
    named = {target.partition(":")[0] for target in KINDS.values()}
    found = sorted(p.name for p in JUDGES.iterdir()
                   if (p / "__init__.py").exists() and any(
                       m == f"{PACKAGE}.{p.name}" or m.startswith(f"{PACKAGE}.{p.name}.")
                       for m in named))
    return found


def imported(path: Path) -> set[str]:
    """The absolute module names every import statement of a file names."""
    parts = ("rt4chart", *path.relative_to(ROOT).with_suffix("").parts)
    if parts[1] == "rt4chart":  # the rt4chart/ folder is the package itself
        parts = parts[:1] + parts[2:]
    package = parts if path.name == "__init__.py" else parts[:-1]
    return imported_by(path.read_text(encoding="utf-8"), package)


def imported_by(source: str, package: tuple[str, ...]) -> set[str]:
    """The absolute module names every import statement of `source` names (`from a import b`:
    `a` and `a.b`, since `b` may be a module); a relative import resolved from `package`."""
    tree = ast.parse(source)
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            out.add(module)
            out |= {f"{module}.{a.name}" for a in node.names}
    return out


def _into_backend(module: str, names: list[str]) -> str | None:
    for name in names:
        prefix = f"{PACKAGE}.{name}"
        if module == prefix or module.startswith(prefix + "."):
            return name
    return None


def outside_files() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py")
                  if JUDGES not in p.parents)


def generic_files() -> list[Path]:
    """The modules of transforms/judges/ that belong to no backend."""
    names = set(backends())
    return sorted(p for p in JUDGES.rglob("*.py")
                  if p.relative_to(JUDGES).parts[0] not in names)


def test_the_backends_are_found():
    assert {"openai", "offline"} <= set(backends())


def test_no_module_outside_the_judge_package_imports_a_backend():
    names = backends()
    found = sorted(f"{p.relative_to(ROOT)}: {m}" for p in outside_files()
                   for m in imported(p) if _into_backend(m, names))
    assert found == [], "ask the judge's kind (contract.JudgeKind) instead:\n" + "\n".join(found)


def test_the_generic_judge_package_imports_no_backend():
    names = backends()
    found = sorted(f"{p.relative_to(ROOT)}: {m}" for p in generic_files()
                   for m in imported(p) if _into_backend(m, names))
    assert found == [], ("a backend registers itself (contract.KINDS); the generic package "
                         "never imports it:\n" + "\n".join(found))


def test_the_check_reads_function_level_relative_and_type_checking_imports():
    """The parser the two tests rest on sees every form an import can take."""
    got = imported_by(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from rt4chart.transforms.judges.openai.kind import OpenAIKind\n"
        "def f():\n"
        "    from .offline import judge\n"
        "    import rt4chart.transforms.judges.openai.pricing\n",
        ("rt4chart", "transforms", "judges"))
    names = backends()
    hits = {m for m in got if _into_backend(m, names)}
    assert "rt4chart.transforms.judges.openai.kind" in hits
    assert "rt4chart.transforms.judges.offline.judge" in hits
    assert "rt4chart.transforms.judges.openai.pricing" in hits


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_registry_line_gives_a_kind_that_builds_its_judge(name):
    """One registry line per backend is enough: the kind it names builds the judge."""
    kind = JudgeSpec(name).kind()
    factory = kind.factory()
    assert callable(factory), name
    assert kind.builds and kind.builds.startswith(f"{PACKAGE}."), name


def test_a_custom_judge_has_the_default_kind_and_is_built_from_its_name():
    spec = JudgeSpec("fake_judges:make_fake")
    assert spec.kind().factory() is None
    assert spec.kind().analysis() is None
