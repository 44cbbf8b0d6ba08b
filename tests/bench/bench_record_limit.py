"""Peak memory of auditing input with one huge line (not a test).

    .venv/bin/python tests/bench/bench_record_limit.py [--line-mb 1024] [--limit 16M]
        [--rt4chart PATH]

Writes, lazily through a FIFO (nothing of the line exists on disk or whole in memory), a
JSONL input of one valid trace, one trace whose answer is a single line of `--line-mb` MB,
then another valid trace, and runs `rt4chart audit FIFO --max-record-bytes LIMIT` with the
offline judge in a subprocess. Prints its exit code, peak resident memory (os.wait4), wall
time, what was audited and dead-lettered, and the peak as a multiple of the limit. On the
main branch before --max-record-bytes, an 800 MB line ended in SIGSEGV at 4.9 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RT4CHART = str(Path(sys.executable).parent / "rt4chart")
CHUNK = b"x" * (1 << 20)


def _trace(trace_id: str) -> bytes:
    return json.dumps({"trace_id": trace_id, "contexts": ["The shop opens at 9 am."],
                       "answer": "The shop opens at 9 am."}).encode() + b"\n"


def _write(fifo: str, line_mb: int) -> None:
    with open(fifo, "wb") as fh:
        fh.write(_trace("before"))
        fh.write(b'{"trace_id": "huge", "contexts": ["c"], "answer": "')
        for _ in range(line_mb):
            fh.write(CHUNK)
        fh.write(b'"}\n')
        fh.write(_trace("after"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--line-mb", type=int, default=1024)
    parser.add_argument("--limit", default="16M")
    parser.add_argument("--rt4chart", default=RT4CHART)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "input.fifo")
        os.mkfifo(fifo)
        writer = threading.Thread(target=_write, args=(fifo, args.line_mb), daemon=True)
        writer.start()
        out = os.path.join(tmp, "out")
        started = time.monotonic()
        proc = subprocess.Popen(
            [args.rt4chart, "audit", fifo, "--judge", "offline", "--out", out,
             "--max-record-bytes", args.limit], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        err = proc.stderr.read().decode(errors="replace")
        code = os.waitstatus_to_exitcode(status)
        peak_mb = usage.ru_maxrss / 1024
        print(f"line {args.line_mb} MB, limit {args.limit}: exit {code}, peak RSS "
              f"{peak_mb:,.0f} MB, wall {wall:.1f} s")
        summary = Path(out, "summary.json")
        if summary.exists():
            record = json.loads(summary.read_text())
            print(f"traces audited {record.get('traces')}, dead letters "
                  f"{record.get('dead_letters')}")
        else:
            print("no summary:", err[-2000:])
        from rt4chart.pipeline.storage.text_files import byte_size

        print(f"peak / limit: {peak_mb * (1 << 20) / byte_size(args.limit):.1f}x")


if __name__ == "__main__":
    sys.exit(main())
