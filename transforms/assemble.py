"""Spans -> traces: the spans of each trace, wherever they came from, gathered by trace id and
mapped onto the trace schema (`span_mapping.trace_record`).

Batch (`AssembleTraces`): key by trace id, group, map: one trace record (a dict in the input
schema, validated downstream like a JSON line) or one dead letter per trace id.

Streaming (`AssembleStream`): spans arrive in any order, split over any number of messages.
Keyed state holds a trace's spans; a processing-time timer is pushed back `trace_gap_s` by
every span. When it fires (no span for the gap), the trace is complete if its root span has
come: it goes on as a Message whose body is the trace record (publish time: the latest of its
spans', so that a trace completed after its rate window closed is marked late); else it is a
dead letter saying what was missing. The trace id is then remembered for `horizon_s`: a span
arriving later is a dead letter, not a second trace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import apache_beam as beam
import orjson
from apache_beam.coders import BooleanCoder, PickleCoder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import (
    BagStateSpec,
    ReadModifyWriteStateSpec,
    TimerSpec,
    on_timer,
)
from apache_beam.typehints import Any as AnyHint
from apache_beam.typehints import Tuple
from apache_beam.utils.timestamp import Timestamp

from rt4chart.schemas.records import DeadLetter, Message
from rt4chart.schemas.spans import SourceSpan
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.span_attributes import unique_spans
from rt4chart.transforms.common.span_mapping import (
    NotAQuery,
    SpanMapping,
    Unassembled,
    audited_trace_id,
    root_span,
    trace_record,
)
from rt4chart.transforms.judges import runtime

logger = logging.getLogger(__name__)

STAGE = "assemble"
METRICS = "rt4chart"
# Whole traces skipped as not queries (span_mapping.NotAQuery): shown in the run's summary.
NOT_QUERIES = "traces_not_queries"
MAX_REASON_CHARS = 500


def spans_text(spans: Iterable[SourceSpan]) -> str:
    """The spans of a trace as JSON text (a dead letter's raw record)."""
    return orjson.dumps([
        {"trace_id": s.trace_id, "span_id": s.span_id, "parent_id": s.parent_id,
         "name": s.name, "start_ns": s.start_ns, "end_ns": s.end_ns,
         "attributes": dict(s.attributes), "resource": dict(s.resource)}
        for s in spans], default=str).decode()


def assemble(trace_id: str, spans: Iterable[SourceSpan],
             mapping: SpanMapping) -> tuple[dict[str, Any] | None, DeadLetter | None]:
    """(the trace record, None), or (None, its dead letter) when the spans do not make one or
    mapping them fails."""
    spans = unique_spans(spans)
    try:
        return trace_record(spans, mapping), None
    except NotAQuery:
        raise  # skipped and counted by the caller, never a dead letter
    except Unassembled as exc:
        reason = str(exc)
    except Exception as exc:  # noqa: BLE001 - one trace's fault must not stop the run
        logger.warning("trace %s: assembling its spans failed: %r", trace_id, exc)
        reason = f"{STAGE} failed: {type(exc).__name__}: {exc}"
    if len(reason) > MAX_REASON_CHARS:
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    return None, DeadLetter(STAGE, reason, spans_text(spans),
                            _audited_id(spans, mapping) or trace_id)


def _audited_id(spans: list[SourceSpan], mapping: SpanMapping) -> str | None:
    try:
        return audited_trace_id(spans, mapping)
    except Exception:  # noqa: BLE001 - the dead letter keeps the source's trace id
        return None


class _AssembleGroupFn(GuardedDoFn):
    stage = STAGE

    def __init__(self, mapping: SpanMapping):
        self._mapping = mapping
        self._not_queries = runtime.counter(METRICS, NOT_QUERIES)  # as every progress counter

    def fault(self, element: tuple[str, Iterable[SourceSpan]], reason: str) -> Iterator:
        trace_id, spans = element
        yield beam.pvalue.TaggedOutput("dead", DeadLetter(STAGE, reason, spans_text(spans),
                                                          trace_id))

    def process(self, element: tuple[str, Iterable[SourceSpan]]) -> Iterator:
        trace_id, spans = element
        try:
            record, letter = assemble(trace_id, spans, self._mapping)
        except NotAQuery:
            self._not_queries.inc()
            return
        yield record if letter is None else beam.pvalue.TaggedOutput("dead", letter)


class AssembleOutputs(NamedTuple):
    """Traces (records in batch, Messages in streaming) and the traces that are not."""

    traces: beam.PCollection
    dead_letters: beam.PCollection[DeadLetter]


class AssembleTraces(beam.PTransform):
    """Spans (batch) -> one trace record (dict) per trace id, or a dead letter (stage
    "assemble") saying why its spans make none."""

    def __init__(self, mapping: SpanMapping):
        super().__init__()
        self._mapping = mapping

    def expand(self, spans: beam.PCollection[SourceSpan]) -> AssembleOutputs:
        out = (
            spans
            | "KeyByTrace" >> beam.Map(lambda s: (s.trace_id, s))
            | "GroupByTrace" >> beam.GroupByKey()
            | "Map" >> beam.ParDo(_AssembleGroupFn(self._mapping)).with_outputs(
                "dead", main="traces")
        )
        return AssembleOutputs(out.traces, out.dead)


class _AssembleStreamFn(GuardedDoFn):
    """Keyed by trace id: gather spans until none has come for the gap, then emit the trace."""

    stage = STAGE

    def fault(self, element: tuple[str, SourceSpan], reason: str) -> Iterator:
        trace_id, span = element
        yield beam.pvalue.TaggedOutput("dead", DeadLetter(STAGE, reason, spans_text([span]),
                                                          trace_id))

    SPANS = BagStateSpec("spans", PickleCoder())
    DONE = ReadModifyWriteStateSpec("done", BooleanCoder())
    GAP = TimerSpec("gap", TimeDomain.REAL_TIME)

    def __init__(self, mapping: SpanMapping, horizon_s: float):
        self._mapping = mapping
        self._horizon_s = horizon_s
        self._not_queries = runtime.counter(METRICS, NOT_QUERIES)

    def setup(self) -> None:
        self._late = beam.metrics.Metrics.counter(METRICS, "spans_after_assembly")
        self._incomplete = beam.metrics.Metrics.counter(METRICS, "traces_incomplete")

    def process(self, element: tuple[str, SourceSpan], spans=beam.DoFn.StateParam(SPANS),
                done=beam.DoFn.StateParam(DONE), gap=beam.DoFn.TimerParam(GAP)) -> Iterator:
        trace_id, span = element
        if done.read():
            self._late.inc()
            yield beam.pvalue.TaggedOutput("dead", DeadLetter(
                STAGE, "span arrived after its trace was assembled (no span had come for "
                       f"--trace-gap {self._mapping.trace_gap_s:g} s)",
                spans_text([span]), trace_id))
            return
        spans.add(span)
        gap.set(Timestamp.of(time.time() + self._mapping.trace_gap_s))

    @on_timer(GAP)
    def flush(self, key=beam.DoFn.KeyParam, spans=beam.DoFn.StateParam(SPANS),
              done=beam.DoFn.StateParam(DONE), gap=beam.DoFn.TimerParam(GAP)) -> Iterator:
        if done.read():  # the horizon has passed: forget the trace
            done.clear()
            return
        got = list(spans.read())
        spans.clear()
        done.write(True)
        gap.set(Timestamp.of(time.time() + self._horizon_s))
        yield from self._emit(key, got)

    def _emit(self, trace_id: str, got: list[SourceSpan]) -> Iterator:
        received = max((s.received_us for s in got if s.received_us is not None), default=None)
        stamp = received / 1e6 if received is not None else time.time()
        if root_span(got) is None:
            self._incomplete.inc()
            letter = DeadLetter(STAGE, f"incomplete trace: no root span after --trace-gap "
                                       f"{self._mapping.trace_gap_s:g} s ({len(got)} span(s) "
                                       "received)", spans_text(unique_spans(got)),
                                _audited_id(got, self._mapping) or trace_id)
            yield beam.pvalue.TaggedOutput("dead", beam.window.TimestampedValue(letter, stamp))
            return
        try:
            record, letter = assemble(trace_id, got, self._mapping)
        except NotAQuery:
            self._not_queries.inc()
            return
        if letter is not None:
            yield beam.pvalue.TaggedOutput("dead", beam.window.TimestampedValue(letter, stamp))
            return
        message = Message(orjson.dumps(record), (("trace_id", record["trace_id"]),), received)
        yield beam.window.TimestampedValue(message, stamp)


class AssembleStream(beam.PTransform):
    """Spans (streaming) -> one Message per complete trace (body: the trace record as JSON),
    and dead letters (stage "assemble"): incomplete traces, spans that do not make a trace,
    spans that came after their trace was assembled."""

    def __init__(self, mapping: SpanMapping, horizon_s: float = 86_400.0):
        super().__init__()
        self._mapping = mapping
        self._horizon_s = horizon_s

    def expand(self, spans: beam.PCollection[SourceSpan]) -> AssembleOutputs:
        out = (
            spans
            | "KeyByTrace" >> beam.Map(lambda s: (s.trace_id, s)).with_output_types(
                Tuple[str, AnyHint])
            | "Gather" >> beam.ParDo(_AssembleStreamFn(self._mapping, self._horizon_s))
            .with_outputs("dead", main="traces")
        )
        return AssembleOutputs(out.traces, out.dead)
