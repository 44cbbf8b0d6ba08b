"""Alerts: a route whose windowed hallucination rate crosses a rule, once per window and rule.

Rules (either or both), each only for a window with at least `min_traces` complete answers:
- absolute: the window's rate exceeds `absolute`;
- relative: the window's rate is at least `relative` times the route's trailing baseline (its
  pooled rate over the previous `baseline_windows` windows, which must hold `min_traces`
  between them), and the window's 95% Wilson lower bound is above the baseline, so that a
  small window's noise does not page anyone.

The rule is checked at every firing of a window (early panes included: an alert need not wait
for the window to close); a (window, rule) alerts at most once. State is per route in the
global window; the baseline history is trimmed to `baseline_windows` entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

import apache_beam as beam
import orjson
from apache_beam.coders import PickleCoder
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.typehints import Any as AnyHint
from apache_beam.typehints import Tuple

from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.records import DeadLetter
from rt4chart.schemas.rows import AlertRow, RouteRateRow
from rt4chart.transforms.common.guard import GlobalDeadLetters, RouteKeyedFn
from rt4chart.transforms.common.options_spec import Flex, option

METRICS = "rt4chart"


@dataclass(frozen=True)
class AlertConfig:
    """When a route's windowed rate raises an alert (see transforms/alerts.py)."""

    absolute: float | None = option(  # alert when the rate exceeds this
        "--alert-rate", "--alert_rate", dest="alert_rate", parse=float,
        flex=Flex(
            "Absolute alert rate",
            "Alert when a window's hallucination rate exceeds this (0 to 1). Default: off.",
            regexes=("^[0-9]+(\\.[0-9]+)?$",)),
        help="alert when a window's rate exceeds this (default: off)")
    relative: float | None = option(  # alert at this many times the trailing baseline
        "--alert-relative", "--alert_relative", dest="alert_relative", default=2.0,
        parse=float, zero_off=True,
        flex=Flex(
            "Relative alert factor",
            "Alert when a window's rate is N times the route's trailing baseline and "
            "significantly above it; 0 for off. Default: 2.",
            regexes=("^[0-9]+(\\.[0-9]+)?$",)),
        help="alert when a window's rate is N times the route's trailing baseline and "
             "significantly above it (default 2; 0 for off)")
    min_traces: int = option(
        "--alert-min-traces", "--alert_min_traces", dest="alert_min_traces", default=20,
        parse=int,
        flex=Flex(
            "Alert minimum traces",
            "Complete answers a window needs before it can alert. Default: 20.",
            regexes=("^[0-9]+$",)),
        help="traces a window needs to alert (default 20)")
    baseline_windows: int = option(
        "--alert-baseline-windows", "--alert_baseline_windows", dest="alert_baseline_windows",
        default=12, parse=int,
        flex=Flex(
            "Alert baseline windows",
            "Windows in the trailing baseline of the relative rule. Default: 12.",
            regexes=("^[0-9]+$",)),
        help="windows in the trailing baseline (default 12)")

    def __post_init__(self) -> None:
        if self.absolute is not None and not 0 <= self.absolute < 1:
            raise ValueError(f"--alert-rate must be in [0, 1), got {self.absolute}")
        if self.relative is not None and self.relative <= 1:
            raise ValueError(f"--alert-relative must be > 1, got {self.relative}")
        if self.min_traces < 1 or self.baseline_windows < 1:
            raise ValueError("--alert-min-traces and --alert-baseline-windows must be >= 1")



def check(row: RouteRateRow, history: dict, alerted: set, config: AlertConfig) -> list[AlertRow]:
    """The alerts a rate row raises, given the route's history (window_start -> (halluc,
    traces)) and the (window_start, rule) pairs already alerted. Updates both."""
    window = row.window_start
    history[window] = (row.hallucinated, row.traces)
    for old in sorted(history)[: max(0, len(history) - config.baseline_windows - 1)]:
        del history[old]
    if row.traces < config.min_traces or row.rate is None:
        return []
    alerts = []
    if (config.absolute is not None and row.rate > config.absolute
            and (window, "absolute") not in alerted):
        alerts.append(alert_row(row, "absolute", config.absolute, None))
    if config.relative is not None and (window, "relative") not in alerted:
        before = [v for w, v in history.items() if w < window]
        h, n = sum(v[0] for v in before), sum(v[1] for v in before)
        if n >= config.min_traces:
            baseline = h / n
            threshold = config.relative * baseline
            if row.rate >= threshold and row.rate_low > baseline and row.rate > 0:
                alerts.append(alert_row(row, "relative", threshold, baseline))
    for a in alerts:
        alerted.add((window, a.rule))
    return alerts


def alert_row(row: RouteRateRow, rule: str, threshold: float,
              baseline: float | None) -> AlertRow:
    return AlertRow(
        route=row.route, window_start=row.window_start, window_end=row.window_end, rule=rule,
        threshold=threshold, baseline=baseline, rate=row.rate, rate_low=row.rate_low,
        rate_high=row.rate_high, traces=row.traces, hallucinated=row.hallucinated,
        sample_trace_ids=row.sample_trace_ids, emitted_at=datetime.now(UTC),
    )


class _AlertFn(RouteKeyedFn):
    stage = "alerts"
    HISTORY = ReadModifyWriteStateSpec("history", PickleCoder())
    ALERTED = ReadModifyWriteStateSpec("alerted", PickleCoder())

    def __init__(self, config: AlertConfig):
        self._config = config

    def setup(self) -> None:
        self._alerts = beam.metrics.Metrics.counter(METRICS, "alerts")

    def process(self, element: tuple[str, RouteRateRow],
                history_state=beam.DoFn.StateParam(HISTORY),
                alerted_state=beam.DoFn.StateParam(ALERTED)) -> Iterable[AlertRow]:
        _, row = element
        history = history_state.read() or {}
        alerted = alerted_state.read() or set()
        raised = check(row, history, alerted, self._config)
        # Forget alerted windows that have left the history.
        oldest = min(history) if history else None
        alerted = {(w, r) for w, r in alerted if oldest is None or w >= oldest}
        history_state.write(history)
        alerted_state.write(alerted)
        self._alerts.inc(len(raised))
        yield from raised


def alert_message(alert: AlertRow) -> beam.io.PubsubMessage:
    """An alert as a Pub/Sub message: JSON body, route and rule as attributes."""
    body = orjson.dumps(to_dict(alert), default=lambda v: v.isoformat()
                        if isinstance(v, datetime) else str(v))
    return beam.io.PubsubMessage(body, {"route": alert.route, "rule": alert.rule,
                                        "window_start": alert.window_start.isoformat()})


class AlertOutputs(NamedTuple):
    alerts: beam.PCollection[AlertRow]
    dead_letters: beam.PCollection[DeadLetter]  # in the global window (GlobalDeadLetters)


class RouteAlerts(beam.PTransform):
    """Rate rows (every firing) -> `.alerts`: alert rows; `.dead_letters`: the rows the check
    failed on."""

    def __init__(self, config: AlertConfig):
        super().__init__()
        self._config = config

    def expand(self, rates: beam.PCollection[RouteRateRow]) -> AlertOutputs:
        out = (
            rates
            | "Global" >> beam.WindowInto(beam.window.GlobalWindows())
            | "KeyRoute" >> beam.Map(lambda r: (r.route, r)).with_output_types(
                Tuple[str, AnyHint])
            | "Check" >> beam.ParDo(_AlertFn(self._config)).with_outputs("dead", main="alerts")
        )
        dead = (out.dead,) | "DeadLetters" >> GlobalDeadLetters()
        return AlertOutputs(out.alerts, dead)
