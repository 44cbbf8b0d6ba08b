"""Spend cap figures for HANDOFF/README: --max-usd 0.4 over the 20 test traces (fake server,
known prices), then the same traces uncapped. Run: .venv/bin/python tests/bench/bench_spend_cap.py
"""
import json, sys, time
sys.path[:0] = ["tests/fakes", "tests/integration"]
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl, read_tables
from test_spend_cap import traces, PRICE
from pathlib import Path
from rt4chart.pipeline import cli
tmp = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/caps-measure"); import shutil; shutil.rmtree(tmp, ignore_errors=True); tmp.mkdir()
src = write_jsonl(tmp / "t.jsonl", traces(20))
with FakeOpenAI() as server:
    base = [str(src), "--judge", "openai", "--base-url", server.base_url, "--model", "m", *PRICE]
    for cap in ("0.4",):
        t = time.time()
        code = cli.main(["audit", *base, "--max-usd", cap, "--out", str(tmp / "capped")])
        s = json.loads((tmp / "capped" / "summary.json").read_text())
        tb = read_tables(tmp / "capped")
        costs = [a["cost_usd"] for a in tb["answers"]]
        res = [r["reservation_usd"] for r in tb["skipped"]]
        print("RESULT cap", cap, "code", code, "spent", s["spend_cap"]["spent_usd"], "rounds", s["spend_cap"]["rounds"],
              "audited", len(costs), "skipped", s["skipped"], "max trace", max(costs), "min trace", min(costs),
              "reservation of a skipped", res[:2], "seconds", round(time.time() - t, 1))
    code = cli.main(["audit", *base, "--out", str(tmp / "full")])
    s = json.loads((tmp / "full" / "summary.json").read_text())
    print("RESULT uncapped cost", s["cost_usd"], "traces", s["traces"])
