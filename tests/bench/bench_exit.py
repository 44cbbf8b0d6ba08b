"""Exit codes of the README's first command, run N times in a row.

    .venv/bin/python tests/bench/bench_exit.py [-n 20] [--out DIR]

Runs `rt4chart audit --example --out DIR --overwrite` (the console script next to this
Python) N times and prints each run's exit code and seconds, then the tally. A run that aborts
at exit (134, "terminate called without an active exception": a native thread still working
while the interpreter shuts down) is reported with the last lines of its stderr.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RT4CHART = str(Path(sys.executable).parent / "rt4chart")


def run_once(out: str) -> tuple[int, float, str]:
    """One run: its exit code, seconds and stderr."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    started = time.monotonic()
    proc = subprocess.run([RT4CHART, "audit", "--example", "--out", out, "--overwrite"],
                          capture_output=True, text=True, env=env, timeout=600)
    return proc.returncode, time.monotonic() - started, proc.stderr


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--runs", type=int, default=20)
    parser.add_argument("--out", help="output folder (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-exit-") as scratch:
        out = args.out or os.path.join(scratch, "out")
        codes: list[int] = []
        for i in range(1, args.runs + 1):
            code, seconds, stderr = run_once(out)
            codes.append(code)
            print(f"run {i:3d}: exit {code} ({seconds:.1f} s)", flush=True)
            if code != 0:
                print("  " + "\n  ".join(stderr.strip().splitlines()[-3:]), flush=True)
    tally = ", ".join(f"exit {c}: {n}" for c, n in sorted(collections.Counter(codes).items()))
    print(f"{len(codes)} runs: {tally}")
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    sys.exit(main())
