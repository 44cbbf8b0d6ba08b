"""Spend-cap figures for the README: `--max-usd 0.4` over the 20 traces of
tests/integration/test_spend_cap.py (fake OpenAI-compatible server, known prices), then the
same traces uncapped. Run: .venv/bin/python tests/bench/bench_spend_cap.py [WORK_DIR]
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "fakes"), str(HERE.parent / "integration")]

from test_spend_cap import PRICE, traces  # noqa: E402

from rt4chart.pipeline.cli import main as cli  # noqa: E402

from fake_openai_server import FakeOpenAI  # noqa: E402
from testutil import read_tables, write_jsonl  # noqa: E402


def main(work: Path, cap: str = "0.4") -> None:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    src = write_jsonl(work / "t.jsonl", traces(20))
    with FakeOpenAI() as server:
        base = [str(src), "--judge", "openai", "--base-url", server.base_url, "--model", "m",
                *PRICE]
        started = time.monotonic()
        code = cli.main(["audit", *base, "--max-usd", cap, "--out", str(work / "capped")])
        seconds = time.monotonic() - started
        summary = json.loads((work / "capped" / "summary.json").read_text())
        costs = [a["cost_usd"] for a in read_tables(work / "capped")["answers"]]
        cap_record = summary["spend_cap"]
        print(f"cap {cap}: exit {code}, spent {cap_record['spent_usd']:.4f}, rounds "
              f"{cap_record['rounds']}, audited {len(costs)}, skipped {summary['skipped']}, "
              f"trace cost {min(costs):.4f}..{max(costs):.4f}, {seconds:.1f} s")
        cli.main(["audit", *base, "--out", str(work / "full")])
        full = json.loads((work / "full" / "summary.json").read_text())
        print(f"uncapped: {full['traces']} traces, {full['cost_usd']:.4f}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/caps-bench"))
