"""Print each CI part's total time and its slowest test files, from pytest's JUnit XML files.

    python .ci/file_times.py LOGS/*.xml

The parts run side by side, so a part's time is what the whole suite waits for: these figures
are what the parts in .ci/run are balanced by.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

TOP = 12


def file_times(path: Path) -> dict[str, float]:
    times: dict[str, float] = defaultdict(float)
    for case in ET.parse(path).iter("testcase"):
        module = case.get("classname", "").split("::")[0]
        name = "/".join(p for p in module.split(".") if p[:1].islower() or p[:1] == "_")
        times[name or "?"] += float(case.get("time") or 0)
    return times


def main(paths: list[str]) -> int:
    for path in map(Path, paths):
        try:
            times = file_times(path)
        except (OSError, ET.ParseError) as exc:
            print(f"{path.stem}: no timings ({exc})")
            continue
        print(f"--- {path.stem}: {sum(times.values()) / 60:.1f} min in {len(times)} files ---")
        for name, seconds in sorted(times.items(), key=lambda kv: -kv[1])[:TOP]:
            print(f"{seconds:8.1f} s  {name}.py")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
