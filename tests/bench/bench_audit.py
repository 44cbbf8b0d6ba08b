"""Throughput of the batch audit on RAGTruth traces, printed as figures (not a test).

    python tests/bench/bench_audit.py [--data ../shared/data/ragtruth] [--repeat N]
        [--judge offline|instant] [beam options ...]

`offline` runs the lexical judge in process; `instant` runs the openai judge through the real
client against a local server that answers at once (pipeline + client overhead per call).
Prints traces/s, judge calls per trace and per-stage call counts, and writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))

from rt4chart.pipeline.cli import main as cli  # noqa: E402
from rt4chart.pipeline.eval.datasets import ragtruth_traces  # noqa: E402
from rt4chart.pipeline.results.summary import read_table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(HERE.parents[2] / "shared" / "data" / "ragtruth"))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--judge", choices=["offline", "instant"], default="offline")
    ap.add_argument("--json", help="write the figures here")
    args, beam_args = ap.parse_known_args()
    traces = list(ragtruth_traces(args.data))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "traces.jsonl"
        with open(path, "w") as fh:
            for r in range(args.repeat):
                for t in traces:
                    fh.write(json.dumps(dict(t, trace_id=f"{t['trace_id']}-{r}")) + "\n")
        out = Path(tmp) / "out"
        argv = ["audit", str(path), "--out", str(out), *beam_args]
        started = time.monotonic()
        if args.judge == "instant":
            import os

            from fake_openai_server import FakeOpenAI

            os.environ["OPENAI_API_KEY"] = "bench"
            with FakeOpenAI() as server:
                code = cli.main([*argv, "--judge", "openai", "--base-url", server.base_url,
                                 "--rpm", "1000000", "--tpm", "1000000000",
                                 "--max-concurrency", "64"])
        else:
            code = cli.main([*argv, "--judge", "offline"])
        seconds = time.monotonic() - started
        answers = read_table(str(out), "answers").to_pylist()
        claims = read_table(str(out), "claims").to_pylist()
    n = len(answers)
    calls = sum(a["judge_calls"] for a in answers)
    figures = {
        "judge": args.judge, "traces": n, "exit_code": code, "seconds": round(seconds, 2),
        "traces_per_s": round(n / seconds, 2), "calls": calls,
        "calls_per_trace": round(calls / n, 2), "claims_per_trace": round(len(claims) / n, 2),
        "calls_per_s": round(calls / seconds, 1), "beam_args": beam_args,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
