"""Parquet `timestamp[ns]` values are read without pandas: pyarrow hands nanoseconds to Python
only through pandas, so a value with non-zero nanoseconds was dead-lettered as unreadable."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rt4chart.pipeline.sources.phoenix import row_span
from rt4chart.pipeline.sources.traces import ReadTraces, batch_rows
from rt4chart.transforms.common import rfc3339
from rt4chart.transforms.validate import parse_trace

NS = 1_714_555_800_123_456_789  # 2024-05-01T09:30:00.123456789Z
US = NS // 1000


def _batch(unit: str, tz: str | None, values: list[int | None]) -> pa.RecordBatch:
    n = len(values)
    return pa.RecordBatch.from_pydict({
        "trace_id": [f"t{i}" for i in range(n)], "timestamp": pa.array(values, pa.timestamp(
            unit, tz=tz)), "contexts": [["c"]] * n, "answer": ["a"] * n})


def _rows(batch: pa.RecordBatch) -> tuple[list[dict], list]:
    rows, dead = [], []
    for out in batch_rows(batch, "f row"):
        (dead if isinstance(out, beam.pvalue.TaggedOutput) else rows).append(out)
    return rows, dead


def test_nanosecond_timestamps_are_rfc3339_text_and_the_traces_are_audited():
    for tz in ("UTC", None, "America/New_York"):  # Arrow stores every zone's values in UTC
        rows, dead = _rows(_batch("ns", tz, [NS, NS - NS % 1000, None]))
        assert dead == []
        assert [r["timestamp"] for r in rows] == ["2024-05-01T09:30:00.123456789Z",
                                                  "2024-05-01T09:30:00.123456000Z", None]
        assert [parse_trace(r).event_time_us for r in rows[:2]] == [US, US]  # cut to the us


def test_a_phoenix_span_keeps_every_nanosecond():
    rows, dead = _rows(pa.RecordBatch.from_pydict({
        "context.trace_id": ["ab" * 16], "context.span_id": ["cd" * 8],
        "start_time": pa.array([NS], pa.timestamp("ns", tz="UTC")),
        "end_time": pa.array([NS + 1], pa.timestamp("ns"))}))
    assert dead == []
    span = row_span(rows[0])
    assert (span.start_ns, span.end_ns) == (NS, NS + 1)


def test_other_units_are_left_as_datetimes():
    rows, dead = _rows(_batch("us", "UTC", [US]))
    assert dead == [] and rows[0]["timestamp"] == datetime(2024, 5, 1, 9, 30, 0, 123456,
                                                            tzinfo=UTC)


def test_format_ns_reads_back_exactly_across_arrows_range():
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    for ns in (0, -1, NS, -(2**63) + 1, 2**63 - 1):
        text = rfc3339.format_ns(ns)
        assert rfc3339.parse_ns(text) == ns
        assert text[:19] == f"{epoch + timedelta(microseconds=ns // 1000):%Y-%m-%dT%H:%M:%S}"


def test_a_parquet_file_of_nanosecond_timestamps_is_read_without_dead_letters(tmp_path):
    path = tmp_path / "traces.parquet"
    pq.write_table(pa.Table.from_batches([_batch("ns", "UTC", [NS + i for i in range(3)])]),
                   path)
    with TestPipeline() as p:
        read = p | ReadTraces((str(path),))
        assert_that(read.records | beam.Map(lambda r: (r["trace_id"], r["timestamp"])),
                    equal_to([("t0", "2024-05-01T09:30:00.123456789Z"),
                              ("t1", "2024-05-01T09:30:00.123456790Z"),
                              ("t2", "2024-05-01T09:30:00.123456791Z")]), label="records")
        assert_that(read.dead_letters, equal_to([]), label="dead")
