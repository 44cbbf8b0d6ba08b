"""Regroup a trace's fanned-out results with the trace: the join between judge stages.

Every fan-out (answer sentences, (claim, window) pairs, claims) comes back to one element per
trace before the next step. The number of results to wait for is known from the trace's own
element (the "head"): one per answer sentence, one per (claim, window), one per claim.

- Batch: `CoGroupByKey` on trace_id in the global window: one firing when the input ends.
- Streaming: a stateful DoFn keyed by trace_id that emits as soon as the head and all its
  results have arrived, so a verdict does not wait for a window or a watermark. A processing-time
  timer bounds the wait (`timeout_s`): on expiry the join runs with what has arrived, and the
  join function turns each missing result into a failure with its reason (a trace is never
  lost and a missing result never becomes a label). Results that arrive for a trace already
  joined are counted and logged as orphans.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import apache_beam as beam
from apache_beam.coders import PickleCoder, VarIntCoder
from apache_beam.transforms.combiners import CountCombineFn
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    BagStateSpec,
    CombiningValueStateSpec,
    ReadModifyWriteStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.typehints import Any as AnyHint
from apache_beam.typehints import Tuple
from apache_beam.utils.timestamp import Timestamp

from rt4chart.transforms.common.guard import GuardedDoFn

logger = logging.getLogger(__name__)

METRICS = "rt4chart"
DEFAULT_TIMEOUT_S = 900.0

JoinFn = Callable[[Any, list], Iterable[Any]]


class _CountJoinFn(GuardedDoFn):
    """Stateful join per trace_id: buffer until the head and `expected(head)` parts are in.

    A fault on a head is the join's fault for that trace (`join.fault`); on a part, the part
    is left out: the join then runs at the timeout and records it as missing."""

    stage = "regroup"

    HEAD = ReadModifyWriteStateSpec("head", PickleCoder())
    PARTS = BagStateSpec("parts", PickleCoder())
    COUNT = CombiningValueStateSpec("count", VarIntCoder(), CountCombineFn())
    TIMEOUT = TimerSpec("timeout", TimeDomain.REAL_TIME)

    def __init__(self, expected: Callable[[Any], int], join: JoinFn, event_time: Callable,
                 timeout_s: float, name: str):
        self._expected = expected
        self._join = join
        self._event_time = event_time
        self._timeout_s = timeout_s
        self._name = name

    def fault(self, element: tuple[str, tuple[str, Any]], reason: str) -> Iterable[Any]:
        _, (kind, value) = element
        if kind == "head":
            yield from self._join.fault(value, reason)
        else:
            logger.warning("%s: a result of trace %s left out: %s", self._name, element[0],
                           reason)

    def setup(self) -> None:
        self._orphans = beam.metrics.Metrics.counter(METRICS, f"{self._name}_orphan_results")
        self._timeouts = beam.metrics.Metrics.counter(METRICS, f"{self._name}_join_timeouts")

    def process(self, element: tuple[str, tuple[str, Any]],
                head_state=beam.DoFn.StateParam(HEAD), parts=beam.DoFn.StateParam(PARTS),
                count=beam.DoFn.StateParam(COUNT), timeout=beam.DoFn.TimerParam(TIMEOUT)):
        _, (kind, value) = element
        head = head_state.read()
        if head is None and count.read() == 0:
            timeout.set(Timestamp.of(time.time() + self._timeout_s))
        if kind == "head":
            head = value
            head_state.write(value)
        else:
            parts.add(value)
            count.add(1)
        if head is not None and count.read() >= self._expected(head):
            yield from self._join(head, list(parts.read()))
            for state in (head_state, parts, count):
                state.clear()
            timeout.clear()

    @on_timer(TIMEOUT)
    def expire(self, key=beam.DoFn.KeyParam, head_state=beam.DoFn.StateParam(HEAD),
               parts=beam.DoFn.StateParam(PARTS), count=beam.DoFn.StateParam(COUNT)):
        head, got = head_state.read(), list(parts.read())
        for state in (head_state, parts, count):
            state.clear()
        if head is None:
            self._orphans.inc(len(got))
            logger.warning("%s: %d result(s) for trace %s arrived after it was joined or "
                           "without it; dropped from the join", self._name, len(got), key)
            return
        self._timeouts.inc()
        logger.warning("%s: trace %s joined after %.0f s with %d of %d results; the missing "
                       "ones are recorded as failures", self._name, key, self._timeout_s,
                       len(got), self._expected(head))
        ts = self._event_time(head)
        for out in self._join(head, got):
            if isinstance(out, beam.pvalue.TaggedOutput):
                yield beam.pvalue.TaggedOutput(out.tag, beam.window.TimestampedValue(out.value, ts))
            else:
                yield beam.window.TimestampedValue(out, ts)


class _BatchJoinFn(GuardedDoFn):
    stage = "regroup"

    def __init__(self, join: JoinFn):
        self._join = join

    def fault(self, element: tuple[str, dict[str, list]], reason: str) -> Iterable[Any]:
        for head in element[1]["head"]:
            yield from self._join.fault(head, reason)

    def process(self, element: tuple[str, dict[str, list]]):
        _, groups = element
        for head in groups["head"]:  # exactly one per trace_id
            yield from self._join(head, groups["parts"])


class Regroup(beam.PTransform):
    """{"head": PCollection, "parts": PCollection} -> join(head, parts) per trace.

    `key_head`/`key_part` give the trace_id; `expected(head)` the number of parts to wait for
    (streaming); `join(head, parts)` the outputs, which may be TaggedOutputs listed in `tags`;
    `join.fault(head, reason)` what a trace becomes when its join fails (see guard.py).
    """

    def __init__(self, *, key_head: Callable, key_part: Callable, expected: Callable[[Any], int],
                 join: JoinFn, event_time: Callable[[Any], float], streaming: bool,
                 tags: tuple[str, ...] = (), timeout_s: float = DEFAULT_TIMEOUT_S):
        super().__init__()
        if not callable(getattr(join, "fault", None)):
            raise ValueError("a Regroup join needs a `fault(head, reason)`: what a trace "
                             "becomes when its join fails (see transforms/common/guard.py)")
        self._key_head, self._key_part = key_head, key_part
        self._expected, self._join, self._event_time = expected, join, event_time
        self._streaming, self._tags, self._timeout_s = streaming, tags, timeout_s

    def expand(self, inputs: dict[str, beam.PCollection]
               ) -> beam.PCollection | beam.pvalue.DoOutputsTuple:
        key_head, key_part = self._key_head, self._key_part
        if self._streaming:
            keyed = Tuple[str, Tuple[str, AnyHint]]  # a deterministic key coder for the state
            tagged = (
                inputs["head"] | "KeyHeads" >> beam.Map(
                    lambda h: (key_head(h), ("head", h))).with_output_types(keyed),
                inputs["parts"] | "KeyParts" >> beam.Map(
                    lambda p: (key_part(p), ("part", p))).with_output_types(keyed),
            ) | "Tagged" >> beam.Flatten()
            fn: beam.DoFn = _CountJoinFn(self._expected, self._join, self._event_time,
                                         self._timeout_s, self.label)
        else:
            tagged = {
                "head": inputs["head"] | "KeyHeads" >> beam.Map(lambda h: (key_head(h), h)),
                "parts": inputs["parts"] | "KeyParts" >> beam.Map(lambda p: (key_part(p), p)),
            } | "Group" >> beam.CoGroupByKey()
            fn = _BatchJoinFn(self._join)
        join = beam.ParDo(fn)
        if self._tags:
            join = join.with_outputs(*self._tags, main="main")
        return tagged | "Join" >> join
