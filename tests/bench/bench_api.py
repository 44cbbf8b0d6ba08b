"""The Python API's overhead against the command line, on the same records.

    .venv/bin/python tests/bench/bench_api.py [--sizes 1 100] [--repeats 3]

For each size N, N traces (the bundled example traces under fresh ids) are audited with the
offline judge (no network, so the figures are the machinery's, not a model's) in four ways:

- `api`: `rt4chart.audit(records, judge="offline")` in this process (records in memory;
  written to a temporary JSON lines file, audited, the tables read back as typed results);
- `auditor`: the same through one `rt4chart.Auditor` kept between calls;
- `cli in-process`: `rt4chart.pipeline.cli.main(["audit", FILE, ...])` in this process (the
  same job, tables left in a folder, nothing read back);
- `cli process`: `rt4chart audit FILE ...` as a new process (what a shell user pays:
  interpreter start and imports included).

The first call of the process (imports, Beam's start) is made before timing and reported
apart. Prints the median seconds of each way, and the API's overhead over `cli in-process`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RT4CHART = str(Path(sys.executable).parent / "rt4chart")


def traces(n: int) -> list[dict]:
    from rt4chart.pipeline.run.jobs import example_traces

    examples = [json.loads(line) for line in Path(example_traces()).read_text().splitlines()
                if line.strip()]
    return [{**examples[i % len(examples)], "trace_id": f"bench-{i}"} for i in range(n)]


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def ways(records: list[dict], scratch: Path):
    """name -> a call auditing `records` once."""
    import rt4chart
    from rt4chart.pipeline.cli import main as cli

    path = scratch / f"traces-{len(records)}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    auditor = rt4chart.Auditor("offline")
    counter = iter(range(10**6))

    def out() -> str:
        return str(scratch / f"out-{len(records)}-{next(counter)}")

    return {
        "api": lambda: rt4chart.audit(records, judge="offline"),
        "auditor": lambda: auditor.audit(records),
        "cli in-process": lambda: cli.main(["audit", str(path), "--judge", "offline",
                                            "--out", out()]),
        "cli process": lambda: subprocess.run(
            [RT4CHART, "audit", str(path), "--judge", "offline", "--out", out()],
            check=True, capture_output=True, timeout=1800),
    }


def own_steps(records: list[dict], scratch: Path, out: str) -> tuple[float, float]:
    """Seconds of what the API adds to the command's job: making the records ready as the
    graph's elements (sources/memory.py), and reading the run's tables back as typed results
    (of the run in `out`)."""
    from rt4chart.pipeline.results.runs import read_run_tables, result_of
    from rt4chart.pipeline.sources.memory import memory_records

    write = timed(lambda: memory_records(records))
    read = timed(lambda: result_of(read_run_tables(out), None))
    return write, read


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import contextlib
    import io
    import logging

    logging.disable(logging.WARNING)  # the CLI's INFO lines would bury the figures
    with tempfile.TemporaryDirectory(prefix="bench-api-") as scratch:
        import rt4chart

        first = timed(lambda: rt4chart.audit(traces(1), judge="offline"))
        print(f"first call of the process (imports, Beam's start): {first:.2f} s")
        print(f"{'traces':>6}  {'way':<15} {'median s':>9}  runs")
        for n in args.sizes:
            calls = ways(traces(n), Path(scratch))
            runs: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(args.repeats):  # round robin: each way sees the same load
                for name, call in calls.items():
                    with contextlib.redirect_stdout(io.StringIO()):
                        runs[name].append(timed(call))
                    print(f"  ({n} traces, {name}: {runs[name][-1]:.2f} s)", file=sys.stderr,
                          flush=True)
            medians = {name: statistics.median(r) for name, r in runs.items()}
            for name, r in runs.items():
                print(f"{n:>6}  {name:<15} {medians[name]:>9.2f}  "
                      + " ".join(f"{x:.2f}" for x in r), flush=True)
            over = medians["api"] - medians["cli in-process"]
            kept = str(Path(scratch) / f"out-{n}-0")  # the first cli in-process run's tables
            write, read = own_steps(traces(n), Path(scratch), kept)
            print(f"{n:>6}  api - cli in-process (medians): {over:+.2f} s "
                  f"({over / medians['cli in-process']:+.0%}); auditor - cli in-process: "
                  f"{medians['auditor'] - medians['cli in-process']:+.2f} s", flush=True)
            print(f"{n:>6}  the API's own steps: records made ready {write * 1000:.1f} ms, "
                  f"tables read back as typed results {read * 1000:.1f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
