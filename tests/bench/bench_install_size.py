"""What the base install's megabytes are (issue 48: at most 500 MB asked).

Give the `python` of a venv made with `python3 -m venv V && V/bin/pip install -e .`; prints the
installed size of each distribution (its RECORD: files and their compiled .pyc), the share of
the dependencies the design card fixes in base (apache-beam, openai, pyarrow, tenacity, orjson,
with everything they require), and what else the base dependencies add:

    python3 -m venv /tmp/b && /tmp/b/bin/pip install -e . && du -sm /tmp/b
    /tmp/b/bin/python tests/bench/bench_install_size.py

A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

FIXED = ("apache-beam", "openai", "pyarrow", "tenacity", "orjson")


def _name(text: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", text).group(0).lower().replace("_", "-")


def sizes() -> dict[str, int]:
    """Bytes installed per distribution (from each one's RECORD)."""
    out = {}
    for dist in md.distributions():
        files = [Path(dist.locate_file(f)) for f in dist.files or ()]
        out[_name(dist.metadata["Name"])] = sum(p.stat().st_size for p in files if p.is_file())
    return out


def requirements(name: str) -> list[str]:
    """The distribution's own requirements (no extras)."""
    try:
        required = md.distribution(name).requires or []
    except md.PackageNotFoundError:
        return []
    return [_name(r) for r in required if "extra ==" not in r]


def closure(roots) -> set[str]:
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += requirements(name)
    return seen


def main() -> None:
    size = sizes()
    fixed, base = closure(FIXED), closure(["rt4chart"])
    mb = lambda names: sum(size.get(n, 0) for n in names) / 1e6  # noqa: E731
    print(f"all distributions: {mb(size):.0f} MB; the venv's own pip and setuptools: "
          f"{mb({'pip', 'setuptools'}):.0f} MB")
    print(f"fixed by the design card ({', '.join(FIXED)} and what they require): "
          f"{mb(fixed):.0f} MB")
    for name in sorted(fixed, key=lambda n: -size.get(n, 0))[:12]:
        print(f"  {size.get(name, 0) / 1e6:6.1f} MB  {name}")
    rest = base - fixed - {"rt4chart"}
    print(f"the other base dependencies: {mb(rest):.0f} MB")
    for name in sorted(rest, key=lambda n: -size.get(n, 0)):
        print(f"  {size.get(name, 0) / 1e6:6.1f} MB  {name}")


if __name__ == "__main__":
    main()
