"""Throughput of the Langfuse write-back against the local fake, printed (not a test).

    python tests/bench/bench_langfuse_write_back.py [--copies N] [--delay-ms MS]
        [--in-flight N ...]

Audits the example traces with the offline judge, copies their verdicts N times under new
trace ids (default 200: 1,000 traces), and writes them twice to tests/fakes/langfuse_server.py
(the second time every score is an upsert), for each --in-flight (traces written at a time,
default 1 and 8); prints traces, scores, scores held and scores/s. `--delay-ms` makes the fake
answer each request that late, as a remote server's round trip would.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))

from rt4chart.pipeline.annotate.langfuse import (  # noqa: E402
    LangfuseClient,
    LangfuseTarget,
)
from rt4chart.pipeline.annotate.langfuse_write import write_back  # noqa: E402
from rt4chart.pipeline.annotate.verdicts import (  # noqa: E402
    TraceVerdict,
    Verdicts,
    load_verdicts,
)
from rt4chart.pipeline.cli import main as cli  # noqa: E402
from rt4chart.pipeline.results.load import table_reader  # noqa: E402
from rt4chart.pipeline.run import jobs  # noqa: E402

from langfuse_server import PUBLIC_KEY, SECRET_KEY, LangfuseServer  # noqa: E402


def _copies(verdicts: list[TraceVerdict], n: int) -> list[TraceVerdict]:
    out = []
    for i in range(n):
        for v in verdicts:
            tid = f"{v.trace_id}-{i}"
            out.append(TraceVerdict({**v.answer, "trace_id": tid},
                                    tuple({**c, "trace_id": tid} for c in v.claims)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=200)
    parser.add_argument("--delay-ms", type=float, default=0.0)
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 8])
    args = parser.parse_args()
    os.environ.update(LANGFUSE_PUBLIC_KEY=PUBLIC_KEY, LANGFUSE_SECRET_KEY=SECRET_KEY)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        cli.main(["audit", jobs.example_traces(), "--out", str(out), "--judge", "offline"])
        many = _copies(load_verdicts(table_reader(str(out))).ready, args.copies)
    for in_flight in args.in_flight:
        with LangfuseServer() as server:
            server.state.delay_s = args.delay_ms / 1000
            target = LangfuseTarget(server.url, max_in_flight=in_flight)
            for n in (1, 2):
                start = time.monotonic()
                with LangfuseClient(target) as client:
                    result, _ = write_back(Verdicts(many), target, client)
                took = time.monotonic() - start
                print(f"in flight {in_flight}, delay {args.delay_ms:g} ms, write {n}: "
                      f"{result.annotated} traces, {result.scores} scores, "
                      f"{len(server.scores())} held, {took:.1f} s, "
                      f"{result.scores / took:.0f} scores/s")


if __name__ == "__main__":
    main()
