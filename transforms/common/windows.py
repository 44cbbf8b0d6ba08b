"""Event-time windows of the aggregate tables (route_rates, costs) and of the alerts.

Batch: one window per UTC day, one firing when the input ends.

Streaming: fixed windows (default 5 minutes; sliding optional) on the trace's event time, with
- early firings every `early_firing_s` of processing time while the window is open, so that a
  dashboard sees the window fill up instead of waiting for it to close;
- the on-time firing when the watermark passes the end of the window;
- a late firing for every late trace until `allowed_lateness_s` after the end of the window.

Panes ACCUMULATE: each firing of a window carries the whole window so far, so the row with the
highest `pane_index` of a window is the window's current value and a reader never has to add
panes up (a discarding pane would be a delta that every query must sum, and a lost or
duplicated pane would silently skew it). The dashboard views pick the latest pane.

A trace whose event time is so old that its window had already closed when it arrived
(`too_late`) is still audited, and its answer row says `late`; it is counted in the
`late_traces` metric and kept out of the windowed aggregates deterministically, rather than
being dropped or not by the watermark. The exact daily view over the answers table includes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.transforms import trigger, window

from rt4chart.transforms.common.options_spec import Flex, option

DAY_S = 86_400
EVENT_TIMES = ("trace", "publish")


@dataclass(frozen=True)
class WindowingConfig:
    # The options are `rt4chart stream`'s (their defaults its streaming defaults).
    size_s: int = option(
        "--rate-window", "--rate_window", "--window", dest="window", default=DAY_S,
        parsed_default=300, parse=int,
        flex=Flex(
            "Rate window (s)",
            "Rate window in seconds of event time. Default: 300.",
            regexes=("^[0-9]+$",)),
        help="rate window in seconds of event time (default 300)")
    period_s: int | None = option(  # sliding windows: a new window every period_s
        "--sliding-period", "--sliding_period", dest="sliding_period", parse=int,
        flex=Flex(
            "Sliding period (s)",
            "Start a rate window every N seconds (sliding windows). Default: fixed windows.",
            regexes=("^[0-9]+$",)),
        help="sliding windows: start a window every N seconds (default: fixed)")
    early_firing_s: float | None = option(
        "--early-firing", "--early_firing", dest="early_firing", parsed_default=30.0,
        parse=float, zero_off=True,
        flex=Flex(
            "Early firing (s)",
            "Seconds between early firings of an open window; 0 for none. Default: 30.",
            regexes=("^[0-9]+(\\.[0-9]+)?$",)),
        help="seconds between early firings of an open window (default 30; 0 for none)")
    allowed_lateness_s: int = option(
        "--allowed-lateness", "--allowed_lateness", dest="allowed_lateness", default=0,
        parsed_default=3600, parse=int,
        flex=Flex(
            "Allowed lateness (s)",
            "Seconds after a window's end during which late traces still update it; later ones "
            "are audited and marked late. Default: 3600.",
            regexes=("^[0-9]+$",)),
        help="seconds after a window's end during which late traces still update it (default "
             "3600); later ones are audited and marked late")
    streaming: bool = False
    # Which time places a streamed trace in its rate window: its own timestamp, or (for
    # replayed or backfilled traces, such as the bundled example's 2024 ones, which would all
    # arrive too late for any window) the time Pub/Sub received it.
    event_time: str = option(
        "--event-time", "--event_time", default="trace", choices=EVENT_TIMES,
        flex=Flex(
            "Event time",
            "trace: a trace's timestamp places it in its rate window; publish: the Pub/Sub "
            "publish time does (replayed or backfilled traces). Default: trace.",
            regexes=("^(trace|publish)$",)),
        help="stream: what places a trace in its rate window: `trace` (its timestamp, the "
             "default) or `publish` (the Pub/Sub publish time: for replayed or backfilled "
             "traces, such as the bundled example, whose timestamps are older than "
             "--allowed-lateness and would all be late)")

    def __post_init__(self) -> None:
        if self.event_time not in EVENT_TIMES:
            raise ValueError(f"--event-time must be one of {', '.join(EVENT_TIMES)}, got "
                             f"{self.event_time!r}")
        if self.size_s <= 0:
            raise ValueError(f"--window must be positive, got {self.size_s}")
        if self.period_s is not None and not 0 < self.period_s <= self.size_s:
            raise ValueError(f"--sliding-period must be in (0, window], got {self.period_s}")
        if self.allowed_lateness_s < 0:
            raise ValueError("--allowed-lateness must not be negative")
        if self.early_firing_s is not None and self.early_firing_s <= 0:
            raise ValueError("--early-firing must be positive")

    @classmethod
    def streaming_default(cls, size_s: int = 300, period_s: int | None = None,
                          early_firing_s: float | None = 30.0,
                          allowed_lateness_s: int = 3600) -> WindowingConfig:
        return cls(size_s, period_s, early_firing_s, allowed_lateness_s, True)

    def window_fn(self) -> window.WindowFn:
        if self.period_s is not None and self.period_s != self.size_s:
            return window.SlidingWindows(self.size_s, self.period_s)
        return window.FixedWindows(self.size_s)

    def window_into(self) -> beam.WindowInto:
        if not self.streaming:
            return beam.WindowInto(self.window_fn())
        # Whole seconds: Beam's runner API stores the delay as integer milliseconds // 1000.
        early = (trigger.AfterProcessingTime(max(1, round(self.early_firing_s)))
                 if self.early_firing_s else None)
        return beam.WindowInto(
            self.window_fn(),
            trigger=trigger.AfterWatermark(early=early, late=trigger.AfterCount(1)),
            accumulation_mode=trigger.AccumulationMode.ACCUMULATING,
            allowed_lateness=self.allowed_lateness_s,
        )

    def last_window_end_s(self, event_s: float) -> float:
        """End of the last window that contains an event time."""
        step = self.period_s or self.size_s
        return (event_s // step) * step + self.size_s

    def too_late(self, event_us: int, arrival_us: int) -> bool:
        """Whether a trace arrived after every window containing it had closed for good."""
        if not self.streaming:
            return False
        closes = self.last_window_end_s(event_us / 1e6) + self.allowed_lateness_s
        return arrival_us / 1e6 > closes


PANE_TIMING = {0: "EARLY", 1: "ON_TIME", 2: "LATE"}


_FIRST = datetime.min.replace(tzinfo=UTC)
_LAST = datetime.max.replace(tzinfo=UTC)


def utc_datetime(seconds: float) -> datetime:
    """A window bound as a UTC datetime, clamped to years 0001-9999: the window of a trace on
    9999-12-31 ends in year 10000, which no datetime (nor BigQuery TIMESTAMP) holds."""
    if seconds <= _FIRST.timestamp():
        return _FIRST
    if seconds >= _LAST.timestamp():  # the float rounds up to year 10000
        return _LAST
    return datetime.fromtimestamp(seconds, tz=UTC)


def window_columns(win: window.BoundedWindow, pane) -> dict:
    """The window and pane columns shared by route_rates and costs."""
    start = utc_datetime(float(win.start))
    return {
        "window_start": start,
        "window_end": utc_datetime(float(win.end)),
        "day": start.date().isoformat(),  # zero-padded: strftime writes year 1 as "1"
        # Batch panes have no timing of their own: one firing, on time.
        "pane": PANE_TIMING.get(getattr(pane, "timing", 1), "ON_TIME"),
        "pane_index": int(getattr(pane, "index", 0) or 0),
        "emitted_at": datetime.now(UTC),
    }


def event_timestamp(dt: datetime) -> float:
    return dt.timestamp()


BATCH = WindowingConfig()
