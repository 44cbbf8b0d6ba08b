"""Spend caps: `--max-usd` (a batch run) and `--max-usd-per-hour` (a stream), job-wide like
`--rpm/--tpm`.

A cap is held where traces start, after Segment and before DecomposeClaims: a trace is admitted
only while (spend already known + reservations of the traces admitted + this trace's
reservation) stays within the cap, else it is not started and goes, with the reason and its raw
record, to the `skipped` table (which `--redo` reads). A trace already admitted is finished. The
reservation (`reserve_usd`, `common/trace_reservation.py`) is a conservative, upper-ish
estimate of a trace's whole cost, so that admitting by reservations never goes over the cap.

Like the static rate limiter (judges/openai/limits/shares.py) each worker process holds a
fixed share of the cap: the total divided by the job's worker processes (`share`). A
`ROUTE=USD` item caps that route's spend; a bare `USD` (or `*=USD`) caps the whole job's: a
trace must fit both.

In a stream the ledger is per clock hour (processing time, UTC): the reservations of an hour
are replaced by the traces' actual costs as they finish (`CapLedger.settle`, same process), and
later reservations are scaled by the ratio actual/reserved of the finished ones (never below
`MIN_RATIO`). When the hour's budget is used, the sample rate is in effect 0 until the hour
ends: every new trace is skipped (reason max_usd_per_hour); the next hour admits again.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.utils.shared import Shared

from rt4chart.schemas.records import DeadLetter, PreparedTrace
from rt4chart.schemas.rows import AlertRow, SkippedRow
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.common.trace_reservation import reserve_usd
from rt4chart.transforms.judges import runtime

JOB = "*"  # the key of the whole job's cap
MAX_USD, PER_HOUR = "max_usd", "max_usd_per_hour"
TRACES_SKIPPED = "traces_skipped_cap"  # the progress line's counter (pipeline/run/progress.py)
MIN_RATIO = 0.5  # a stream's reservations never shrink below half their estimate
WARMUP = 5  # finished traces before the ratio actual/reserved is used


def _cap_items(flag: str, flex: Flex | None = None) -> Any:
    return option(
        flag, dest=flag[2:].replace("-", "_"), default=(), parsed_default=[], kind="append",
        flex=flex,
        metavar="[ROUTE=]USD",
        help=f"stop starting new traces when the judge spend would pass USD ({flag} ROUTE=USD "
             "caps one route; repeatable); the traces not audited go to the skipped table, "
             "which --redo reads")


@dataclass(frozen=True)
class CapConfig:
    """The spend caps given, and (set when the job starts) the process share and the ledger's
    id: every gate of one job in one process shares one ledger."""

    max_usd: tuple[str, ...] = _cap_items("--max-usd")
    max_usd_per_hour: tuple[str, ...] = _cap_items("--max-usd-per-hour", Flex(
        "Spend cap per hour (USD)",
        "Semicolon-separated [ROUTE=]USD caps on the judge spend per UTC hour (each becomes "
        "--max-usd-per-hour); once reached, new traces go to the skipped table until the "
        "next hour, e.g. 5;checkout=1.", name="max_usd_per_hour",
        regexes=("^[^;=]*=?[0-9.]+(;[^;=]*=?[0-9.]+)*$",)))
    share: int = 1  # the job's worker processes (judges/limits/workers.py worker_processes)
    ledger_id: str = ""
    budget: tuple[tuple[str, float], ...] | None = None  # a round's remaining budget (jobs.py)
    prices: Any = None  # the judge's Prices (cap_prices), set when the job starts
    # The confirming judge's (--confirm-judge) Prices, set when the job starts; None: the
    # confirm calls are the first judge's own (--confirm-ent) or there are none.
    confirm_prices: Any = None
    scale: float = 1.0  # a later round's reservations x this (learned: pipeline/run/cap_rounds.py)

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_usd", tuple(self.max_usd))
        object.__setattr__(self, "max_usd_per_hour", tuple(self.max_usd_per_hour))
        if self.max_usd and self.max_usd_per_hour:
            raise ValueError("give --max-usd (a batch run) or --max-usd-per-hour (a stream), "
                             "not both")
        if self.share < 1:
            raise ValueError(f"the cap's share must be >= 1 process, got {self.share}")
        self.caps  # noqa: B018 -- validates the items

    @property
    def reason(self) -> str:
        return PER_HOUR if self.max_usd_per_hour else MAX_USD

    @property
    def caps(self) -> dict[str, float]:
        """{route or JOB: USD} of the whole job (before the share)."""
        if self.budget is not None:
            return dict(self.budget)
        return parse_caps(self.max_usd or self.max_usd_per_hour)

    @property
    def enabled(self) -> bool:
        return bool(self.max_usd or self.max_usd_per_hour)


def parse_caps(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """{route or JOB: USD} of `[ROUTE=]USD` items; ValueError on a bad or repeated one."""
    caps: dict[str, float] = {}
    for item in items:
        route, _, value = item.rpartition("=")
        route = route.strip() or JOB
        try:
            usd = float(value)
        except ValueError:
            raise ValueError(f"a spend cap must be [ROUTE=]USD, got {item!r}") from None
        if not math.isfinite(usd) or usd < 0:
            raise ValueError(f"a spend cap must be a finite USD amount >= 0, got {item!r}")
        if route in caps:
            raise ValueError(f"spend cap for {route!r} given twice")
        caps[route] = usd
    return caps


# The ledger --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Decision:
    """Whether a trace may start; if not, which cap stopped it and the spend then."""

    admitted: bool
    reservation: float
    cap_route: str = ""
    cap_usd: float = 0.0  # the process's share of that cap
    spent_usd: float = 0.0  # known spend + reservations under that cap, before this trace
    first: bool = False  # the first refusal under that cap this hour (in this process)
    hour_start: int = 0  # the ledger's UTC hour (seconds since the epoch; 0 in batch)


@dataclass
class _Hour:
    start: int  # the UTC hour (seconds since the epoch, floored), or 0 for a batch run
    spent: dict[str, float] = field(default_factory=dict)  # route or JOB: known + reserved
    pending: dict[str, tuple[str, float]] = field(default_factory=dict)  # trace: route, reserved
    refused: set[str] = field(default_factory=set)  # the caps that have refused a trace


class CapLedger:
    """One process's ledger of one job's caps (thread-safe: a process's threads share it).

    `caps`: {route or JOB: USD of the whole job}; `share`: the job's worker processes (each
    holds caps / share). `hourly`: the ledger starts afresh every UTC hour of `clock`."""

    def __init__(self, caps: Mapping[str, float], share: int = 1, hourly: bool = False,
                 clock: Callable[[], float] = time.time):
        self._caps = {route: usd / share for route, usd in caps.items()}
        self._hourly, self._clock = hourly, clock
        self._lock = threading.Lock()
        self._hour = _Hour(self._hour_start())
        self._reserved_done = self._actual_done = 0.0
        self._finished = 0

    def _hour_start(self) -> int:
        return int(self._clock() // 3600 * 3600) if self._hourly else 0

    def _roll(self) -> None:
        start = self._hour_start()
        if start != self._hour.start:
            self._hour = _Hour(start)

    @property
    def ratio(self) -> float:
        """Actual / reserved cost of the finished traces (1 before WARMUP of them)."""
        if self._finished < WARMUP or self._reserved_done <= 0:
            return 1.0
        return max(MIN_RATIO, self._actual_done / self._reserved_done)

    def caps_of(self, route: str) -> list[tuple[str, float]]:
        return [(key, self._caps[key]) for key in (route, JOB) if key in self._caps]

    def admit(self, trace_id: str, route: str, estimate: float) -> Decision:
        """Admit a trace (its reservation is held) or refuse it, under every cap it falls in."""
        with self._lock:
            self._roll()
            reservation = estimate * (self.ratio if self._hourly else 1.0)
            spent = self._hour.spent
            for key, cap in self.caps_of(route):
                if spent.get(key, 0.0) + reservation > cap:
                    first = key not in self._hour.refused
                    self._hour.refused.add(key)
                    return Decision(False, reservation, key, cap, spent.get(key, 0.0), first,
                                    self._hour.start)
            for key, _ in self.caps_of(route):
                spent[key] = spent.get(key, 0.0) + reservation
            self._hour.pending[trace_id] = (route, reservation)
            return Decision(True, reservation)

    def settle(self, trace_id: str, actual: float | None) -> None:
        """A finished trace: its reservation replaced by its actual cost (None: unknown, the
        reservation stays). A trace of an earlier hour only teaches the ratio."""
        with self._lock:
            self._roll()
            held = self._hour.pending.pop(trace_id, None)
            if held is None or actual is None:
                return
            route, reserved = held
            for key, _ in self.caps_of(route):
                self._hour.spent[key] = self._hour.spent.get(key, 0.0) - reserved + actual
            self._reserved_done += reserved
            self._actual_done += actual
            self._finished += 1

    def spent(self, key: str = JOB) -> float:
        with self._lock:
            self._roll()
            return self._hour.spent.get(key, 0.0)


def process_ledger(config: CapConfig, clock: Callable[[], float] = time.time,
                   handle: Shared | None = None) -> CapLedger:
    """The process's ledger of a job (by `config.ledger_id`), made on first use: held by the
    worker's judge runtime behind `handle` (by default this process's), which every stage of
    the pipeline holds."""
    worker = runtime.acquire(handle if handle is not None else runtime.runtime_handle())
    return worker.held(f"spend-ledger:{config.ledger_id}", lambda: CapLedger(
        config.caps, config.share, bool(config.max_usd_per_hour), clock))


def with_ledger_id(config: CapConfig) -> CapConfig:
    """The config with a fresh ledger id (one per job), unless it has one."""
    import dataclasses

    return config if config.ledger_id else dataclasses.replace(config,
                                                               ledger_id=uuid.uuid4().hex)


# The gate ----------------------------------------------------------------------------------

def skipped_row(prepared: PreparedTrace, decision: Decision, reason: str,
                now: datetime | None = None) -> SkippedRow:
    """The skipped table's row of a trace a cap did not let start."""
    from rt4chart.transforms.validate import trace_text

    t = prepared.trace
    scope = "the job" if decision.cap_route == JOB else f"route {decision.cap_route!r}"
    detail = (f"{reason}: {scope}'s cap of ${decision.cap_usd:.6f} (this process's share) "
              f"had ${decision.spent_usd:.6f} spent or reserved; this trace needs about "
              f"${decision.reservation:.6f}")
    return SkippedRow(
        trace_id=t.trace_id, route=t.route, reason=reason, detail=detail,
        cap_route=decision.cap_route, cap_usd=decision.cap_usd, spent_usd=decision.spent_usd,
        reservation_usd=decision.reservation, raw=trace_text(t),
        event_time=datetime.fromtimestamp(t.event_time_us / 1e6, UTC),
        skipped_at=now or datetime.now(UTC))


