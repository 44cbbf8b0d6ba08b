"""In-memory records written through the command's doors (`sources/memory.py`): a record JSON
can hold comes back from its line exactly (NaN, Infinity and big integers included); one that
JSON cannot hold becomes a Parquet row holding its values as they are."""

from __future__ import annotations

import json
import math
import uuid
from datetime import UTC, datetime

import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.sources.memory import write_records

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
def test_a_record_json_can_hold_comes_back_from_its_line_exactly(tmp_path_factory, records):
    folder = tmp_path_factory.mktemp("m")
    paths = write_records(records, str(folder))
    assert len(paths) == 1  # no Parquet row: all of it is JSON
    # split as the command's reader splits: at line feeds (json escapes CR and LF in text),
    # not at U+0085 or U+2028, which str.splitlines also breaks at
    lines = open(paths[0], encoding="utf-8", newline="").read().split("\n")[:-1]
    assert len(lines) == len(records)
    for line, record in zip(lines, records, strict=True):
        assert _same(record, json.loads(line))


def test_values_json_cannot_hold_go_into_a_parquet_row_as_they_are(tmp_path):
    record = {"trace_id": uuid.UUID(int=3), "answer": b"x", "metadata": {"n": "1"},
              "timestamp": datetime(2024, 6, 1, 12, 0)}
    paths = write_records([{"trace_id": "plain"}, record], str(tmp_path))
    assert len(paths) == 2 and paths[1].endswith(".parquet")
    (row,) = pq.read_table(paths[1]).to_pylist()
    assert row == {**record, "timestamp": "2024-06-01T12:00:00+00:00"}
    assert json.loads(open(paths[0]).read()) == {"trace_id": "plain"}


def test_a_datetime_timestamp_is_its_rfc3339_text_in_a_json_line(tmp_path):
    when = datetime(2024, 6, 1, 12, 0, 0, 5, tzinfo=UTC)
    (path,) = write_records([{"trace_id": "t", "timestamp": when}], str(tmp_path))
    assert json.loads(open(path).read())["timestamp"] == "2024-06-01T12:00:00.000005+00:00"


def test_no_records_writes_no_input(tmp_path):
    assert write_records([], str(tmp_path)) == ()
