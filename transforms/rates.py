"""Per-route hallucination rates and costs in event-time windows (see windows.py)."""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace
from typing import NamedTuple

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec
from apache_beam.typehints import Any as AnyHint
from apache_beam.typehints import Tuple

from rt4chart.schemas.records import NO_ROUTE, DeadLetter, Traffic
from rt4chart.schemas.rows import (
    AnswerRow,
    CostRow,
    DeadLetterRow,
    RouteRateRow,
    usage_columns,
    usage_of,
)
from rt4chart.schemas.usage import Usage, UsageRecord
from rt4chart.transforms.common.guard import GlobalDeadLetters, GuardedDoFn, RouteKeyedFn
from rt4chart.transforms.common.joins import wilson
from rt4chart.transforms.common.windows import BATCH, WindowingConfig, window_columns

METRICS = "rt4chart"
SAMPLES = 5
_RANK = {"CON": 0, "NIC": 1}


@dataclass(frozen=True)
class RouteCounts:
    """Counts of one route and window; incomplete answers are counted apart from the rate.

    The traffic counts (seen .. dead_lettered) come from Traffic records (sampling.py); the
    weighted sums over complete answers (`weight`: Σw, `weight2`: Σw², `weight_hallucinated`:
    Σw·[label != ENT]) give the Horvitz-Thompson rate and Kish's effective sample size.
    """

    traces: int = 0
    hallucinated: int = 0
    con: int = 0
    nic: int = 0
    incomplete: int = 0
    usage: Usage = Usage()
    samples: tuple[tuple[int, str], ...] = ()  # (CON 0 / NIC 1, trace_id), worst first
    suspicious: int = 0  # answers marked suspicious_input, incomplete ones too
    seen: int = 0
    sampled: int = 0
    always: int = 0
    skipped_cap: int = 0
    dead_lettered: int = 0
    weight: float = 0.0
    weight2: float = 0.0
    weight_hallucinated: float = 0.0

    @property
    def total(self) -> int:
        return self.traces + self.incomplete

    def merge(self, other: RouteCounts) -> RouteCounts:
        summed = {f.name: getattr(self, f.name) + getattr(other, f.name)
                  for f in fields(self) if f.name != "samples"}
        return RouteCounts(**summed,
                           samples=tuple(sorted({*self.samples, *other.samples})[:SAMPLES]))


def counts_of(element: AnswerRow | Traffic) -> RouteCounts:
    """One answer row, or one Traffic record, as counts."""
    if isinstance(element, Traffic):
        return RouteCounts(**{element.kind: element.count})
    answer = element
    usage = usage_of(answer)
    suspicious = int(bool(answer.suspicious_input))
    if answer.status != "ok":
        return RouteCounts(incomplete=1, usage=usage, suspicious=suspicious)
    label = answer.label
    samples = ((_RANK[label], answer.trace_id),) if label in _RANK else ()
    w = 1.0 if answer.sample_weight is None else answer.sample_weight  # rows before sampling
    bad = int(label != "ENT")
    return RouteCounts(1, bad, int(label == "CON"), int(label == "NIC"), 0, usage,
                       samples, suspicious, weight=w, weight2=w * w, weight_hallucinated=w * bad)


def weighted_rate(c: RouteCounts) -> tuple[float | None, float | None, float | None]:
    """(rate, low, high): Σw·h / Σw, and the Wilson interval at n_eff = (Σw)² / Σw² (the
    number audited, discounted for unequal weights; n when all weights are equal)."""
    if not c.weight:
        return None, None, None
    rate = c.weight_hallucinated / c.weight
    n_eff = c.weight * c.weight / c.weight2
    # k = rate * n_eff, written so that equal weights give exactly k = hallucinated, n = traces.
    low, high = wilson(c.weight_hallucinated * c.weight / c.weight2, n_eff)
    return rate, low, high


class RouteCountsFn(beam.CombineFn):
    """Sums RouteCounts; mergeable, so it runs with combiner lifting."""

    def create_accumulator(self) -> RouteCounts:
        return RouteCounts()

    def add_input(self, acc: RouteCounts, element: AnswerRow | Traffic) -> RouteCounts:
        return acc.merge(counts_of(element))

    def merge_accumulators(self, accs) -> RouteCounts:
        return functools.reduce(RouteCounts.merge, accs, RouteCounts())

    def extract_output(self, acc: RouteCounts) -> RouteCounts:
        return replace(acc)


def rate_row(route: str, window: dict, c: RouteCounts, late: int = 0) -> RouteRateRow:
    """The rate row of a route's counts in a window (`window`: the window columns)."""
    low, high = wilson(c.hallucinated, c.traces)
    w_rate, w_low, w_high = weighted_rate(c)
    return RouteRateRow(
        route=route, **window, traces=c.traces, hallucinated=c.hallucinated,
        rate=c.hallucinated / c.traces if c.traces else None, rate_low=low,
        rate_high=high, con=c.con, nic=c.nic, incomplete=c.incomplete,
        late=late, **usage_columns(RouteRateRow, c.usage),
        sample_trace_ids=tuple(t for _, t in c.samples), suspicious=c.suspicious,
        seen=c.seen, sampled=c.sampled, always=c.always, audited=c.total,
        skipped_cap=c.skipped_cap, dead_lettered=c.dead_lettered, rate_weighted=w_rate,
        rate_weighted_low=w_low, rate_weighted_high=w_high,
    )


