"""`audit --max-usd` against the local OpenAI-compatible server with known prices: the run
stays within the cap and within about one trace's cost below it (rounds), every trace not
audited is in `skipped` with its reason, and `--redo` of the run completes them."""

from __future__ import annotations

import json
from collections import defaultdict

from fake_openai_server import FakeOpenAI, schema_name_of
from testutil import write_jsonl

PRICE = ("--judge-option", "price_input=10", "--judge-option", "price_output=40")


def traces(n: int) -> list[dict]:
    return [{"trace_id": f"t{i:02d}", "route": "checkout" if i % 2 else "search",
             "timestamp": "2024-05-01T09:30:00Z", "question": f"What does plan {i} cover?",
             "contexts": [{"doc_id": "p", "text": f"Plan {i} covers travel. Plan {i} excludes "
                                                   "pets. Claims take 5 days."}],
             "answer": f"Plan {i} covers travel." + (" It covers pets." if i % 3 else "")}
            for i in range(n)]


def cost_by_trace(tables) -> dict[str, float]:
    return {a["trace_id"]: a["cost_usd"] for a in tables["answers"]}


def test_max_usd_stays_within_one_trace_of_the_cap_and_redo_completes(tmp_path, audit):
    src = write_jsonl(tmp_path / "t.jsonl", traces(20))
    with FakeOpenAI() as server:
        base = (str(src), "--judge", "openai", "--base-url", server.base_url, "--model", "m",
                *PRICE)
        cap = 0.4
        code, tables, out = audit(*base, "--max-usd", str(cap), out=tmp_path / "capped")
        assert code == 0
        spent = sum(c["cost_usd"] for c in tables["costs"])
        per_trace = cost_by_trace(tables)
        assert spent <= cap
        assert spent >= cap - max(per_trace.values())  # within one trace of the cap
        skipped = tables["skipped"]
        assert skipped and per_trace  # the cap was reached, some were audited
        assert {s["trace_id"] for s in skipped}.isdisjoint(per_trace)
        assert {s["trace_id"] for s in skipped} | set(per_trace) == {f"t{i:02d}"
                                                                      for i in range(20)}
        assert all(s["reason"] == "max_usd" and s["cap_usd"] <= cap for s in skipped)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["skipped"] == len(skipped)
        assert summary["spend_cap"]["reached"] and summary["spend_cap"]["rounds"] >= 2
        assert abs(summary["spend_cap"]["spent_usd"] - spent) < 1e-9
        # The traffic columns after the rounds: every trace seen once, the audited ones and
        # those the cap left in `skipped`, and the summary's totals the same.
        rates = tables["route_rates"]
        assert sum(r["seen"] for r in rates) == 20 == summary["seen"]
        assert sum(r["audited"] for r in rates) == len(per_trace) == summary["audited"]
        assert sum(r["skipped_cap"] for r in rates) == len(skipped) == summary["skipped_cap"]

        code, redone, _ = audit("--redo", str(out), "--judge", "openai", "--base-url",
                                server.base_url, "--model", "m", *PRICE,
                                out=tmp_path / "redo")
    assert code == 0
    ids = defaultdict(int)
    for a in redone["answers"]:
        ids[a["trace_id"]] += 1
    assert set(ids) == {s["trace_id"] for s in skipped} and set(ids.values()) == {1}
    assert not redone["skipped"]


def test_a_cap_below_one_trace_audits_nothing_and_an_unpriced_model_is_refused(tmp_path,
                                                                               audit):
    src = write_jsonl(tmp_path / "t.jsonl", traces(3))
    with FakeOpenAI() as server:
        base = (str(src), "--judge", "openai", "--base-url", server.base_url, "--model", "m")
        code, _, _ = audit(*base, "--max-usd", "5", out=tmp_path / "unpriced")
        assert code == 2  # never an uncapped run
        probes = len(server.requests)
        code, tables, out = audit(*base, *PRICE, "--max-usd", "0.000001",
                                  out=tmp_path / "tiny")
        # no trace started: no judge call beyond the endpoint's probe at start
        started = [b for b in server.requests[probes:]
                   if schema_name_of(b) == "decompose"]
    assert code == 0 and started == []
    assert tables["answers"] == [] and len(tables["skipped"]) == 3
    assert all("max_usd" in s["detail"] for s in tables["skipped"])
    by_route = {r["route"]: r for r in tables["route_rates"]}
    assert {r: (v["seen"], v["audited"], v["skipped_cap"]) for r, v in by_route.items()} == {
        "search": (2, 0, 2), "checkout": (1, 0, 1)}
