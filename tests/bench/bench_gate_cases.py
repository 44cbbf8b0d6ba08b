"""How many of the runs `rt4chart gate` must refuse or fail it passes (issue 47).

    .venv/bin/python tests/bench/bench_gate_cases.py

Makes the runs of tests/fakes/gate_cases.py (five real audits with a custom judge, and a
failed and a cut run folder as a crash leaves them) in a temporary folder, runs
`rt4chart gate` on each of the nine should-fail cases, on a run an audit still holds (its
folder lock taken) and on the run they all differ from (which must pass), and prints each exit
code and the tally: "should-fail cases passing: N/9" (exit 0 where the gate must exit 1 or 2).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fakes"))

import gate_cases  # noqa: E402 - the fakes folder is not a package


def gate(args: tuple[str, ...]) -> int:
    from rt4chart.pipeline.cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            return cli.main(["gate", *args])
    except SystemExit as exc:
        return int(exc.code or 0)


def main() -> int:
    from rt4chart.pipeline.storage.run_lock import FolderLock

    with tempfile.TemporaryDirectory(prefix="rt4chart-gate-cases-") as root:
        runs = gate_cases.make_runs(Path(root))
        cases = gate_cases.should_fail(runs)
        passing = 0
        for case in cases:
            code = gate(case.args)
            passing += code == 0
            print(f"{case.name}: exit {code} (must be {case.expected})")
        lock = FolderLock(runs["pass-copy"])  # what a running audit holds
        lock.acquire()
        try:
            code = gate((runs["pass-copy"], "--max-rate", "0.05"))
        finally:
            lock.release()
        print(f"a run still being written (its folder locked): exit {code} (must be 2)")
        control = gate_cases.should_pass(runs)
        code = gate(control.args)
        print(f"{control.name}: exit {code} (must be 0)")
        print(f"should-fail cases passing: {passing}/{len(cases)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
