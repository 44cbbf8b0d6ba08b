"""The keyed judge stage shared by decomposition, local and global verification.

Requests are reshuffled (so that a fan-out spreads over workers) and each is submitted to the
worker's shared event loop as it arrives, through one judge per worker. Every request
gives exactly one result: the judge's answer, or a failure with its reason. Usage of every call
goes to a side output for cost accounting, and to the Beam counters `rt4chart:{stage}_calls`,
`_errors`, `_input_tokens`, `_cached_tokens`, `_output_tokens`, `_cost_micro_usd` and
`_cost_unknown` (elements whose cost is unknown: a model with no price), which the
job runner reads for its progress line.
"""

from __future__ import annotations

import concurrent.futures
import logging
import queue
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.utils.windowed_value import WindowedValue

from rt4chart.schemas.records import RunInfo, TraceKey
from rt4chart.schemas.usage import Usage, UsageRecord
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.redact import Redactor, redact_configured
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.base import metered
from rt4chart.transforms.judges.contract import Judge, JudgeSpec, judge_model
from rt4chart.transforms.judges.limits.throttling import ThrottleClock, report_throttled
from rt4chart.transforms.reuse import SplitReused, cache_key, cache_row

logger = logging.getLogger(__name__)

METRICS = "rt4chart"
# Counters of every judge stage, named `{stage}_{suffix}`; the cost in millionths of a dollar,
# as Beam counters are integers.
USAGE_COUNTERS = ("calls", "errors", "input_tokens", "cached_tokens", "output_tokens",
                  "cost_micro_usd", "cost_unknown")
# Calls pending per DoFn instance; the judge's own concurrency limit bounds what is on the wire.
MAX_IN_FLIGHT = 1024


class JudgeOutputs(NamedTuple):
    results: beam.PCollection
    usage: beam.PCollection[UsageRecord]
    cache: beam.PCollection[dict]  # judge_cache rows of the successful calls


def short_error(exc: BaseException, keys: Redactor | None = None) -> str:
    """A one-line reason for a failed call (exception type and message, bounded), without the
    configured keys and those of `keys` (a worker's: its judge runtime's)."""
    text = str(exc).replace("\n", " ").strip()
    reason = redact_configured(f"{type(exc).__name__}: {text}", keys or Redactor()) or ""
    return reason[:300]  # redact, then cut


