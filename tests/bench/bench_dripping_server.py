"""A server that never finishes a reply (issue 47, point 3): how long `rt4chart audit` runs
against it, and what its answers say.

The test suite's local OpenAI-compatible server answers the start-up probe, then streams every
run call's reply one token every `--token-s` seconds forever (whitespace by default: a model
looping on line breaks), never a finish reason. The audit runs in a subprocess with the
interpreter given (`--python`: another checkout's venv measures the code before the change),
stopped by its PID after `--limit-s` if it has not ended by itself. Prints one line:

    .venv/bin/python tests/bench/bench_dripping_server.py [--token " "] [--token-s 1]
        [--limit-s 900] [--python PYTHON] [--judge-option KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKES = HERE.parent / "fakes"
sys.path[:0] = [str(FAKES)]

from sse_stream import Pace  # noqa: E402

import fake_judges as fj  # noqa: E402
from fake_openai_server import FakeOpenAI  # noqa: E402
from testutil import write_jsonl  # noqa: E402

SECOND = {"trace_id": "opening-hours", "route": "faq", "question": "When does it open?",
          "contexts": [{"doc_id": "hours", "text": "The library opens at 8 am on weekdays."}],
          "answer": "The library opens at 8 am on weekdays."}
CLI = "import sys\nfrom rt4chart.pipeline.cli import main\nsys.exit(main.main(sys.argv[1:]))\n"
READ = ("import sys, json\nfrom rt4chart.pipeline.results.summary import read_table\n"
        "rows = read_table(sys.argv[1], 'answers').to_pylist()\n"
        "print(json.dumps([[r['status'], r['reason']] for r in rows]))\n")


def run(python: str, base_url: str, traces: Path, out: Path, options: list[str],
        limit_s: float) -> tuple[str, float]:
    """The audit's outcome ("exit N" or "still running: stopped") and its seconds."""
    args = [python, "-c", CLI, "audit", str(traces), "--out", str(out), "--judge", "openai",
            "--base-url", base_url]
    for option in options:
        args += ["--judge-option", option]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    started = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    try:
        code = proc.wait(timeout=limit_s)
        return f"exit {code}", time.monotonic() - started
    except subprocess.TimeoutExpired:
        proc.kill()  # by its PID: the audit this script started
        proc.wait()
        return "still running: stopped", time.monotonic() - started


def answers(python: str, out: Path) -> list[tuple[str, str]]:
    if not (out / "answers").exists():
        return []
    import json

    done = subprocess.run([python, "-c", READ, str(out)], capture_output=True, text=True)
    return [tuple(row) for row in json.loads(done.stdout or "[]")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", default=" ")
    parser.add_argument("--token-s", type=float, default=1.0)
    parser.add_argument("--limit-s", type=float, default=900.0)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--judge-option", action="append", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI(
            pace=Pace(drip=args.token, token_s=args.token_s)) as server:
        traces = write_jsonl(Path(tmp) / "traces.jsonl", [fj.RUNNING_TRACE, SECOND])
        out = Path(tmp) / "out"
        outcome, took = run(args.python, server.base_url, traces, out, args.judge_option,
                            args.limit_s)
        rows = answers(args.python, out)
        sent = len(server.requests)
    incomplete = sum(status == "incomplete" for status, _ in rows)
    reason = rows[0][1] if rows else "no answers written"
    print(f"{args.token!r} every {args.token_s:g} s, options {args.judge_option or 'default'}: "
          f"{outcome} after {took:.0f} s; answers incomplete {incomplete}/{len(rows)}; "
          f"{sent} run call(s) sent; reason: {reason}")


if __name__ == "__main__":
    main()
