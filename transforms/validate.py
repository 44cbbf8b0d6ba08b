"""Trace validation: raw records (JSON lines, Parquet rows, Pub/Sub messages) -> Trace.

Every invalid record goes to the dead letters whole, with the reason and the stage; nothing is
dropped silently. A trace_id seen twice is audited once: in batch the earliest copy is kept
(GroupByKey, deterministic); in streaming the first to arrive is kept and the id remembered in
keyed state for `dedupe_horizon_s` of processing time (Pub/Sub redeliveries and producer
retries come within minutes; the horizon bounds the state).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

import apache_beam as beam
import orjson
from apache_beam.coders import BooleanCoder
from apache_beam.transforms.timeutil import TimeDomain
from apache_beam.transforms.userstate import ReadModifyWriteStateSpec, TimerSpec, on_timer
from apache_beam.typehints import Any as AnyHint
from apache_beam.typehints import Tuple
from apache_beam.utils.timestamp import Timestamp

from rt4chart.schemas.records import DeadLetter, Document, Message, Trace
from rt4chart.transforms.windows import WindowingConfig

STAGE = "validate"


class InvalidTrace(ValueError):
    """A record that does not satisfy the trace schema."""


def _string(record: dict, name: str, default: str | None = None, required: bool = False) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise InvalidTrace(f"missing required field '{name}'")
        return default if default is not None else ""
    if not isinstance(value, str):
        raise InvalidTrace(f"field '{name}' must be a string, got {type(value).__name__}")
    return value


def parse_timestamp(value: Any) -> int:
    """Microseconds since the epoch from RFC 3339 text or a datetime; now when absent."""
    if value is None:
        return time.time_ns() // 1000
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidTrace(f"timestamp {value!r:.60} is not RFC 3339") from exc
    if isinstance(value, datetime):
        if value.tzinfo is None:  # Parquet timestamps without a zone are UTC
            value = value.replace(tzinfo=UTC)
        return int(value.timestamp() * 1_000_000)
    raise InvalidTrace(f"timestamp must be RFC 3339 text, got {type(value).__name__}")


def _context_text(item: dict, i: int) -> str:
    text = item.get("text")
    if isinstance(text, dict | list):  # structured record (data-to-text): render it readably
        return orjson.dumps(text, option=orjson.OPT_INDENT_2).decode()
    if not isinstance(text, str):
        raise InvalidTrace(f"contexts[{i}].text must be a string")
    return text


def parse_contexts(value: Any) -> tuple[Document, ...]:
    """A non-empty list of strings or of {doc_id, text} objects."""
    if not isinstance(value, list | tuple) or not value:
        raise InvalidTrace("'contexts' must be a non-empty list")
    docs: list[Document] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            docs.append(Document(f"doc{i}", item))
        elif isinstance(item, dict):
            doc_id = item.get("doc_id")
            doc_id = f"doc{i}" if doc_id in (None, "") else str(doc_id)
            docs.append(Document(doc_id, _context_text(item, i)))
        else:
            raise InvalidTrace(f"contexts[{i}] must be a string or an object with 'text'")
    if len({d.doc_id for d in docs}) != len(docs):
        raise InvalidTrace("contexts have duplicate doc_id values")
    if not any(d.text.strip() for d in docs):
        raise InvalidTrace("contexts contain no text")
    return tuple(docs)


def _metadata(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, list | tuple):  # Parquet map columns arrive as (key, value) pairs
        value = dict(value)
    if not isinstance(value, dict):
        raise InvalidTrace("'metadata' must be a map of strings")
    return tuple(sorted((str(k), "" if v is None else str(v)) for k, v in value.items()))


def _message_record(message: Message) -> dict:
    """A Pub/Sub message's body, with `trace_id`, `route` (attributes) and `timestamp`
    (publish time) filled in where the body has none."""
    try:
        record = orjson.loads(message.data)
    except orjson.JSONDecodeError as exc:
        raise InvalidTrace(f"message body is not valid JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise InvalidTrace(f"a trace must be a JSON object, got {type(record).__name__}")
    attributes = dict(message.attributes)
    for name in ("trace_id", "route"):
        if record.get(name) is None and attributes.get(name):
            record[name] = attributes[name]
    if record.get("timestamp") is None and message.publish_time_us is not None:
        record["timestamp"] = datetime.fromtimestamp(message.publish_time_us / 1e6, tz=UTC)
    return record


def parse_trace(record: Any) -> Trace:
    """Validate one record (a dict, one JSON line, or a Pub/Sub Message) into a Trace."""
    if isinstance(record, Message):
        record = _message_record(record)
    if isinstance(record, bytes | str):
        try:
            record = orjson.loads(record)
        except orjson.JSONDecodeError as exc:
            raise InvalidTrace(f"not valid JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise InvalidTrace(f"a trace must be a JSON object, got {type(record).__name__}")
    trace_id = _string(record, "trace_id", required=True).strip()
    if not trace_id:
        raise InvalidTrace("'trace_id' is empty")
    return Trace(
        trace_id=trace_id,
        route=_string(record, "route", "default") or "default",
        event_time_us=parse_timestamp(record.get("timestamp")),
        question=_string(record, "question"),
        contexts=parse_contexts(record.get("contexts")),
        answer=_string(record, "answer", required=True),
        task=record.get("task") if isinstance(record.get("task"), str) else None,
        generator=record.get("generator") if isinstance(record.get("generator"), str) else None,
        metadata=_metadata(record.get("metadata")),
    )


def trace_record(trace: Trace) -> dict:
    """A validated trace back in the input schema (it validates to the same Trace)."""
    record: dict[str, Any] = {
        "trace_id": trace.trace_id, "route": trace.route,
        "timestamp": datetime.fromtimestamp(trace.event_time_us / 1e6, tz=UTC).isoformat(),
        "question": trace.question,
        "contexts": [{"doc_id": d.doc_id, "text": d.text} for d in trace.contexts],
        "answer": trace.answer,
    }
    for name in ("task", "generator"):
        if getattr(trace, name) is not None:
            record[name] = getattr(trace, name)
    if trace.metadata:
        record["metadata"] = dict(trace.metadata)
    return record


def raw_text(record: Any) -> str:
    """The record as received, as text, for the dead letters (a Trace in the input schema)."""
    if isinstance(record, Trace):
        record = trace_record(record)
    if isinstance(record, Message):
        record = record.data
    if isinstance(record, bytes):
        return record.decode("utf-8", errors="replace")
    if isinstance(record, str):
        return record
    return orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def _field_of(record: Any, name: str) -> str | None:
    """A string field of a record that may not parse, for the dead letter's columns."""
    attributes = dict(record.attributes) if isinstance(record, Message) else {}
    if isinstance(record, Message):
        record = record.data
    if isinstance(record, bytes | str):
        try:
            record = orjson.loads(record)
        except orjson.JSONDecodeError:
            record = None
    if isinstance(record, dict) and isinstance(record.get(name), str):
        return record[name]
    return attributes.get(name)


