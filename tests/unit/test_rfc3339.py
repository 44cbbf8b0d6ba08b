"""Timestamps are read as RFC 3339 section 5.6 date-times, no more and no less: trace records
(`parse_timestamp`, microseconds) and span sources (`time_ns`, nanoseconds) alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rt4chart.pipeline.sources.common import SpanDecodeError, time_ns
from rt4chart.transforms.validate import InvalidTrace, parse_timestamp, parse_trace

BASE = {"trace_id": "t", "contexts": ["c"], "answer": "a"}
MAY_1_0930_US = (datetime(2024, 5, 1, 9, 30, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
                 ) // timedelta(microseconds=1)


@pytest.mark.parametrize("text,shift_us", [
    ("2024-05-01T09:30:00Z", 0),
    ("2024-05-01t09:30:00z", 0),  # RFC 3339: "T" and "Z" may be lower case
    ("2024-05-01t09:30:00+02:00", -7_200_000_000),
    ("2024-05-01 09:30:00Z", 0),  # RFC 3339 section 5.6, note: a space for readability
    ("2024-05-01T09:30:00-00:00", 0),  # offset unknown: UTC
    ("2024-05-01T09:30:00", 0),  # no offset: UTC (rt4chart's documented rule)
    ("2024-05-01T09:30:00.5Z", 500_000),
    ("2024-05-01T09:30:00.123456789Z", 123_456),  # cut to the microsecond, not rounded
    ("2024-05-01T09:30:00.999999999999Z", 999_999),
])
def test_rfc3339_date_times_are_read(text, shift_us):
    assert parse_timestamp(text) == MAY_1_0930_US + shift_us
    assert parse_trace({**BASE, "timestamp": text}).event_time_us == MAY_1_0930_US + shift_us


@pytest.mark.parametrize("text", [
    "2024-W18-3",  # ISO 8601 week date
    "2024-W18-3T09:30:00Z",
    "2024-122",  # ISO 8601 ordinal date
    "2024-05-01",  # a date alone: not a date-time
    "20240501T093000Z",  # ISO 8601 basic format
    "2024-05-01T09:30Z",  # no seconds
    "2024-05-01T09Z",
    "2024-05-01T09:30:00,5Z",  # ISO 8601's decimal comma
    "2024-05-01T09:30:00.Z",  # a point without digits
    "2024-05-01T09:30:00+0200",  # offset without its colon
    "2024-05-01T09:30:00+02",
    "2024-05-01T09:30:00+24:00",
    "2024-05-01T09:30:00+02:60",
    "2024-05-01T24:00:00Z",
    "2024-05-01T09:30:00ZZ",
    " 2024-05-01T09:30:00Z",
    "2024-05-01T09:30:00Z\n",
    "2024-05-01_09:30:00Z",
    "\uff12\uff10\uff12\uff14-05-01T09:30:00Z",  # full-width digits
    "+2024-05-01T09:30:00Z",
])
def test_what_is_not_rfc3339_is_refused(text):
    with pytest.raises(InvalidTrace, match="is not RFC 3339"):
        parse_timestamp(text)
    with pytest.raises(SpanDecodeError, match="not an RFC 3339 time"):
        time_ns(text)


def test_year_zero_is_out_of_range_not_unreadable():
    with pytest.raises(InvalidTrace, match="out of range"):
        parse_timestamp("0000-12-31T23:59:59Z")


@pytest.mark.parametrize("text,ns", [
    ("2024-05-01T09:30:00.123456789Z", MAY_1_0930_US * 1000 + 123_456_789),
    ("2024-05-01t09:30:00.000000001z", MAY_1_0930_US * 1000 + 1),
    ("2024-05-01 11:30:00.5+02:00", MAY_1_0930_US * 1000 + 500_000_000),
    ("2016-12-31T23:59:60Z", 1483228800 * 10**9),  # a leap second: the next second
])
def test_span_times_keep_their_nanoseconds(text, ns):
    assert time_ns(text) == ns
