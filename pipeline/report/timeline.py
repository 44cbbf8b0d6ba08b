"""The windows the time chart draws: dated answers only.

A trace without a timestamp gets the time it was read (transforms/common/fields.py,
parse_timestamp), so an undated record lands in the audit's own day and stretches the chart
from the traffic's dates to today. The report reads each answer's trace again from the run's
inputs: a record with a time of its own parses to the same event time as in the run, an undated
one to the report's own "now". Those answers are taken out of their windows (counts and
interval recomputed) and counted, and windows with no audited answer left (traffic of dead
letters only) are not drawn: they have no rate.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from rt4chart.schemas.records import PreparedTrace
from rt4chart.transforms.common.joins import wilson

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _utc(t: datetime) -> datetime:
    return t.replace(tzinfo=UTC) if t.tzinfo is None else t  # Parquet without a zone is UTC


def _event_us(answer: dict) -> int:
    return (_utc(answer["event_time"]) - EPOCH) // timedelta(microseconds=1)


def undated(answers: list[dict], traces: dict[str, PreparedTrace]) -> list[dict]:
    """The answers whose trace carries no event time of its own: read again, it gets another
    time than in the run. An answer whose trace cannot be read again is kept (not guessed)."""
    out = []
    for a in answers:
        trace = traces.get(a["trace_id"])
        if trace is not None and trace.trace.event_time_us != _event_us(a):
            out.append(a)
    return out


def _window_of(route_rates: list[dict], answer: dict) -> int | None:
    """The index of the window holding `answer`: its route's latest window starting at or
    before its event time and (when the row says) ending after it."""
    t = _utc(answer["event_time"])
    found = None
    for i, row in enumerate(route_rates):
        end = row.get("window_end")
        if (row["route"] == answer["route"] and _utc(row["window_start"]) <= t
                and (end is None or t < _utc(end))
                and (found is None or row["window_start"] > route_rates[found]["window_start"])):
            found = i
    return found


def dated_windows(route_rates: list[dict], left_out: list[dict]) -> list[dict]:
    """`route_rates` without the answers `left_out` (counts and 95% interval recomputed) and
    without windows that have no complete answer to rate."""
    taken: Counter = Counter()
    flagged: Counter = Counter()
    for a in left_out:
        i = _window_of(route_rates, a)
        if i is not None:
            taken[i] += a["status"] == "ok"
            flagged[i] += bool(a["status"] == "ok" and a["hallucinated"])
    out = []
    for i, row in enumerate(route_rates):
        n = (row.get("traces") or 0) - taken[i]
        if n <= 0:
            continue
        if taken[i]:
            k = (row.get("hallucinated") or 0) - flagged[i]
            low, high = wilson(k, n)
            row = {**row, "traces": n, "hallucinated": k, "rate": k / n, "rate_low": low,
                   "rate_high": high}
        out.append(row)
    return out
