"""`stream --event-time publish`: replayed or backfilled traces (the bundled example's 2024
timestamps) are windowed by when Pub/Sub received them, so they count in route_rates instead
of all arriving too late; by default a trace's own timestamp places it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from apache_beam.transforms.window import TimestampedValue

from rt4chart.pipeline.cli import main as cli
from rt4chart.schemas.records import Message
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.validate import _ValidateFn

EXAMPLE = Path(cli.__file__).parents[1] / "examples" / "traces.jsonl"
NOW_US = int(datetime(2026, 12, 3, 12, 0, tzinfo=UTC).timestamp() * 1_000_000)


def _example_message() -> Message:
    line = EXAMPLE.read_text().splitlines()[0]
    assert json.loads(line)["timestamp"].startswith("2024")
    return Message(line.encode(), (), NOW_US, "m1")


def _validated(event_time: str):
    windowing = WindowingConfig(300, None, 30.0, 3600, True, event_time)
    (out,) = _ValidateFn(windowing).process(_example_message())
    assert isinstance(out, TimestampedValue)
    return out.value, out.timestamp.micros


def test_by_default_an_old_trace_is_late_and_keeps_its_timestamp():
    trace, stamp = _validated("trace")
    assert trace.late is True
    assert trace.event_time_us == stamp < NOW_US


def test_with_publish_event_time_a_replayed_trace_counts_in_its_arrival_window():
    trace, stamp = _validated("publish")
    assert trace.late is False
    assert trace.event_time_us == stamp == NOW_US


def test_an_unknown_event_time_is_refused():
    with pytest.raises(ValueError, match="--event-time"):
        WindowingConfig(300, None, 30.0, 3600, True, "arrival")


def test_stream_accepts_the_option(tmp_path, capsys):
    sample = tmp_path / "s.jsonl"
    sample.write_text(EXAMPLE.read_text().splitlines()[0] + "\n")
    assert cli.main(["stream", "--judge", "offline", "--event-time", "publish", "--estimate",
                     str(sample)]) == 0
    assert "valid traces 1" in capsys.readouterr().out
