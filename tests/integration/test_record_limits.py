"""Records at and beyond the edges later stages rely on, through a whole audit run."""

from __future__ import annotations

from testutil import write_jsonl

BASE = {"contexts": ["Paris is the capital of France. It lies on the Seine."],
        "answer": "Paris is the capital of France."}


def test_edge_records_are_audited_or_dead_lettered_and_the_run_succeeds(tmp_path, audit):
    records = [
        dict(BASE, trace_id="first", timestamp="0001-01-01T00:00:00Z"),
        dict(BASE, trace_id="last", timestamp="9999-12-31T23:59:59Z"),
        dict(BASE, trace_id="ok", timestamp="2024-05-01T12:00:00Z"),
        dict(BASE, trace_id="y0", timestamp="0001-01-01T00:00:00+01:00"),
        dict(BASE, trace_id="y10k", timestamp="9999-12-31T23:59:59-14:00"),
        dict(BASE, trace_id="long-answer", answer="Paris is big. " * 300),
        dict(BASE, trace_id="i" * 257),
    ]
    code, tables, _ = audit(str(write_jsonl(tmp_path / "t.jsonl", records)), "--judge", "offline")
    assert code == 0
    answers = {a["trace_id"]: a for a in tables["answers"]}
    assert sorted(answers) == ["first", "last", "ok"]
    assert answers["first"]["event_time"].year == 1 and answers["last"]["event_time"].year == 9999
    audited_days = sorted(r["day"] for r in tables["route_rates"] if r["audited"])
    assert audited_days == ["0001-01-01", "2024-05-01", "9999-12-31"]
    # The two dead letters without a timestamp (the long answer, the long trace id) are counted
    # on the day they were read, in a row of their own that audited nothing; y0 and y10k, whose
    # timestamps are out of range, on that day too: nothing is left out of the traffic.
    others = [r for r in tables["route_rates"] if not r["audited"]]
    assert sum(r["dead_lettered"] for r in others) + sum(
        r["dead_lettered"] or 0 for r in tables["route_rates"] if r["audited"]) == 4
    assert all(r["traces"] == 0 and r["rate"] is None for r in others)
    dead = sorted((d["stage"], d["trace_id"] or "", d["reason"]) for d in tables["dead_letters"])
    assert [(stage, trace_id) for stage, trace_id, _ in dead] == [
        ("segment", "long-answer"), ("validate", ""), ("validate", "y0"), ("validate", "y10k")]
    assert dead[0][2] == ("over limit max_answer_sentences=250: the answer has more than 250 "
                          "sentences")
    assert "'trace_id' is 257 characters long" in dead[1][2]
    assert all("out of range" in reason for _, _, reason in dead[2:])
