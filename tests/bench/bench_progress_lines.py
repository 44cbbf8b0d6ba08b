"""Progress lines in a log (issue 48, point 2): what a batch audit with stderr to a file writes.

The audit of the first `--traces` of tests/data/ragtruth_sample.jsonl runs in a subprocess
against the test suite's local OpenAI-compatible server, slowed to `--latency-s` per reply
and `--concurrency` calls at once (about 30 s with the defaults), with stderr to a file as
cron or CI would have it; the interpreter is `--python` (another checkout's venv measures the
code before a change). Prints how many progress lines the run wrote while it ran (the final
line apart), whether they are timestamped, the ETA each gave, then the first and last lines:

    .venv/bin/python tests/bench/bench_progress_lines.py [--latency-s 0.05] [--concurrency 4]
        [--every-s 5] [--traces 3] [--python PYTHON]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "fakes")]

from fake_openai_server import FakeOpenAI  # noqa: E402

SAMPLE = HERE.parent / "data" / "ragtruth_sample.jsonl"
CLI = "import sys\nfrom rt4chart.pipeline.cli import main\nsys.exit(main.main(sys.argv[1:]))\n"
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)")


def audit(python: str, base_url: str, traces: str, out: str, log: str, every_s: float,
          concurrency: int) -> tuple[int, float]:
    """Run the audit of `traces` with stderr to `log`; (exit code, seconds)."""
    args = [python, "-c", CLI, "audit", traces, "--out", out, "--judge", "openai",
            "--base-url", base_url, "--judge-option", "model=bench-model",
            "--judge-option", f"max_concurrency={concurrency}",
            "--progress-every", str(every_s)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env["OPENAI_API_KEY"] = "sk-bench-progress-0123456789abcdefghij"
    started = time.monotonic()
    with open(log, "w", encoding="utf-8") as err:
        code = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=err, env=env,
                              check=False, timeout=900).returncode
    return code, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-s", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--every-s", type=float, default=5.0)
    parser.add_argument("--traces", type=int, default=3, help="the sample's first N traces")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--all", action="store_true", help="print every progress line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-progress-") as tmp, \
            FakeOpenAI(latency_s=args.latency_s) as server:
        log, traces = os.path.join(tmp, "stderr.log"), os.path.join(tmp, "traces.jsonl")
        with open(SAMPLE, encoding="utf-8") as src, open(traces, "w", encoding="utf-8") as dst:
            dst.writelines(src.readlines()[: args.traces])
        code, seconds = audit(args.python, server.base_url, traces, os.path.join(tmp, "out"),
                              log, args.every_s, args.concurrency)
        text = Path(log).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if "progress:" in line]
    running = [line for line in lines if "(final)" not in line]
    etas = [m.group(1) if (m := re.search(r"ETA ([^,;]+)", line)) else "none"
            for line in running]
    print(f"exit {code}, {seconds:.0f} s, {len(running)} progress line(s) while running "
          f"(+{len(lines) - len(running)} final), every {args.every_s:g} s; "
          f"timestamped: {all(STAMP.match(line) for line in lines)}; ETAs: {etas}")
    for line in lines if args.all else (running[:1] + lines[-1:]) if running else lines[-1:]:
        print(line)


if __name__ == "__main__":
    main()
