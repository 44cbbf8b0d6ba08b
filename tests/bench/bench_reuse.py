"""What a backfill with `--reuse` pays for, after a retriever change (not a test).

    python tests/bench/bench_reuse.py [--traces 40] [--changed 0.1] [--json out.json]

Audits the RAGTruth sample with the openai judge (real client, local server), then "changes the
retriever" for a share of the traces (one more passage in their context) and audits again with
`--reuse` of the first run. Prints the calls and tokens paid in each run and the reuse rate.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "fakes"))

from rt4chart.pipeline.cli import main as cli  # noqa: E402

from fake_openai_server import FakeOpenAI  # noqa: E402
from testutil import load_traces, read_tables, write_jsonl  # noqa: E402


def _run(server: FakeOpenAI, traces: Path, out: Path, *extra: str) -> dict:
    code = cli.main(["audit", str(traces), "--judge", "openai", "--base-url", server.base_url,
                     "--rpm", "100000", "--tpm", "100000000", "--out", str(out), *extra])
    answers = read_tables(out)["answers"]
    return {"exit": code, "calls_paid": sum(a["judge_calls"] for a in answers),
            "calls_reused": sum(a["reused_calls"] for a in answers),
            "input_tokens": sum(a["input_tokens"] for a in answers),
            "cost_usd": round(sum(a["cost_usd"] for a in answers), 6)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=40)
    ap.add_argument("--changed", type=float, default=0.1, help="share of traces re-retrieved")
    ap.add_argument("--json")
    args = ap.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-secret")
    records = load_traces(HERE.parent / "data" / "ragtruth_sample.jsonl")[: args.traces]
    changed = json.loads(json.dumps(records))
    picked = random.Random(0).sample(range(len(changed)), max(1, int(args.changed * len(changed))))
    for i in picked:
        changed[i]["contexts"].append({"doc_id": "new", "text": "A passage the new retriever "
                                       "found, about something else entirely."})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        with FakeOpenAI() as server:
            first = _run(server, write_jsonl(tmp / "a.jsonl", records), tmp / "a")
            second = _run(server, write_jsonl(tmp / "b.jsonl", changed), tmp / "b",
                          "--reuse", str(tmp / "a"))
    total = second["calls_paid"] + second["calls_reused"]
    figures = {"traces": len(records), "changed_traces": len(picked), "first_run": first,
               "backfill_with_reuse": second,
               "reuse_rate": round(second["calls_reused"] / total, 3) if total else None,
               "cost_saved": round(1 - second["cost_usd"] / first["cost_usd"], 3)}
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
