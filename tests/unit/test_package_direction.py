"""The packages follow the data's way through the program, and imports point one way.

`pipeline/` and `transforms/` are each a stack of packages (and a few top modules); a module
may import its own package or a package below it, never one above: the stack is the reading
order a newcomer can follow, from where runs are stored to the command line. Every `import`
counts, function-level ones included (test_import_cycles.py's graph).
"""

from __future__ import annotations

import importlib.util

from import_graph import ROOT, import_graph

# Lowest first. A name is a sub-package (`pipeline.run`) or a top module (`pipeline.api`).
STACKS = {
    "pipeline": (
        "pipeline.stream",    # Pub/Sub on the local runner: leases, the loopback front-end
        "pipeline.storage",   # text files, table folders, the run folder and its lock, BigQuery
        "pipeline.sources",   # traces in: files, spans, Phoenix, Langfuse
        "pipeline.sinks",     # tables out: Parquet, BigQuery, Pub/Sub
        "pipeline.results",   # a run's tables read back: earlier runs, summary, typed results
        "pipeline.annotate",  # verdicts written back onto the traces (Phoenix, Langfuse); its
                              # options are part of a run's typed config (run/settings.py)
        "pipeline.run",       # graph assembly and the jobs: config, chunks, redo, estimate
        "pipeline.report",    # the HTML report and the export
        "pipeline.eval",      # a judge measured on labelled data
        "pipeline.gate",      # CI limits on a run's rates
        "pipeline.options",   # each command's options: argparse, Beam's views, the docs' tables
        "pipeline.cli",       # the commands: one parser and runner each
        "pipeline.api",       # the Python entry
        "pipeline.launcher",  # the executable
        "pipeline",           # the package itself (its __init__)
    ),
    "transforms": (
        "transforms.text",     # language, sentences, quantities: pure text rules
        "transforms.common",   # what the stages share: guards, redaction, fields, tally, ...
        "transforms.judges",   # the judge contract and its backends
        "transforms.checks",   # the judge's output and the trace's text checked
        "transforms",          # the stages, one composite per module (the method, in order)
    ),
}
FLOORS = ("schemas", "prompts", "transforms", "pipeline")  # the floors: each imports below


def _package(module: str) -> str:
    """The stack entry a module belongs to: its sub-package, or itself if a top module."""
    parts = module.split(".")
    top = parts[0]
    if top not in STACKS:
        return top
    stack = STACKS[top]
    for depth in (2, 1):
        name = ".".join(parts[:depth])
        if name in stack:
            return name
    raise AssertionError(f"{module} is in no package of the {top} stack: add it to STACKS")


def _rank(module: str) -> tuple[int, int]:
    entry = _package(module)
    floor = FLOORS.index(module.split(".")[0])
    stack = STACKS.get(module.split(".")[0], (entry,))
    return floor, stack.index(entry)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a package above its own, as 'a -> b'."""
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets
                  if _package(a) != _package(b) and _rank(b) > _rank(a))


def test_every_module_has_a_place_in_its_stack():
    for module in import_graph():
        _package(module)  # raises for a module outside every listed package


def test_every_sub_package_is_listed():
    """A new sub-package must be placed in the stack, not left out of the direction check."""
    for top in STACKS:
        folders = {p.parent for p in (ROOT / top).rglob("__init__.py")} - {ROOT / top}
        names = {f"{top}." + ".".join(f.relative_to(ROOT / top).parts) for f in folders}
        listed = {name for name in STACKS[top] if (ROOT / top / name.split(".", 1)[-1]).is_dir()}
        assert {n for n in names if n.count(".") == 1} == listed


def test_imports_point_down_the_stack():
    assert upward_imports(import_graph()) == []


def test_the_check_finds_an_upward_import():
    graph = import_graph()
    planted = {**graph, "pipeline.storage.text_files": graph["pipeline.storage.text_files"]
               | {"pipeline.run.jobs"},
               "transforms.common.guard": graph["transforms.common.guard"]
               | {"transforms.verify_local"}}
    assert upward_imports(planted) == ["pipeline.storage.text_files -> pipeline.run.jobs",
                                       "transforms.common.guard -> transforms.verify_local"]


def test_a_handful_of_top_modules():
    """`pipeline/` holds packages and at most a handful of modules of its own."""
    top = sorted(p.stem for p in (ROOT / "pipeline").glob("*.py") if p.stem != "__init__")
    assert top == ["api", "launcher"]


def test_the_pipeline_packages_import_a_real_module_each():
    """Each listed package exists (a renamed package must not leave a stale entry behind)."""
    for stack in STACKS.values():
        for name in stack:
            folder = ROOT / name.replace(".", "/")
            assert folder.is_dir() or folder.with_suffix(".py").is_file(), name
    assert importlib.util.find_spec("rt4chart.pipeline.run.jobs") is not None


def test_one_module_per_name_in_a_package():
    """No two modules of one package are told apart only by a suffix or word order
    (`judge_check`/`check_judge`, `io`/`inputs`/`readers`): names say what each holds."""
    for top in STACKS:
        for folder in {p.parent for p in (ROOT / top).rglob("*.py")}:
            stems = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
            words = [frozenset(s.split("_")) for s in stems]
            clashes = [s for s, w in zip(stems, words, strict=True) if words.count(w) > 1]
            assert clashes == [], folder