class _RateRowFn(RouteKeyedFn):
    """Counts of a (route, window) pane -> a rate row, with the traces counted late.

    State (per route and window) remembers how many answers the window held at its last
    firing before the late ones, so that a LATE pane says how many traces it added.
    """

    stage = "rates"
    ON_TIME = ReadModifyWriteStateSpec("on_time_total", VarIntCoder())

    def process(self, element: tuple[str, RouteCounts], win=beam.DoFn.WindowParam,
                pane=beam.DoFn.PaneInfoParam, on_time=beam.DoFn.StateParam(ON_TIME)):
        route, counts = element
        columns = window_columns(win, pane)
        late = 0
        if columns["pane"] == "LATE":
            late = counts.total - (on_time.read() or 0)
        else:
            on_time.write(counts.total)
        yield rate_row(route, columns, counts, late)


class _Restamp(GuardedDoFn):
    """Give each row its event time (joins may have emitted it at another timestamp)."""

    def __init__(self, event_s, name: str, stage: str):
        self._event_s = event_s
        self._name = name
        self.stage = stage

    def setup(self) -> None:
        self._late = beam.metrics.Metrics.counter(METRICS, f"late_{self._name}")

    def process(self, element: AnswerRow | UsageRecord | Traffic):
        if getattr(element, "late", False):
            self._late.inc()  # audited and written, but its window has closed: not aggregated
            return
        event_s = self._event_s(element)
        # No event time (a dead letter's Traffic): the window of the element's own timestamp.
        yield element if event_s is None else beam.window.TimestampedValue(element, event_s)


def _event_s(element: AnswerRow | Traffic) -> float | None:
    if isinstance(element, Traffic):
        return None if element.event_time_us is None else element.event_time_us / 1e6
    return element.event_time.timestamp()


def dead_letter_traffic(row: DeadLetterRow) -> Traffic:
    """A dead letter row as traffic of its route (NO_ROUTE when it names none), in the window
    of its received_at: a dead letter has no event time of its own."""
    return Traffic(row.route or NO_ROUTE, int(row.received_at.timestamp() * 1_000_000),
                   "dead_lettered")


def skipped_traffic(row) -> Traffic:
    """A skipped row (a trace a spend cap kept from the judges, SkippedRow) as traffic of its
    route, in the window of its event time."""
    return Traffic(row.route, int(row.event_time.timestamp() * 1_000_000), "skipped_cap")


class RateOutputs(NamedTuple):
    rates: beam.PCollection[RouteRateRow]
    dead_letters: beam.PCollection[DeadLetter]  # in the global window (GlobalDeadLetters)


class CostOutputs(NamedTuple):
    costs: beam.PCollection[CostRow]
    dead_letters: beam.PCollection[DeadLetter]  # in the global window (GlobalDeadLetters)


class RatesByRoute(beam.PTransform):
    """Answer rows (and Traffic records, sampling.py) -> `.rates`: one rate row per (route,
    event-time window) and firing; `.dead_letters`: the rows the step failed on.

    Rows of answers that arrived after their window closed (`late`) are counted in the
    `late_answers` metric and left out.
    """

    def __init__(self, windowing: WindowingConfig = BATCH):
        super().__init__()
        self._windowing = windowing

    def expand(self, answers: beam.PCollection | tuple[beam.PCollection, ...]
               | list[beam.PCollection]) -> RateOutputs:
        if isinstance(answers, tuple | list):  # (answers, traffic): counted together
            answers = answers | "WithTraffic" >> beam.Flatten()
        stamped = answers | "EventTime" >> beam.ParDo(
            _Restamp(_event_s, "answers", "rates")).with_outputs("dead", main="rows")
        rows = (
            stamped.rows
            | "Window" >> self._windowing.window_into()
            | "KeyRoute" >> beam.Map(lambda a: (a.route, a))
            | "Count" >> beam.CombinePerKey(RouteCountsFn())
            # A typed key, so that the stateful row step gets a deterministic key coder.
            | "Typed" >> beam.Map(lambda kv: kv).with_output_types(Tuple[str, AnyHint])
            | "Row" >> beam.ParDo(_RateRowFn()).with_outputs("dead", main="rows")
        )
        dead = (stamped.dead, rows.dead) | "DeadLetters" >> GlobalDeadLetters()
        return RateOutputs(rows.rows, dead)


def cost_row(key: tuple[str, str], usage: Usage, window: dict) -> CostRow:
    """The cost row of a (route, judge model)'s usage in a window."""
    route, model = key
    return CostRow(route=route, judge_model=model, **window, **usage_columns(CostRow, usage))


class _CostRowFn(RouteKeyedFn):
    stage = "costs"

    def process(self, element, win=beam.DoFn.WindowParam, pane=beam.DoFn.PaneInfoParam):
        key, usage = element
        yield cost_row(key, usage, window_columns(win, pane))


class CostsByRoute(beam.PTransform):
    """Usage records of every judge call -> `.costs`: one cost row per (route, judge model,
    window); `.dead_letters`: the records the step failed on.

    The calls of a trace that arrived after its window closed are counted in the `late_usage`
    metric and left out, like its answer; the answers table carries every answer's cost.
    """

    def __init__(self, windowing: WindowingConfig = BATCH):
        super().__init__()
        self._windowing = windowing

    def expand(self, usage: beam.PCollection[UsageRecord]) -> CostOutputs:
        stamped = usage | "EventTime" >> beam.ParDo(_Restamp(
            lambda u: u.event_time_us / 1e6, "usage", "costs")).with_outputs("dead", main="rows")
        rows = (
            stamped.rows
            | "Window" >> self._windowing.window_into()
            | "KeyRouteModel" >> beam.Map(lambda u: ((u.route, u.judge_model), u.usage))
            | "Sum" >> beam.CombinePerKey(lambda usages: sum(usages, Usage()))
            | "Row" >> beam.ParDo(_CostRowFn()).with_outputs("dead", main="rows")
        )
        dead = (stamped.dead, rows.dead) | "DeadLetters" >> GlobalDeadLetters()
        return CostOutputs(rows.rows, dead)
