"""End to end: `rt4chart stream` as a user runs it, against the Pub/Sub emulator.

Publishes valid, malformed, duplicated and late traces; waits (bounded) until the verdicts,
rates, dead letters and an alert are out; stops the stream with SIGTERM; checks each valid trace
was audited exactly once and each malformed one dead-lettered with its reason.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson

from rt4chart.pipeline.cli import main as cli

from testutil import read_tables, wait_for

FAKES = Path(__file__).parents[1] / "fakes"
CONTEXT = "The sky is blue today. Grass is green in spring."
DEADLINE_S = 240


def _trace(trace_id: str, route: str, event_s: float, answer: str) -> dict:
    return {"trace_id": trace_id, "route": route,
            "timestamp": datetime.fromtimestamp(event_s, tz=UTC).isoformat(),
            "question": "What colour is the sky?", "contexts": [CONTEXT], "answer": answer}


def _start_stream(topics, out: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": f"{FAKES}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("OPENAI_API_KEY", None)
    command = [
        str(Path(sys.executable).parent / "rt4chart"), "stream",
        "--subscription", topics.traces_sub, "--out", str(out),
        "--dead-letter-topic", topics.dead_letters, "--alerts-topic", topics.alerts,
        "--judge", "fake_judges:keyword", "--early-firing", "2", "--allowed-lateness", "600",
        "--alert-rate", "0.5", "--alert-relative", "0", "--alert-min-traces", "20",
    ]
    return subprocess.Popen(command, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)



def test_stream_audits_each_trace_once_dead_letters_bad_ones_and_alerts(pubsub, topics, tmp_path):
    out, log = tmp_path / "out", tmp_path / "stream.log"
    now = time.time()
    event_s = (now // 300) * 300 + 1  # every on-time trace in the current 5-minute window
    bad_route = [_trace(f"bad-{i}", "checkout", event_s,
                        "The sky is WRONG today." if i % 3 else "The sky is blue today.")
                 for i in range(24)]  # 16 of 24 contradicted
    good_route = [_trace(f"good-{i}", "faq", event_s, "The sky is blue today.")
                  for i in range(8)]
    late = _trace("late-1", "faq", now - 3 * 3600, "MADEUP, and three hours late.")
    malformed = [(b"{this is not json", {"trace_id": "broken-json"}),
                 (orjson.dumps({"trace_id": "no-contexts", "answer": "x"}), {}),
                 (orjson.dumps({"contexts": [CONTEXT], "answer": "no id"}), {})]
    process = _start_stream(topics, out, log)
    try:
        sent: dict[str, float] = {}
        for record in [*bad_route, *good_route, late]:
            _, sent[record["trace_id"]] = pubsub.publish(topics.traces, orjson.dumps(record))
        for record in bad_route[:3]:  # producer retries: the same traces again
            pubsub.publish(topics.traces, orjson.dumps(record))
        for data, attributes in malformed:
            pubsub.publish(topics.traces, data, **attributes)
        deadline = time.monotonic() + DEADLINE_S
        expected = set(sent)

        def answers_done() -> bool:
            rows = read_tables(out)["answers"] if (out / "answers").exists() else []
            return {r["trace_id"] for r in rows} >= expected

        wait_for(answers_done, deadline, process, log, "every answer")
        alerts = pubsub.pull_all(topics.alerts_sub, max(1.0, deadline - time.monotonic()),
                                 expect=1)
        dead_messages = pubsub.pull_all(topics.dead_letters_sub, 30, expect=6)

        def rates_done() -> bool:
            # Both routes' windows complete (a busy machine may write one route's pane later).
            rows = read_tables(out)["route_rates"]
            return all(any(r["route"] == route and r["traces"] == n for r in rows)
                       for route, n in (("checkout", 24), ("faq", 8)))

        wait_for(rates_done, deadline, process, log, "the windowed rates")
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
            raise
    assert code == 0, log.read_text()[-3000:]
    tables = read_tables(out)

    # Every valid trace audited exactly once, with the label its answer deserves.
    counts = Counter(a["trace_id"] for a in tables["answers"])
    assert set(counts) == expected and set(counts.values()) == {1}
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert sum(answers[t["trace_id"]]["label"] == "CON" for t in bad_route) == 16
    assert all(answers[t["trace_id"]]["label"] == "ENT" for t in good_route)
    assert answers["late-1"]["late"] is True and answers["late-1"]["label"] == "NIC"
    assert not any(answers[t]["late"] for t in expected - {"late-1"})

    # Malformed and duplicated messages: dead letters with their reasons, in the table and on
    # the dead-letter topic with the payload as published.
    dead = tables["dead_letters"]
    reasons = Counter(d["stage"] for d in dead)
    assert reasons == {"validate": 3, "dedupe": 3}
    assert {d["trace_id"] for d in dead if d["stage"] == "dedupe"} == {"bad-0", "bad-1", "bad-2"}
    by_payload = {m.data: m.attributes for m in dead_messages}
    assert by_payload[b"{this is not json"]["stage"] == "validate"
    assert "not valid JSON" in by_payload[b"{this is not json"]["reason"]
    assert by_payload[b"{this is not json"]["trace_id"] == "broken-json"
    assert any("contexts" in a["reason"] for a in by_payload.values())
    assert len(dead_messages) == 6

    # Windowed rates: the latest pane of the window holds all of it; the late trace is not in.
    latest = {}
    for r in tables["route_rates"]:
        key = (r["route"], r["window_start"])
        if key not in latest or r["pane_index"] > latest[key]["pane_index"]:
            latest[key] = r
    checkout = [r for (route, _), r in latest.items() if route == "checkout"]
    assert len(checkout) == 1 and (checkout[0]["traces"], checkout[0]["hallucinated"]) == (24, 16)
    assert checkout[0]["rate_low"] < 16 / 24 < checkout[0]["rate_high"]
    faq = [r for (route, _), r in latest.items() if route == "faq"]
    assert [(r["traces"], r["hallucinated"]) for r in faq] == [(8, 0)]

    # One alert for the degraded route, published with samples of its hallucinated traces.
    assert len(alerts) == 1
    alert = orjson.loads(alerts[0].data)
    assert alert["route"] == "checkout" and alert["rule"] == "absolute"
    assert alert["rate"] > 0.5 and alert["traces"] >= 20
    assert alert["sample_trace_ids"] and all(
        answers[t]["label"] == "CON" for t in alert["sample_trace_ids"])
    assert [a["route"] for a in tables["alerts"]] == ["checkout"]

    # The HTML report of the stream's output shows the latest pane of each window.
    traces_file = tmp_path / "published.jsonl"
    traces_file.write_text("".join(orjson.dumps(t).decode() + "\n"
                                   for t in [*bad_route, *good_route, late]))
    html_path = tmp_path / "report.html"
    assert cli.main(["report", str(out), "--traces", str(traces_file),
                     "--out", str(html_path)]) == 0
    html = html_path.read_text()
    row = re.search(r'<tr data-route="checkout">.*?</tr>', html.split('id="route-rates"')[1])
    assert row and 'data-value="0.666667"' in row.group(0) and "<td>24</td>" in row.group(0)
    assert 'id="trace-bad-1' in html or "bad-1" in html
