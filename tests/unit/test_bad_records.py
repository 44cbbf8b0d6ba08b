"""Every bad record is exactly one dead letter naming what was wrong; good records pass."""

from __future__ import annotations

import json
from datetime import datetime

import apache_beam as beam
import orjson
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import BeamAssertException, assert_that, equal_to

from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.records import Document, Message, Trace
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.transforms import validate
from rt4chart.transforms.common.fields import SURROGATE
from rt4chart.transforms.validate import ValidateTraces, _ValidateFn, raw_text

GOOD = {"contexts": ["Paris is the capital of France."], "answer": "Paris is in France."}


def line(trace_id: str, **fields) -> str:
    return json.dumps({**GOOD, "trace_id": trace_id, **fields})


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


# (record, what its dead letter's reason must contain, its trace_id column: None when the record
# does not parse, or its trace_id is not one)
BAD = [
    (line("y0", timestamp="0001-01-01T00:00:00+01:00"), "out of range", "y0"),
    (line("y10k", timestamp="9999-12-31T23:59:59-14:00"), "out of range", "y10k"),
    (line("x" * 300), "'trace_id' is 300 characters long; the limit is 256", None),
    (line("route", route="r" * 300), "'route' is 300 characters long", "route"),
    (line("many", metadata={str(i): "v" for i in range(65)}), "65 entries; the limit is 64",
     "many"),
    (line("long-meta", metadata={"k": "v" * 2000}), "metadata 'k' is 2000 characters", "long-meta"),
    (line("deep-meta", metadata={"k": nested(5)}), "must be a string or a number", "deep-meta"),
    (line("deep", contexts=[{"text": nested(40)}]), "nested deeper than 32 levels", "deep"),
    ('{"trace_id": "bomb", "contexts": ' + "[" * 3000 + "]" * 3000 + "}", "depth limit", None),
    ('{"trace_id": "nan-json", "answer": NaN, "contexts": ["c"]}',
     "not valid JSON: unexpected character", None),
    ('{"trace_id": "lone", "answer": "\\ud800", "contexts": ["c"]}', "no low surrogate", None),
    (b'{"trace_id": "bytes", "answer": "\xff", "contexts": ["c"]}', "not valid UTF-8", None),
    (line("task", task=5), "field 'task' must be a string, got int", "task"),
    (line("doc", contexts=[{"doc_id": ["d"], "text": "c"}]), "doc_id must be a string", "doc"),
    ({**GOOD, "trace_id": "nan", "metadata": {"score": float("nan")}}, "nan: numbers must be",
     "nan"),
    ({**GOOD, "trace_id": "inf", "contexts": [{"text": {"x": float("inf")}}]}, "holds inf", "inf"),
    ({**GOOD, "trace_id": "pairs", "metadata": [("a", "b", "c")]}, "(key, value) pairs", "pairs"),
    ({**GOOD, "trace_id": "when", "timestamp": 1.7e9}, "must be RFC 3339 text, got float", "when"),
    (Message(orjson.dumps(GOOD), (("trace_id", "msg"),), publish_time_us=10**20),
     "publish time", "msg"),
]
GOOD_RECORDS = [
    line("ok"), line("first", timestamp="0001-01-01T00:00:00Z"),
    line("last", timestamp="9999-12-31T23:59:59+14:00"),
    {**GOOD, "trace_id": "dict", "metadata": {"n": 1.5}},
    Message(orjson.dumps(GOOD), (("trace_id", "msg-ok"),), publish_time_us=1_700_000_000_000_000),
]


def _check_dead(letters) -> None:
    by_reason = sorted((d.trace_id or "", d.reason) for d in letters)
    if len(letters) != len(BAD):
        raise BeamAssertException(f"{len(letters)} dead letters for {len(BAD)} bad records: "
                                  f"{by_reason}")
    for _record, reason, trace_id in BAD:
        matching = [d for d in letters if reason in d.reason and d.trace_id == trace_id]
        if len(matching) != 1:
            raise BeamAssertException(f"{reason!r} ({trace_id}): {len(matching)} dead letters "
                                      f"in {by_reason}")
        row = to_dict(DeadLetterRow.of(matching[0]))  # writable: hashes its text as UTF-8
        if row["stage"] != "validate" or not row["raw"]:
            raise BeamAssertException(f"dead letter row {row}")


