"""Trace validation: raw records (JSON lines, Parquet rows, Pub/Sub messages) -> Trace.

Every invalid record goes to the dead letters whole, with the reason and the stage; nothing is
dropped silently. A trace_id seen twice is audited once: in batch the earliest copy is kept
(GroupByKey, deterministic); in streaming the first to arrive is kept and the id remembered in
keyed state for `dedupe_horizon_s` of processing time (Pub/Sub redeliveries and producer
retries come within minutes; the horizon bounds the state).

Validation checks what later stages assume, so that no record can fail them: event times
within 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999Z after conversion to UTC; strings where
strings are expected, within the field limits of `transforms/common/limits.py` (ids, routes, doc
ids,
task and generator, metadata entries); numbers finite (no NaN or Infinity, named in the
reason) and read exactly (orjson rounds integers beyond 64 bits to doubles: such a line is read
again with the standard library, so an id or a value never changes silently); structured
contexts nested at most MAX_JSON_DEPTH deep. Text must be valid Unicode: a string holding a
lone UTF-16 surrogate (e.g. JSON "\\ud800" read by a lenient parser) is dead-lettered rather
than cleaned, as auditing text the generator never produced could change the verdict. Any other
exception while validating one record is that record's dead letter too, never a failed run. The
field checks are in `transforms/common/fields.py`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Any, NamedTuple

import apache_beam as beam
import orjson
from apache_beam.coders import BooleanCoder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import Any as AnyHint
from apache_beam.typehints import Tuple
from apache_beam.utils.timestamp import Timestamp

from rt4chart.schemas.records import DeadLetter, Message, Trace
from rt4chart.transforms.checks.injection import scan_trace
from rt4chart.transforms.checks.json_text import load_strict
from rt4chart.transforms.common.fields import (
    EPOCH,
    SURROGATE,
    InvalidTrace,
    check_text,
    escape_surrogates,
    optional_label,
    parse_contexts,
    parse_conversation,
    parse_metadata,
    parse_timestamp,
    string_field,
)
from rt4chart.transforms.common.guard import GuardedDoFn, fault_letter_reason
from rt4chart.transforms.common.limits import (
    MAX_CONVERSATION_CHARS,
    MAX_QUESTION_CHARS,
    MAX_ROUTE_CHARS,
    MAX_TRACE_ID_CHARS,
)
from rt4chart.transforms.common.rawtext import (  # noqa: F401 - their home was here
    raw_text,
    trace_record,
    trace_text,
)
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.judges import runtime

STAGE = "validate"
# What orjson stops at when a line holds JavaScript's non-finite numbers (the position it gives
# is the token's, or after its sign).
_NON_FINITE = re.compile(r"-?(?:NaN|Infinity)")


def load_json(data: bytes | str) -> Any:
    """One JSON text, read as orjson reads it with three corrections: an object that repeats a
    key (at any depth) is refused, as which value is meant is ambiguous; integers beyond 64
    bits, which orjson rounds to doubles, are read exactly (an id or a record value must not
    change silently); and a NaN or Infinity is named in the error (see `json_text`).

    Raises:
        InvalidTrace: not valid JSON, a repeated key, or nested too deep to read.
    """
    try:
        return load_strict(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidTrace(f"not valid JSON: {exc}{_non_finite(exc)}") from exc


def _non_finite(exc: orjson.JSONDecodeError) -> str:
    doc = exc.doc if isinstance(exc.doc, str) else ""
    start = exc.pos - 1 if exc.pos and doc[exc.pos - 1 : exc.pos] == "-" else exc.pos
    found = _NON_FINITE.match(doc, start)
    if found is None:
        return ""
    return f" ({found.group()}: JSON numbers must be finite; NaN and Infinity are not JSON)"


def _message_record(message: Message) -> dict:
    """A Pub/Sub message's body, with `trace_id`, `route` (attributes) and `timestamp`
    (publish time) filled in where the body has none."""
    try:
        record = load_json(message.data)
    except InvalidTrace as exc:
        raise InvalidTrace(f"message body is {exc}") from exc
    if not isinstance(record, dict):
        raise InvalidTrace(f"a trace must be a JSON object, got {type(record).__name__}")
    attributes = dict(message.attributes)
    for name in ("trace_id", "route"):
        if record.get(name) is None and attributes.get(name):
            record[name] = attributes[name]
    if record.get("timestamp") is None and message.publish_time_us is not None:
        try:
            record["timestamp"] = EPOCH + timedelta(microseconds=message.publish_time_us)
        except (OverflowError, TypeError) as exc:
            raise InvalidTrace(f"publish time {message.publish_time_us!r:.40} is out of "
                               "range") from exc
    return record


def parse_trace(record: Any) -> Trace:
    """Validate one record (a dict, one JSON line, or a Pub/Sub Message) into a Trace, which
    keeps the record as received (`Trace.raw`)."""
    raw = raw_text(record)
    if isinstance(record, Message):
        record = _message_record(record)
    if isinstance(record, bytes | str):
        record = load_json(record)
    if not isinstance(record, dict):
        raise InvalidTrace(f"a trace must be a JSON object, got {type(record).__name__}")
    # kept byte for byte: "F22", " F22" and "F22\t" are three traces (issue 33)
    trace_id = string_field(record, "trace_id", required=True)
    if not trace_id.strip():
        raise InvalidTrace("'trace_id' is empty")
    return Trace(
        trace_id=check_text(trace_id, "field 'trace_id'", MAX_TRACE_ID_CHARS),
        route=string_field(record, "route", "default", max_chars=MAX_ROUTE_CHARS) or "default",
        event_time_us=parse_timestamp(record.get("timestamp")),
        question=string_field(record, "question", max_chars=MAX_QUESTION_CHARS),
        contexts=parse_contexts(record.get("contexts")),
        answer=string_field(record, "answer", required=True),
        task=optional_label(record, "task"),
        generator=optional_label(record, "generator"),
        metadata=parse_metadata(record.get("metadata")),
        raw=raw,
        conversation=parse_conversation(record, MAX_CONVERSATION_CHARS),
    )




def _field_of(record: Any, name: str, max_chars: int) -> str | None:
    """A string field of a record that may not parse, for the dead letter's columns: only when
    it is valid text within its limit (the raw record keeps it whatever it is)."""
    attributes = dict(record.attributes) if isinstance(record, Message) else {}
    if isinstance(record, Message):
        record = record.data
    if isinstance(record, bytes | str):
        try:
            record = orjson.loads(record)
        except orjson.JSONDecodeError:
            record = None
    value = record.get(name) if isinstance(record, dict) else None
    if not isinstance(value, str):
        value = attributes.get(name)
    if not isinstance(value, str) or len(value) > max_chars or SURROGATE.search(value):
        return None
    return value


class _ValidateFn(GuardedDoFn):
    stage = STAGE

    def fault(self, record: Any, reason: str) -> Iterable[Any]:
        yield dead_letter(record, reason)

    def __init__(self, windowing: WindowingConfig | None = None):
        self._windowing = windowing
        self._read = runtime.counter("rt4chart", "traces_read")  # progress: the job's total

    def process(self, record: Any) -> Iterable[Any]:
        self._read.inc()
        try:
            trace = parse_trace(record)
        except InvalidTrace as exc:
            yield dead_letter(record, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - one record must not stop the run
            yield dead_letter(record, f"validation failed: {exc!r:.300}")
            return
        published = record.publish_time_us if isinstance(record, Message) else None
        if self._windowing is not None and published is not None:
            if self._windowing.event_time == "publish":  # replayed traces: windows by arrival
                trace = replace(trace, event_time_us=published)
            if self._windowing.too_late(trace.event_time_us, published):
                trace = replace(trace, late=True)
        yield beam.window.TimestampedValue(mark_suspicious(trace), trace.event_time_us / 1e6)


def mark_suspicious(trace: Trace) -> Trace:
    """The trace with the instruction-like text aimed at an evaluator it holds ("context 2:
    Ignore previous instructions…", see `injection.scan_trace`); unchanged when there is none."""
    findings = scan_trace(trace.user_text, [d.text for d in trace.contexts], trace.answer,
                          titles=[d.doc_id for d in trace.contexts])
    if not findings:
        return trace
    return replace(trace, suspicious=tuple(f"{f.where}: {f.snippet}" for f in findings))


def dead_letter(record: Any, reason: str) -> beam.pvalue.TaggedOutput:
    """A record that failed validation, to the "dead" output."""
    return beam.pvalue.TaggedOutput("dead", DeadLetter(
        STAGE, escape_surrogates(reason), raw_text(record),
        _field_of(record, "trace_id", MAX_TRACE_ID_CHARS),
        _field_of(record, "route", MAX_ROUTE_CHARS)))


class _FirstOfIdFn(GuardedDoFn):
    stage = "dedupe"

    def fault(self, element: tuple[str, Iterable[Trace]], reason: str) -> Iterable[Any]:
        for trace in element[1]:
            yield beam.pvalue.TaggedOutput("dead", fault_letter_reason(self.stage, reason, trace))

    def process(self, element: tuple[str, Iterable[Trace]]) -> Iterable[Any]:
        _, traces = element
        ordered = sorted(traces, key=lambda t: (t.event_time_us, repr(t)))
        yield ordered[0]
        for dup in ordered[1:]:
            yield beam.pvalue.TaggedOutput("dead", duplicate(dup))


def duplicate(trace: Trace) -> DeadLetter:
    return DeadLetter("dedupe", "duplicate trace_id: audited once", raw_text(trace),
                      trace.trace_id, trace.route)


class _FirstSeenFn(GuardedDoFn):
    """Streaming dedupe: keyed state remembers a trace_id for `horizon_s` of processing time."""

    stage = "dedupe"

    def trace_of(self, element: tuple[str, Trace]) -> Trace:
        return element[1]

    SEEN = ReadModifyWriteStateSpec("seen", BooleanCoder())
    EXPIRE = TimerSpec("expire", TimeDomain.REAL_TIME)

    def __init__(self, horizon_s: float):
        self._horizon_s = horizon_s

    def process(self, element: tuple[str, Trace], seen=beam.DoFn.StateParam(SEEN),
                expire=beam.DoFn.TimerParam(EXPIRE)):
        _, trace = element
        if seen.read():
            yield beam.pvalue.TaggedOutput("dead", duplicate(trace))
            return
        seen.write(True)
        expire.set(Timestamp.of(time.time() + self._horizon_s))
        yield trace

    @on_timer(EXPIRE)
    def forget(self, seen=beam.DoFn.StateParam(SEEN)):
        seen.clear()


class ValidateOutputs(NamedTuple):
    traces: beam.PCollection[Trace]
    dead_letters: beam.PCollection[DeadLetter]


class ValidateTraces(beam.PTransform):
    """Raw records -> valid Traces (timestamped with their event time), each trace_id once;
    everything else to the dead letters.

    With `windowing` (streaming), a message that arrived after its rate window closed is
    marked `late`, and duplicates are caught with keyed state instead of a GroupByKey.
    """

    def __init__(self, windowing: WindowingConfig | None = None,
                 dedupe_horizon_s: float = 86_400.0):
        super().__init__()
        self._windowing = windowing
        self._horizon_s = dedupe_horizon_s

    def expand(self, records: beam.PCollection) -> ValidateOutputs:
        parsed = records | "Parse" >> beam.ParDo(_ValidateFn(self._windowing)).with_outputs(
            "dead", main="ok")
        keyed = parsed.ok | "KeyById" >> beam.Map(lambda t: (t.trace_id, t)).with_output_types(
            Tuple[str, AnyHint])
        if self._windowing is not None and self._windowing.streaming:
            unique = keyed | "FirstSeen" >> beam.ParDo(
                _FirstSeenFn(self._horizon_s)).with_outputs("dead", main="ok")
        else:
            unique = (
                keyed
                | "GroupById" >> beam.GroupByKey()
                | "FirstOfId" >> beam.ParDo(_FirstOfIdFn()).with_outputs("dead", main="ok")
            )
        dead = (parsed.dead, unique.dead) | "DeadLetters" >> beam.Flatten()
        return ValidateOutputs(unique.ok, dead)
