"""A batch audit in chunks (`--chunk-traces`, pipeline/run/chunked_audit.py) through the CLI: the
same tables as one run over the whole input, a trace_id in two files audited once, --reuse working
across chunks, and a failed run leaving the earlier run as it was."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from rt4chart.pipeline.cli import main as cli

from testutil import read_tables, write_jsonl

KEYWORD = ("--judge", "fake_judges:keyword")
CTX = "The museum opened in 1990. It is free on Sundays. It closes at 6 pm."
# Columns that tell when a row was written, not what the audit found.
VOLATILE = {"audited_at", "emitted_at", "received_at", "created_at"}


def _trace(trace_id: str, answer: str, when: str, route: str = "museum") -> dict:
    return {"trace_id": trace_id, "route": route, "timestamp": when, "contexts": [CTX],
            "answer": answer}


FILE_A = [
    _trace("dup", "The museum opened in 1990.", "2024-05-01T10:00:00Z"),
    _trace("t-a1", "The museum opened in 1990. It is WRONG on Sundays.", "2024-05-01T11:00:00Z"),
    _trace("t-a2", "It closes at 6 pm.", "2024-05-02T09:00:00Z", route="hours"),
    {"trace_id": "bad", "contexts": "not a list", "answer": "x"},  # a dead letter
    _trace("t-a3", "It is free on Sundays.", "2024-05-02T10:00:00Z"),
]
FILE_B = [
    # The earlier copy of "dup", in the second file: one run keeps it, so must chunks.
    _trace("dup", "The museum opened in 1990. It has a MADEUP cafe.", "2024-05-01T08:00:00Z"),
    _trace("t-b1", "It has a MADEUP garden.", "2024-05-01T12:00:00Z", route="hours"),
    _trace("t-b2", "The museum opened in 1990.", "2024-05-03T09:00:00Z"),
]


def _rows(out: Path) -> dict[str, list]:
    """Every table's rows without the write times, in a canonical order (floats rounded)."""
    def clean(value):
        if isinstance(value, float):
            return round(value, 9)
        if isinstance(value, list):
            return [clean(v) for v in value]
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        return value

    return {name: sorted(json.dumps({k: clean(v) for k, v in row.items() if k not in VOLATILE},
                                    default=str, sort_keys=True) for row in rows)
            for name, rows in read_tables(out).items()}


def _audit(*args: str) -> int:
    return cli.main(["audit", *args, *KEYWORD])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The same two files audited in one run and in chunks of 3 traces."""
    tmp = tmp_path_factory.mktemp("chunked")
    inputs = (str(write_jsonl(tmp / "a.jsonl", FILE_A)), str(write_jsonl(tmp / "b.jsonl", FILE_B)))
    outs = {"one": tmp / "one", "chunked": tmp / "chunked"}
    assert _audit(*inputs, "--out", str(outs["one"]), "--chunk-traces", "0") == 0
    assert _audit(*inputs, "--out", str(outs["chunked"]), "--chunk-traces", "3") == 0
    return {**outs, "tmp": tmp, "a": Path(inputs[0]), "b": Path(inputs[1])}


def test_chunks_write_the_tables_one_run_writes(runs):
    chunked = runs["chunked"]
    # It did run in chunks: ceil(8 records / 3) shards, each chunk's files named by it.
    # Files sit in day folders (answers/dt=YYYY-MM-DD/), one per chunk and day at most.
    answers = chunked / "answers"
    files = sorted(p.relative_to(answers).as_posix() for p in answers.rglob("*.parquet"))
    chunks = {p.rsplit("/", 1)[-1].split("-")[1] for p in files}
    assert chunks == {f"c{i:05d}" for i in range(math.ceil(8 / 3))}
    assert {p.name for p in (chunked / "route_rates").rglob("*.parquet")} == {
        "part-cagg-00000-of-00001.parquet"}
    assert not [p for p in chunked.rglob("*") if ".tmp-" in str(p) or ".staging-" in str(p)]
    manifest = json.loads((chunked / "_rt4chart_manifest.json").read_text())
    assert "answers/" + files[0] in manifest["files"]
    one, many = _rows(runs["one"]), _rows(chunked)
    assert many == one
    assert len(one["answers"]) == 6
    # 5 (route, day) rates; the 2 dead letters (dedupe's of route museum, validate's of no
    # route) are counted in rows of their own, in the window of their received_at.
    rates = read_tables(runs["one"])["route_rates"]
    assert len([r for r in rates if r["audited"]]) == 5
    assert sorted((r["route"], r["dead_lettered"]) for r in rates if not r["audited"]) == [
        ("(no route)", 1), ("museum", 1)]
    summary = {k: v for k, v in json.loads((chunked / "summary.json").read_text()).items()
               if k not in ("seconds", "traces_per_second")}
    assert summary == {k: v for k, v in json.loads((runs["one"] / "summary.json").read_text())
                       .items() if k not in ("seconds", "traces_per_second")}


def test_a_trace_id_in_two_files_is_audited_once_keeping_the_earlier_copy(runs):
    tables = read_tables(runs["chunked"])
    (answer,) = [a for a in tables["answers"] if a["trace_id"] == "dup"]
    assert answer["label"] == "NIC"  # the copy of file b, earlier in event time
    (copy,) = [d for d in tables["dead_letters"] if d["stage"] == "dedupe"]
    assert copy["trace_id"] == "dup" and json.loads(copy["raw"])["timestamp"].startswith(
        "2024-05-01T10:00:00")
    claims = [c["claim"] for c in tables["claims"] if c["trace_id"] == "dup"]
    assert len(claims) == 2 and any("MADEUP cafe" in c for c in claims)


def test_reuse_across_chunks_replays_every_call(runs):
    out = runs["tmp"] / "reused"
    assert _audit(str(runs["a"]), str(runs["b"]), "--out", str(out), "--chunk-traces", "4",
                  "--reuse", str(runs["chunked"])) == 0
    summary = json.loads((out / "summary.json").read_text())
    earlier = json.loads((runs["chunked"] / "summary.json").read_text())
    assert summary["judge_calls"] == 0 and summary["reused_calls"] == earlier["judge_calls"] > 0
    assert _rows(out)["answers"] == [
        row.replace('"reused_calls": 0', f'"reused_calls": {json.loads(row)["judge_calls"]}')
        .replace(f'"judge_calls": {json.loads(row)["judge_calls"]}', '"judge_calls": 0')
        for row in _rows(runs["chunked"])["answers"]]


def test_a_run_in_chunks_that_fails_leaves_the_earlier_run_as_it_was(runs, capsys):
    out = runs["chunked"]
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    damaged = runs["tmp"] / "damaged.jsonl.gz"
    damaged.write_bytes(gzip.compress(b"".join(
        json.dumps(_trace(f"z{i}", "It closes at 6 pm.", "2024-05-04T09:00:00Z")).encode()
        + b"\n" for i in range(200)))[:300])
    assert _audit(str(runs["a"]), str(damaged), "--out", str(out), "--chunk-traces", "2",
                  "--overwrite") == 1
    assert "damaged.jsonl.gz: truncated or corrupt input" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    assert not list(out.glob(".staging-*"))
