"""Trace validation: raw records (JSON lines or Parquet rows) -> Trace, or a dead letter.

Every invalid record goes to the dead letters whole, with the reason and the stage; nothing is
dropped silently.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import apache_beam as beam
import orjson

from rt4chart.schemas.records import DeadLetter, Document, Trace

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


def parse_trace(record: Any) -> Trace:
    """Validate one record (a dict, or one JSON line) into a Trace."""
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


def raw_text(record: Any) -> str:
    """The record as received, as text, for the dead letters."""
    if isinstance(record, bytes):
        return record.decode("utf-8", errors="replace")
    if isinstance(record, str):
        return record
    return orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def _trace_id_of(record: Any) -> str | None:
    if isinstance(record, bytes | str):
        try:
            record = orjson.loads(record)
        except orjson.JSONDecodeError:
            return None
    if isinstance(record, dict) and isinstance(record.get("trace_id"), str):
        return record["trace_id"]
    return None


class _ValidateFn(beam.DoFn):
    def process(self, record: Any) -> Iterable[Any]:
        try:
            yield parse_trace(record)
        except InvalidTrace as exc:
            yield beam.pvalue.TaggedOutput(
                "dead", DeadLetter(STAGE, str(exc), raw_text(record), _trace_id_of(record))
            )


class _FirstOfIdFn(beam.DoFn):
    def process(self, element: tuple[str, Iterable[Trace]]) -> Iterable[Any]:
        _, traces = element
        ordered = sorted(traces, key=lambda t: (t.event_time_us, repr(t)))
        yield ordered[0]
        for dup in ordered[1:]:
            yield beam.pvalue.TaggedOutput(
                "dead", DeadLetter("dedupe", "duplicate trace_id: audited once",
                                   raw_text(dup), dup.trace_id)
            )


class ValidateOutputs(NamedTuple):
    traces: beam.PCollection[Trace]
    dead_letters: beam.PCollection[DeadLetter]


class ValidateTraces(beam.PTransform):
    """Raw records -> valid Traces, each trace_id once; everything else to the dead letters."""

    def expand(self, records: beam.PCollection) -> ValidateOutputs:
        parsed = records | "Parse" >> beam.ParDo(_ValidateFn()).with_outputs("dead", main="ok")
        unique = (
            parsed.ok
            | "KeyById" >> beam.Map(lambda t: (t.trace_id, t))
            | "GroupById" >> beam.GroupByKey()
            | "FirstOfId" >> beam.ParDo(_FirstOfIdFn()).with_outputs("dead", main="ok")
        )
        dead = (parsed.dead, unique.dead) | "DeadLetters" >> beam.Flatten()
        return ValidateOutputs(unique.ok, dead)
