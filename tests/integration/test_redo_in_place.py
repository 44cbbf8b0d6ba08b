"""`--redo R --out R --overwrite` on a mixed run (a judge down for half of the traces the first
time): every complete answer of R and its rows stay, the redone answers replace the incomplete
ones, each answer is there once, the judge cache is kept and extended, and the aggregates and
the summary are over the whole run."""

from __future__ import annotations

import json
from collections import Counter

from testutil import read_tables, write_jsonl

CTX = "Tokyo is the capital of Japan. It has about 14 million inhabitants."
# Each answer its own text (so each judge call its own cache key); the judge is down at first
# for the calls about the sentences with FLAKY, in every other trace.
TRACES = [{"trace_id": f"t{i:02d}", "timestamp": f"2024-05-0{1 + i % 3}T09:30:00Z",
           "contexts": [CTX],
           "answer": f"Tokyo is the capital of Japan, says answer {i}."
                     + (f" Osaka is a FLAKY city, says answer {i}." if i % 2 else "")}
          for i in range(20)]
INVALID = {"trace_id": "no-contexts", "answer": "x"}  # a dead letter of stage validate


def _judge(down) -> tuple[str, ...]:
    return ("--judge", "fake_judges:keyword", "--judge-option", f"down_file={down}",
            "--judge-option", "down_on=FLAKY")


def _first_run(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", [*TRACES, INVALID])
    down = tmp_path / "down"
    down.write_text("the judge is down for FLAKY")
    code, first, out = audit(str(traces), *_judge(down), out=tmp_path / "R")
    assert code == 3  # answers left incomplete
    status = Counter(a["status"] for a in first["answers"])
    assert status == {"ok": 10, "incomplete": 10}
    down.unlink()
    return first, out, down


def _rows_of(rows: list[dict], ids: set[str]) -> list[dict]:
    return sorted((r for r in rows if r["trace_id"] in ids), key=json.dumps)


def test_redo_into_its_own_folder_keeps_every_complete_answer_once(tmp_path, audit):
    first, out, down = _first_run(tmp_path, audit)
    ok_ids = {a["trace_id"] for a in first["answers"] if a["status"] == "ok"}
    first_keys = {c["key"] for c in first["judge_cache"]}
    first_calls = sum(c["calls"] for c in first["costs"])
    assert first_keys

    code, after, _ = audit("--redo", str(out), "--overwrite", *_judge(down), out=out)
    assert code == 0
    ids = [a["trace_id"] for a in after["answers"]]
    assert sorted(ids) == sorted(t["trace_id"] for t in TRACES)  # each answer exactly once
    assert all(a["status"] == "ok" for a in after["answers"])
    # The complete answers of R and their claims are the same rows.
    norm = json.loads(json.dumps(after, default=str))
    before = json.loads(json.dumps(first, default=str))
    assert _rows_of(norm["answers"], ok_ids) == _rows_of(before["answers"], ok_ids)
    assert _rows_of(norm["claims"], ok_ids) == _rows_of(before["claims"], ok_ids)
    claim_keys = Counter((c["trace_id"], c["claim_index"]) for c in after["claims"])
    assert set(claim_keys.values()) == {1} and {t for t, _ in claim_keys} == set(ids)
    # The cache is kept and extended, one row per key.
    keys = [c["key"] for c in after["judge_cache"]]
    assert len(keys) == len(set(keys)) and first_keys < set(keys)
    # Dead letters: the invalid record's stays; the redone answers' stage-judge ones go.
    assert [(d["stage"], d["trace_id"]) for d in after["dead_letters"]] == [
        (d["stage"], d["trace_id"]) for d in first["dead_letters"] if d["stage"] != "judge"]
    assert any(d["trace_id"] == "no-contexts" for d in after["dead_letters"])
    # Rates and costs over the whole run, one row per route and day.
    windows = Counter((r["route"], r["window_start"]) for r in after["route_rates"])
    assert set(windows.values()) == {1}
    assert sum(r["traces"] for r in after["route_rates"]) == 20
    redone_calls = sum(a["judge_calls"] for a in after["answers"] if a["trace_id"] not in ok_ids)
    assert sum(c["calls"] for c in after["costs"]) == first_calls + redone_calls
    summary = json.loads((out / "summary.json").read_text())
    assert summary["traces"] == 20 and summary["incomplete"] == 0
    assert summary["dead_letters"] == 1


def test_a_redo_that_is_still_partly_down_keeps_the_still_incomplete_ones_for_the_next(
        tmp_path, audit):
    first, out, down = _first_run(tmp_path, audit)
    down.write_text("still down")
    code, after, _ = audit("--redo", str(out), "--overwrite", *_judge(down), out=out)
    assert code == 3  # answers left incomplete
    assert Counter(a["status"] for a in after["answers"]) == {"ok": 10, "incomplete": 10}
    assert sorted(a["trace_id"] for a in after["answers"]) == sorted(
        a["trace_id"] for a in first["answers"])
    judge_letters = sorted(d["trace_id"] for d in after["dead_letters"] if d["stage"] == "judge")
    assert judge_letters == sorted(a["trace_id"] for a in first["answers"]
                                   if a["status"] != "ok")
    down.unlink()  # and the next redo finds them
    code, last, _ = audit("--redo", str(out), "--overwrite", *_judge(down), out=out)
    assert code == 0 and len(last["answers"]) == 20
    assert all(a["status"] == "ok" for a in last["answers"])
    assert read_tables(out)["judge_cache"]


def test_a_redo_in_chunks_into_its_own_folder_keeps_every_answer_once(tmp_path, audit):
    first, out, down = _first_run(tmp_path, audit)
    code, after, _ = audit("--redo", str(out), "--overwrite", "--chunk-traces", "4",
                           *_judge(down), out=out)
    assert code == 0
    assert sorted(a["trace_id"] for a in after["answers"]) == sorted(
        t["trace_id"] for t in TRACES)
    assert all(a["status"] == "ok" for a in after["answers"])
    windows = Counter((r["route"], r["window_start"]) for r in after["route_rates"])
    assert set(windows.values()) == {1}
    assert sum(r["traces"] for r in after["route_rates"]) == 20