class _ValidateFn(beam.DoFn):
    def __init__(self, windowing: WindowingConfig | None = None):
        self._windowing = windowing

    def process(self, record: Any) -> Iterable[Any]:
        try:
            trace = parse_trace(record)
        except InvalidTrace as exc:
            yield beam.pvalue.TaggedOutput(
                "dead", DeadLetter(STAGE, str(exc), raw_text(record), _field_of(record, "trace_id"),
                                   _field_of(record, "route"))
            )
            return
        if (self._windowing is not None and isinstance(record, Message)
                and record.publish_time_us is not None
                and self._windowing.too_late(trace.event_time_us, record.publish_time_us)):
            trace = replace(trace, late=True)
        yield beam.window.TimestampedValue(trace, trace.event_time_us / 1e6)


class _FirstOfIdFn(beam.DoFn):
    def process(self, element: tuple[str, Iterable[Trace]]) -> Iterable[Any]:
        _, traces = element
        ordered = sorted(traces, key=lambda t: (t.event_time_us, repr(t)))
        yield ordered[0]
        for dup in ordered[1:]:
            yield beam.pvalue.TaggedOutput("dead", duplicate(dup))


def duplicate(trace: Trace) -> DeadLetter:
    return DeadLetter("dedupe", "duplicate trace_id: audited once", raw_text(trace),
                      trace.trace_id, trace.route)


class _FirstSeenFn(beam.DoFn):
    """Streaming dedupe: keyed state remembers a trace_id for `horizon_s` of processing time."""

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
