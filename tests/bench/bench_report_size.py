"""Size of `rt4chart report` for 200 audited answers (issue 48: 8.5 MB with plotly.js inlined).

Audits 200 traces (tests/data/ragtruth_sample.jsonl, 40 traces, each repeated 5 times under a
new id) with the offline judge, writes the report and prints its size. Give one or more
`rt4chart` executables to compare installs, e.g. main's and this branch's:

    .venv/bin/python tests/bench/bench_report_size.py /tmp/main-venv/bin/rt4chart .venv/bin/rt4chart

A benchmark, not a test: it prints figures and asserts nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "ragtruth_sample.jsonl"
ANSWERS = 200


def write_traces(path: Path, n: int = ANSWERS) -> None:
    """`n` traces: the sample's, repeated under new trace ids."""
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            record = dict(records[i % len(records)])
            record["trace_id"] = f"{record['trace_id']}-{i // len(records)}"
            fh.write(json.dumps(record) + "\n")


def report_size(rt4chart: str, work: Path) -> int:
    """Bytes of the report `rt4chart` writes for the 200 traces in `work`."""
    run, html = work / "run", work / "report.html"
    subprocess.run([rt4chart, "audit", str(work / "traces.jsonl"), "--judge", "offline",
                    "--out", str(run), "--overwrite"], check=True, capture_output=True,
                   timeout=1800)
    subprocess.run([rt4chart, "report", str(run), "--out", str(html)], check=True,
                   capture_output=True, timeout=600)
    return html.stat().st_size


def main(executables: list[str]) -> None:
    for exe in executables or [str(Path(sys.executable).with_name("rt4chart"))]:
        with tempfile.TemporaryDirectory(prefix="rt4chart-bench-report-") as tmp:
            work = Path(tmp)
            write_traces(work / "traces.jsonl")
            size = report_size(exe, work)
            print(f"{exe}: report for {ANSWERS} answers: {size:,} bytes "
                  f"({size / 1e6:.2f} MB)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