def _check_traces(got) -> None:
    days = dict(got)
    if sorted(days) != ["dict", "first", "last", "msg-ok", "ok"] or (
            days["first"], days["last"], days["msg-ok"]) != ("0001-01-01", "9999-12-31",
                                                               "2023-11-14"):
        raise BeamAssertException(f"traces {sorted(got)}")


def test_each_bad_record_is_one_dead_letter_and_good_ones_pass():
    # (A Python structure nested 50,000 deep cannot go through beam.Create: see test_validate.)
    with TestPipeline() as p:
        out = p | beam.Create(GOOD_RECORDS + [r for r, _, _ in BAD]) | ValidateTraces()
        assert_that(out.traces | beam.Map(lambda t: (t.trace_id, t.day)), _check_traces,
                    label="traces")
        assert_that(out.dead_letters, _check_dead, label="dead")


# Lone surrogates cannot cross a Beam coder (it encodes text as UTF-8), so a record holding one
# (from a lenient JSON parser, or made inside a DoFn) is checked through the DoFn itself: its
# dead letter must be encodable, or writing it would fail the run.
SURROGATES = [
    ({**GOOD, "trace_id": "sur", "answer": "\ud800x"}, "field 'answer' is not valid text", "sur"),
    ({**GOOD, "trace_id": "sur-id\udfff"}, "field 'trace_id' is not valid text", None),
    ({**GOOD, "trace_id": "s", "route": "\udc00"}, "field 'route' is not valid text", "s"),
    ({**GOOD, "trace_id": "s", "metadata": {"k": "\ud800"}}, "metadata 'k' is not valid", "s"),
    (json.loads('{"trace_id": "py", "contexts": ["\\ud83d"], "answer": "a"}'),
     "contexts[0] is not valid text: lone surrogate '\\ud83d' at character 0", "py"),
]


@pytest.mark.parametrize("record,reason,trace_id", SURROGATES)
def test_text_with_lone_surrogates_is_dead_lettered_writable(record, reason, trace_id):
    (out,) = list(_ValidateFn().process(record))
    dead = out.value
    assert out.tag == "dead" and reason in dead.reason and dead.trace_id == trace_id
    row = to_dict(DeadLetterRow.of(dead))
    json.dumps(row, default=str, ensure_ascii=False).encode("utf-8")
    assert "\\ud" in dead.raw and SURROGATE.search(dead.raw + dead.reason) is None


def test_an_unexpected_error_is_a_dead_letter_not_a_failed_run(monkeypatch):
    def broken(record):
        raise KeyError("boom")

    monkeypatch.setattr(validate, "parse_trace", broken)
    (out,) = list(_ValidateFn().process(line("k")))
    dead = out.value
    assert out.tag == "dead" and dead.stage == "validate" and dead.trace_id == "k"
    assert dead.reason == "validation failed: KeyError('boom')"


def test_raw_text_never_raises_and_is_always_writable():
    deep = {"a": nested(100_000)}
    assert raw_text(deep) == "<a dict that cannot be shown as text>"
    assert raw_text("x\ud800y") == "x\\ud800y"
    assert raw_text({"a": "\udfff", "n": float("nan")}) == '{"a": "\\udfff", "n": NaN}'
    assert raw_text({"big": 2**70}) == '{"big": 1180591620717411303424}'
    assert raw_text(b"\xff{") == "\ufffd{"
    hand_made = Trace("t", "r", 10**30, "q", (Document("d", "c"),), "a")
    assert '"timestamp":"1000000000000000000000000000000"' in raw_text(hand_made)
    for text in (raw_text(deep), raw_text("x\ud800y"), raw_text(hand_made)):
        text.encode("utf-8")


def test_a_hand_made_trace_out_of_range_still_segments():
    from rt4chart.transforms.segment import Segment, SegmentConfig

    hand_made = Trace("t", "r", 10**30, "q", (Document("d", "One. Two."),), "One.")
    with TestPipeline() as p:
        out = p | beam.Create([hand_made]) | Segment(SegmentConfig())
        assert_that(out.prepared | beam.Map(lambda x: x.trace.day), equal_to(["9999-12-31"]),
                    label="day")


def test_parquet_like_rows_with_datetimes_are_checked_too():
    row = {**GOOD, "trace_id": "pq", "timestamp": datetime(9999, 12, 31, 23, 59, 59)}
    assert validate.parse_trace(row).day == "9999-12-31"