def cap_alert(decision: Decision, now: datetime) -> AlertRow:
    """The alert that an hour's cap was reached (rule max_usd_per_hour, on the alerts table and
    topic like a rate alert; `route` is the capped route or *): threshold the cap's share,
    rate the spend then; one per process, cap and hour (BigQuery's insert id keeps one)."""
    start = datetime.fromtimestamp(decision.hour_start, UTC)
    return AlertRow(route=decision.cap_route, window_start=start,
                    window_end=datetime.fromtimestamp(decision.hour_start + 3600, UTC),
                    rule=PER_HOUR, threshold=decision.cap_usd, baseline=None,
                    rate=decision.spent_usd, rate_low=decision.spent_usd,
                    rate_high=decision.spent_usd, traces=0, hallucinated=0,
                    sample_trace_ids=(), emitted_at=now)


class CapGateFn(GuardedDoFn):
    """PreparedTrace -> itself when a cap admits it; else a SkippedRow (tag "skipped")."""

    stage = "spend_cap"

    def __init__(self, config: CapConfig, stages: Any, prices: Any,
                 clock: Callable[[], float] = time.time):
        self._config, self._stages, self._prices, self._clock = config, stages, prices, clock
        from rt4chart.transforms.judge_stage import METRICS

        self._skipped = runtime.counter(METRICS, TRACES_SKIPPED)
        self._shared = runtime.runtime_handle()  # the worker runtime holds the job's ledger

    def setup(self) -> None:
        self._worker = runtime.acquire(self._shared)  # held while set up: it owns the ledger
        self._ledger = process_ledger(self._config, self._clock, self._shared)

    def teardown(self) -> None:
        self._worker = self._ledger = None

    def process(self, prepared: PreparedTrace) -> Iterator[Any]:
        estimate = reserve_usd(prepared, self._stages, self._prices,
                               self._config.confirm_prices) * self._config.scale
        decision = self._ledger.admit(prepared.trace.trace_id, prepared.trace.route, estimate)
        if decision.admitted:
            yield prepared
            return
        self._skipped.inc()
        now = datetime.fromtimestamp(self._clock(), UTC)
        yield beam.pvalue.TaggedOutput("skipped", skipped_row(prepared, decision,
                                                              self._config.reason, now))
        if decision.first and self._config.max_usd_per_hour:
            yield beam.pvalue.TaggedOutput("alerts", cap_alert(decision, now))