class JudgeCallFn(GuardedDoFn):
    """Base DoFn: one judge call per element, many in flight, no batch barrier.

    Each element's call is submitted to the worker's event loop as it arrives; results are
    emitted as they complete (with the window and timestamp of the element they belong to), at
    most `max_in_flight` are pending per DoFn instance, and the bundle ends when all are done.
    Subclasses say which call to make (`call`), what a success emits (`on_result`) and what a
    failure emits (`on_error`). The judge is built in `setup()` from its spec, so the DoFn
    pickles as a name and options. A fault around a call (submitting it, or the stage's own
    handling of its failure) is the element's failure too (`fault`): the part still arrives at
    its trace's join, as a failure, and the answer comes out incomplete.
    """

    stage = "judge"

    def fault(self, element: Any, reason: str) -> Iterable[Any]:
        yield from self.on_error(element, reason, Usage())

    def __init__(self, spec: JudgeSpec, max_in_flight: int = MAX_IN_FLIGHT,
                 run: RunInfo | None = None):
        self._spec = spec
        self._max_in_flight = max_in_flight
        self._judge: Judge | None = None
        self._model = spec.name
        self._run = run
        self._shared = runtime.runtime_handle()
        # Made where the pipeline is built, as every progress counter: pickled with the folder
        # where a local worker process writes its tally (transforms/common/tally.py).
        self._counters = _UsageCounters(self.stage)

    def cache_inputs(self, element: Any) -> tuple | None:
        """What the call depends on besides the model and prompts (None: never cached)."""
        return None

    def key_of(self, element: Any) -> str | None:
        inputs = self.cache_inputs(element)
        if inputs is None or self._run is None:
            return None
        return cache_key(self.stage, self._run, inputs)

    def setup(self) -> None:
        self._runtime = runtime.acquire(self._shared)
        self._judge = self._runtime.judge(self._spec)
        self._model = judge_model(self._judge, self._spec)
        self._counters.throttled = self._runtime.throttled

    @property
    def _keys(self) -> Redactor:
        """The keys its error reasons are cleaned of: those of the judges of its runtime (their
        key variables and the keys they hold), asked when a reason is made."""
        return self._runtime.keys

    def teardown(self) -> None:
        # Let the runtime (loop and judges) go once no DoFn of this process holds it.
        self._runtime = self._judge = None

    @property
    def replays(self) -> bool:
        """Whether stored answers can stand for calls (the run is known: cache keys exist)."""
        return self._run is not None

    def replayed(self, element: Any, result: Any) -> Iterable[Any]:
        """A request answered by a stored answer (an earlier run's judge_cache): the stage's
        own handling of it (`on_error` when it no longer parses), its usage (reused, at no
        cost) and its cache row, as a call's would be."""
        usage = Usage(reused=1)
        try:
            outputs = list(self.on_result(element, result, usage))
        except Exception as exc:  # noqa: BLE001 - a stored answer that no longer parses
            outputs = list(self.on_error(element, short_error(exc, self._keys), usage))
        yield from outputs
        key: TraceKey = element.key
        yield beam.pvalue.TaggedOutput("usage", UsageRecord(
            key.trace_id, key.route, key.day, self._model, usage, key.event_time_us,
            key.late))
        yield beam.pvalue.TaggedOutput("cache", cache_row(self.key_of(element), self.stage,
                                                          self._run, result))

    def call(self, judge: Judge, element: Any) -> Awaitable[Any]:
        raise NotImplementedError

    def on_result(self, element: Any, result: Any, usage: Usage) -> Iterable[Any]:
        raise NotImplementedError

    def on_error(self, element: Any, reason: str, usage: Usage) -> Iterable[Any]:
        raise NotImplementedError

    def start_bundle(self) -> None:
        self._in_flight = 0
        self._done: queue.SimpleQueue[_Pending] = queue.SimpleQueue()

    def process(self, element: Any, window=beam.DoFn.WindowParam,
                timestamp=beam.DoFn.TimestampParam) -> Iterable[Any]:
        judge = self._judge
        item = _Pending(self._runtime.submit(metered(lambda: self.call(judge, element))),
                        element, window, timestamp)
        self._in_flight += 1
        item.future.add_done_callback(lambda _: self._done.put(item))
        yield from self._drain(block=self._in_flight >= self._max_in_flight)

    def finish_bundle(self) -> Iterable[Any]:
        while self._in_flight:
            yield from self._drain(block=True)

    def _drain(self, block: bool) -> Iterable[Any]:
        """Emit the calls that have completed; with `block`, wait for at least one."""
        while self._in_flight:
            try:
                item = self._done.get(block=block)
            except queue.Empty:
                return
            block = False
            self._in_flight -= 1
            yield from self._emit(item)

    def _failed(self, element: Any, reason: str, usage: Usage) -> list[Any]:
        """`on_error`'s outputs; none when it fails too (the join then records the result as
        missing: the claim fails, never a label)."""
        try:
            return list(self.on_error(element, reason, usage))
        except Exception as exc:  # noqa: BLE001 - emitted from another element's bundle step
            logger.warning("%s: the failure of a call could not be recorded: %r", self.stage,
                           exc)
            return []

    def _emit(self, item: _Pending) -> Iterable[Any]:
        element, errors, cached = item.element, 0, None
        try:
            result, usage = item.future.result()
            outputs = list(self.on_result(element, result, usage))
            key = self.key_of(element)
            if key is not None:
                cached = cache_row(key, self.stage, self._run, result)
        except Exception as exc:  # noqa: BLE001 - a failed call is data, never a crash or a label
            usage = getattr(exc, "rt4chart_usage", Usage(calls=1))
            errors = 1
            outputs = self._failed(element, short_error(exc, self._keys), usage)
        key: TraceKey = element.key
        record = UsageRecord(key.trace_id, key.route, key.day, self._model, usage,
                             key.event_time_us, key.late)
        for value in outputs:
            yield WindowedValue(value, item.timestamp, (item.window,))
        yield beam.pvalue.TaggedOutput("usage",
                                       WindowedValue(record, item.timestamp, (item.window,)))
        if cached is not None:
            yield beam.pvalue.TaggedOutput(
                "cache", WindowedValue(cached, item.timestamp, (item.window,)))
        self._counters.add(usage, errors)


