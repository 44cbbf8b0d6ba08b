"""Answers completed by a slow-but-steady server (the local fake server at a llama.cpp-on-a-busy-
machine pace: 0.5 s to the first token, then 10 tokens a second): replies read whole under a
fixed timeout (`stream=false`, as before issue 33) against replies read as a stream with an
idle timeout between tokens. Without a real model server (see bench_busy_llama.py for one):

    .venv/bin/python tests/bench/bench_slow_stream.py [--timeout-s 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "fakes")]

from sse_stream import Pace  # noqa: E402

from rt4chart.pipeline.cli import main as cli  # noqa: E402
from rt4chart.pipeline.results.summary import read_table  # noqa: E402

import fake_judges as fj  # noqa: E402
from fake_openai_server import FakeOpenAI  # noqa: E402
from testutil import write_jsonl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout-s", type=float, default=2.0)
    parser.add_argument("--idle-timeout-s", type=float, default=2.0)
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = "sk-bench-not-a-key-000000"
    with tempfile.TemporaryDirectory() as tmp:
        traces = write_jsonl(Path(tmp) / "t.jsonl", [fj.RUNNING_TRACE])
        for stream in (False, True):
            out = Path(tmp) / f"out-{stream}"
            with FakeOpenAI(fj.running_example_responder,
                            pace=Pace(first_s=0.5, token_s=0.1)) as server:
                started = time.monotonic()
                cli.main(["audit", str(traces), "--out", str(out), "--judge", "openai",
                          "--base-url", server.base_url, "--judge-option", "max_attempts=2",
                          "--judge-option", f"timeout_s={args.timeout_s:g}",
                          "--judge-option", f"idle_timeout_s={args.idle_timeout_s:g}",
                          "--judge-option", f"stream={str(stream).lower()}"])
                took = time.monotonic() - started
            claims = read_table(str(out), "claims").to_pylist()
            answers = read_table(str(out), "answers").to_pylist()
            mode = "streamed, idle timeout" if stream else "whole, fixed timeout"
            print(f"{mode:<24} answers complete {sum(a['status'] == 'ok' for a in answers)}/"
                  f"{len(answers)}, claims judged {sum(c['status'] == 'ok' for c in claims)}/"
                  f"{len(claims)} in {took:.0f} s (timeout_s={args.timeout_s:g}, "
                  f"idle_timeout_s={args.idle_timeout_s:g})")


if __name__ == "__main__":
    main()