class SettleFn(GuardedDoFn):
    """Answer rows -> nothing; each finished trace's actual cost settles its reservation in
    the process's ledger (a stream's hourly ledger learns from it). A fault leaves the
    reservation held (the cap errs on the side of spending less); the answer is written."""

    stage = "settle_spend"

    def fault(self, answer: Any, reason: str) -> Iterator[Any]:
        return iter(())

    def __init__(self, config: CapConfig, clock: Callable[[], float] = time.time):
        self._config, self._clock = config, clock
        self._shared = runtime.runtime_handle()  # the worker runtime holds the job's ledger

    def setup(self) -> None:
        self._worker = runtime.acquire(self._shared)  # held while set up: it owns the ledger
        self._ledger = process_ledger(self._config, self._clock, self._shared)

    def teardown(self) -> None:
        self._worker = self._ledger = None

    def process(self, answer: Any) -> Iterator[Any]:
        self._ledger.settle(answer.trace_id, answer.cost_usd)
        return iter(())


class CapGateOutputs(NamedTuple):
    admitted: beam.PCollection[PreparedTrace]
    skipped: beam.PCollection[SkippedRow]
    alerts: beam.PCollection[AlertRow]  # a stream's "cap reached" alerts
    dead_letters: beam.PCollection[DeadLetter]  # the traces the gate failed on


class CapGate(beam.PTransform):
    """Prepared traces -> admitted traces, skipped rows, cap alerts and dead letters."""

    def __init__(self, config: CapConfig, stages: Any, prices: Any,
                 clock: Callable[[], float] = time.time):
        super().__init__()
        self._fn = CapGateFn(config, stages, prices, clock)

    def expand(self, prepared: beam.PCollection[PreparedTrace]) -> CapGateOutputs:
        out = prepared | "Admit" >> beam.ParDo(self._fn).with_outputs(
            "skipped", "alerts", "dead", main="admitted")
        return CapGateOutputs(out.admitted, out.skipped, out.alerts, out.dead)


def cap_prices(name: str, options: Mapping[str, str]) -> Any:
    """The prices a cap is reckoned in, the judge kind's: the openai judge's (the Batch API's
    for openai-batch). ValueError for a judge without prices or a model with no price: a cap
    never runs uncapped."""
    from rt4chart.transforms.judges.contract import JudgeSpec

    spec = JudgeSpec.of(name, options)
    return spec.kind().cap_prices(spec)