class _UsageCounters:
    """The Beam counters of one judge stage (see USAGE_COUNTERS)."""

    def __init__(self, stage: str):
        self.throttled: ThrottleClock | None = None  # the worker's, in its judge runtime (setup)
        counter = runtime.counter  # Beam counters the launcher can also read mid-run
        (self._calls, self._errors, self._input, self._cached, self._output, self._cost,
         self._cost_unknown) = (counter(METRICS, f"{stage}_{suffix}") for suffix in USAGE_COUNTERS)

    def add(self, usage: Usage, errors: int) -> None:
        # The calls the usage counts (attempts, retries included), as the costs table and the
        # summary count them: not one per element.
        self._calls.inc(usage.calls)
        self._errors.inc(errors)
        self._input.inc(usage.input_tokens)
        self._cached.inc(usage.cached_tokens)
        self._output.inc(usage.output_tokens)
        if usage.cost_usd is None:  # a model with no price: the run's cost is unknown
            self._cost_unknown.inc()
        else:
            self._cost.inc(round(usage.cost_usd * 1_000_000))
        report_throttled(self.throttled)  # time held by rate limits, from this (bundle) thread


@dataclass
class _Pending:
    future: concurrent.futures.Future
    element: Any
    window: Any
    timestamp: Any


class _ReplayFn(GuardedDoFn):
    """A request answered from an earlier run's judge_cache: the stored answer goes through the
    stage's own handling (grounding included), counted as reused, at no cost."""

    def __init__(self, fn: JudgeCallFn):
        self._fn = fn
        self.stage = f"{fn.stage}_replay"

    def fault(self, hit: tuple[Any, Any], reason: str) -> Iterable[Any]:
        yield from self._fn.on_error(hit[0], reason, Usage(reused=1))

    def setup(self) -> None:
        self._fn.setup()
        self._reused = beam.metrics.Metrics.counter(METRICS, f"{self._fn.stage}_reused")

    def process(self, hit: tuple[Any, Any]) -> Iterable[Any]:
        element, result = hit
        yield from self._fn.replayed(element, result)
        self._reused.inc()


class RunJudge(beam.PTransform):
    """Requests -> (results, usage, cache rows): spread over workers, call the judge
    concurrently; with `reuse` (an earlier run's judge_cache rows), replay stored answers."""

    def __init__(self, fn: JudgeCallFn, reuse: beam.PCollection | None = None):
        super().__init__()
        self._fn = fn
        self._reuse = reuse

    def expand(self, requests: beam.PCollection) -> JudgeOutputs:
        replayed = None
        if self._reuse is not None and self._fn.replays:
            split = {"requests": requests, "cache": self._reuse} | "Reuse" >> SplitReused(
                self._fn.key_of, self._fn.stage)
            requests = split.misses
            replayed = split.hits | "Replay" >> beam.ParDo(_ReplayFn(self._fn)).with_outputs(
                "usage", "cache", main="results")
        out = (
            requests
            | "Spread" >> beam.Reshuffle()
            | "Call" >> beam.ParDo(self._fn).with_outputs("usage", "cache", main="results")
        )
        if replayed is None:
            return JudgeOutputs(out.results, out.usage, out.cache)
        return JudgeOutputs(
            (out.results, replayed.results) | "Results" >> beam.Flatten(),
            (out.usage, replayed.usage) | "Usage" >> beam.Flatten(),
            (out.cache, replayed.cache) | "Cache" >> beam.Flatten(),
        )
