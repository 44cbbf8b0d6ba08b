"""One validation for both doors (issue 47, defect 8): the same records through `rt4chart audit`
and through `rt4chart.audit` give the same audited traces, the same dead letters and the same
reasons.

Records JSON can hold (NaN, Infinity, -Infinity, an integer beyond 64 bits) are compared with
the command reading them as a JSON-lines file written by Python's `json` (which writes NaN and
Infinity as tokens); records JSON cannot hold (a UUID, bytes, a datetime, a Decimal) with the
command reading them as Parquet rows (as a DataFrame's export holds them). Before, the API
wrote records with orjson: NaN became null and the trace was audited, 2**70 failed the whole
call, a UUID trace id became text, and bytes or a Decimal failed the whole call.
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rt4chart
from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.results.summary import read_table

import golden_traces as gt


def _trace(name, **fields) -> dict:
    return {**gt.trace(name, "r", gt.GROUNDED), **fields}


JSON_RECORDS = [
    _trace("plain"),
    _trace("nan-metadata", metadata={"score": math.nan}),
    _trace("inf-metadata", metadata={"score": math.inf}),
    _trace("ninf-unknown-field", extra=-math.inf),
    _trace("nan-context", contexts=[{"doc_id": "d", "text": {"price": math.nan}}]),
    _trace("big-metadata", metadata={"n": 2**70, "m": -(2**70)}),
    _trace("big-question", question=2**70),
    _trace("big-structured-context", contexts=[{"doc_id": "d", "text": {"n": 2**70}}]),
]
UTC_PLUS_2 = timezone(timedelta(hours=2))
OTHER_RECORDS = [
    _trace("uuid-trace-id", trace_id=uuid.UUID(int=7)),
    _trace("bytes-answer", answer=gt.GROUNDED.encode()),
    _trace("datetime-metadata", metadata={"when": datetime(2024, 6, 1, tzinfo=UTC)}),
    _trace("decimal-metadata", metadata={"price": Decimal("4.50")}),
    _trace("naive-timestamp", timestamp=datetime(2024, 6, 1, 12, 30, 0, 123456)),
    _trace("zoned-timestamp", timestamp=datetime(2024, 6, 1, 12, 30, tzinfo=UTC_PLUS_2)),
]


def _outcome(out: Path) -> dict:
    """What a run made of its records: the audited traces (id, event time, contexts' text) and
    the dead letters (stage, reason, trace id), each sorted."""
    traces = read_table(str(out), "traces").to_pylist()
    dead = read_table(str(out), "dead_letters").to_pylist()
    return {
        "audited": sorted((t["trace_id"], t["event_time"],
                           tuple(d["text"] for d in t["contexts"])) for t in traces),
        "dead": sorted((d["stage"], d["reason"], d["trace_id"] or "") for d in dead),
    }


def _command(tmp_path: Path, name: str, inputs: list[Path]) -> dict:
    out = tmp_path / f"cli-{name}"
    code = cli.main(["audit", *map(str, inputs), "--judge", "offline", "--out", str(out),
                     "--write-traces"])
    assert code == 0
    return _outcome(out)


def _api(tmp_path: Path, name: str, records: list[dict]) -> dict:
    out = tmp_path / f"api-{name}"
    rt4chart.audit(records, judge="offline", out=out)
    return _outcome(out)


def test_records_json_can_hold_are_judged_as_the_command_judges_a_json_lines_file(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in JSON_RECORDS))
    command = _command(tmp_path, "json", [path])
    api = _api(tmp_path, "json", JSON_RECORDS)
    assert api == command
    audited = {t[0]: t for t in api["audited"]}
    assert set(audited) == {"plain", "big-metadata"}  # 2**70 in metadata: its text, exactly
    reasons = [d[1] for d in api["dead"]]
    assert len(reasons) == 6
    assert sum("(NaN: JSON numbers must be finite" in r for r in reasons) == 2
    assert sum("Infinity: JSON numbers must be finite" in r for r in reasons) == 2
    assert "field 'question' must be a string, got int" in reasons
    assert "contexts[0].text holds an integer beyond 64 bits" in reasons


def test_records_json_cannot_hold_are_judged_as_the_command_judges_parquet_rows(tmp_path):
    files = []
    for index, record in enumerate(OTHER_RECORDS):  # one file each: their columns differ
        files.append(tmp_path / f"row-{index}.parquet")
        pq.write_table(pa.Table.from_pylist([record]), files[-1])
    command = _command(tmp_path, "rows", files)
    api = _api(tmp_path, "rows", OTHER_RECORDS)
    assert api == command
    audited = {t[0]: t for t in api["audited"]}
    assert set(audited) == {"naive-timestamp", "zoned-timestamp"}
    assert audited["naive-timestamp"][1] == datetime(2024, 6, 1, 12, 30, 0, 123456, tzinfo=UTC)
    assert audited["zoned-timestamp"][1] == datetime(2024, 6, 1, 10, 30, tzinfo=UTC)
    assert sorted(d[1] for d in api["dead"]) == sorted([
        "field 'trace_id' must be a string, got UUID",
        "field 'answer' must be a string, got bytes",
        "metadata 'when' must be a string or a number, got datetime",
        "metadata 'price' must be a string or a number, got Decimal",
    ])


@pytest.mark.parametrize(("value", "named"), [(object(), "a object"),
                                              (uuid.UUID(int=9), "a UUID")])
def test_a_record_neither_door_can_hold_is_refused_by_name(value, named):
    """An object of the caller's class, or a UUID inside a map (Arrow cannot infer it there):
    the command could not be given it either; a clear error before anything runs."""
    with pytest.raises(TypeError, match=f"record 1 is not JSON, nor a Parquet row: it holds "
                                        f"{named} at 'metadata.x'"):
        rt4chart.audit([_trace("a"), _trace("b", metadata={"x": value})], judge="offline")


def test_an_input_format_is_refused_for_in_memory_records():
    with pytest.raises(ValueError, match="input_format='jsonl' names the format of files"):
        rt4chart.audit([_trace("a")], judge="offline", input_format="jsonl")
