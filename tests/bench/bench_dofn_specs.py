"""What remembering Beam's DoFn specs for a run saves a batch audit (not a test).

    python tests/bench/bench_dofn_specs.py [--rounds 3] [--json figures.json]

Runs `rt4chart audit --example` (the offline judge, the bundled example traces) as a user runs
it, in a subprocess, `--rounds` times with pipeline/run/dofn_specs.py's memo and as many times
without it (Beam's `get_dofn_specs` asked afresh at each bundle), alternately, so that both
sides share the machine's load. Prints each side's CPU seconds (user + system) and wall seconds
per run, their medians, and the ratio of the medians. The streaming side of the same change is
`python tests/bench/bench_stream.py --compare-memo`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RT4CHART = [str(Path(sys.executable).parent / "rt4chart")]
# `rt4chart` with Beam's DoFn specs asked afresh each time, as before pipeline/run/dofn_specs.py
# (bench_stream.py --compare-memo runs it too)
WITHOUT_MEMO = [sys.executable, "-c", (
    "import contextlib, sys\n"
    "from rt4chart.pipeline.run import dofn_specs\n"
    "dofn_specs.memoized = lambda *a, **k: contextlib.nullcontext(False)\n"
    "from rt4chart.pipeline.launcher import main\n"
    "sys.exit(main(sys.argv[1:]))")]


def _audit(command: list[str], out: Path) -> tuple[float, float]:
    """One example audit: (CPU seconds of the process, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    subprocess.run([*command, "audit", "--example", "--out", str(out), "--overwrite"],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(cpu, 2), round(wall, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"with_memo": [], "without_memo": []}
    with tempfile.TemporaryDirectory() as tmp:
        _audit(RT4CHART, Path(tmp) / "warm")  # imports and pip's bytecode compiled once
        for i in range(args.rounds):
            runs["with_memo"].append(_audit(RT4CHART, Path(tmp) / f"with-{i}"))
            runs["without_memo"].append(_audit(WITHOUT_MEMO, Path(tmp) / f"without-{i}"))
    figures: dict = {"rounds": args.rounds, "load_average": os.getloadavg()[0]}
    for side, values in runs.items():
        figures[side] = {"cpu_s": [c for c, _ in values], "wall_s": [w for _, w in values],
                         "cpu_s_median": statistics.median(c for c, _ in values),
                         "wall_s_median": statistics.median(w for _, w in values)}
    figures["cpu_with_over_without"] = round(figures["with_memo"]["cpu_s_median"]
                                             / figures["without_memo"]["cpu_s_median"], 3)
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
