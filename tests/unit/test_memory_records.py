"""In-memory records made ready as the elements the command's readers would give
(`sources/memory.py`): a record JSON can hold is its JSON line exactly (NaN, Infinity and big
integers included); one that JSON cannot hold is a one-row Arrow table holding its values as
they are; both reach validation through `ReadMemory` as the file readers' elements do."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime

import apache_beam as beam
import pyarrow as pa
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.sources.memory import ReadMemory, memory_records

SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
           | st.floats() | st.text(max_size=8))
VALUES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(max_size=5), c, max_size=3), max_leaves=10)
RECORDS = st.dictionaries(st.text(max_size=6), VALUES, min_size=1, max_size=4)


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN (and a tuple to its list)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            _same(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@given(st.lists(RECORDS, min_size=1, max_size=3))
def test_a_record_json_can_hold_comes_back_from_its_line_exactly(records):
    lines = memory_records(records).elements
    assert len(lines) == len(records) and all(isinstance(line, str) for line in lines)
    for line, record in zip(lines, records, strict=True):
        # one line, as the command's reader splits at line feeds (json escapes CR and LF)
        assert "\n" not in line
        assert _same(record, json.loads(line))


def test_values_json_cannot_hold_become_an_arrow_row_as_they_are():
    record = {"trace_id": uuid.UUID(int=3), "answer": b"x", "metadata": {"n": "1"},
              "timestamp": datetime(2024, 6, 1, 12, 0)}
    plain, row = memory_records([{"trace_id": "plain"}, record]).elements
    assert isinstance(row, pa.Table)
    assert row.to_pylist() == [{**record, "timestamp": "2024-06-01T12:00:00+00:00"}]
    assert json.loads(plain) == {"trace_id": "plain"}


def test_a_datetime_timestamp_is_its_rfc3339_text_in_a_json_line():
    when = datetime(2024, 6, 1, 12, 0, 0, 5, tzinfo=UTC)
    (line,) = memory_records([{"trace_id": "t", "timestamp": when}]).elements
    assert json.loads(line)["timestamp"] == "2024-06-01T12:00:00.000005+00:00"


def test_no_records_makes_none():
    assert len(memory_records([])) == 0


def test_the_graph_gets_what_the_readers_give_and_an_oversized_record_is_a_dead_letter():
    small, big = {"trace_id": "s"}, {"trace_id": "b", "answer": "x" * 5000}
    row = {"trace_id": "u", "when": datetime(2024, 6, 1, tzinfo=UTC), "n": b"b"}
    records = memory_records([small, big, row])
    size = len(json.dumps(big).encode())  # the line the command would read
    with TestPipeline() as p:
        read = p | ReadMemory(records, max_record_bytes=4096)
        assert_that(read.records, equal_to([json.dumps(small), row]), label="Records")
        reasons = read.dead_letters | beam.Map(lambda d: (d.stage, d.reason, d.trace_id))
        assert_that(reasons, equal_to([(
            "read", f"record 1: record of {size:,} bytes is over --max-record-bytes=4,096; "
                    "skipped unread (raw holds its first 1,024 bytes)", "b")]), label="Dead")
