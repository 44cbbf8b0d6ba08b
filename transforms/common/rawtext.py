"""A record as text for the dead letters, and a validated trace back in the input schema.

Apart from validation so that the guard (transforms/common/guard.py), which every stage uses, can
show any element without importing the stages.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import orjson

from rt4chart.schemas.records import Document, Message, Trace
from rt4chart.transforms.common.fields import escape_surrogates, event_time_text


def trace_record(trace: Trace) -> dict:
    """A validated trace back in the input schema (it validates to the same Trace)."""
    record: dict[str, Any] = {
        "trace_id": trace.trace_id, "route": trace.route,
        "timestamp": event_time_text(trace.event_time_us),
        "question": trace.question,
        "contexts": [_context(d) for d in trace.contexts],
        "answer": trace.answer,
    }
    if trace.conversation:
        record["conversation"] = [{"role": "user", "content": t} for t in trace.conversation]
    for name in ("task", "generator"):
        if getattr(trace, name) is not None:
            record[name] = getattr(trace, name)
    if trace.metadata:
        record["metadata"] = dict(trace.metadata)
    return record


def _context(doc: Document) -> dict:
    out = {"doc_id": doc.doc_id, "text": doc.text}
    out.update({k: v for k, v in (("tool", doc.tool), ("call_id", doc.call_id)) if v is not None})
    return out


def trace_text(trace: Trace) -> str:
    """A validated trace in the input schema as JSON text, with what this run resolved (the
    event time of a record without a timestamp, a Pub/Sub message's trace_id and route from its
    attributes): what `audit --redo` reads back to audit the same trace again (the redo dead
    letters, the skipped table). Other dead letters hold the record as received (`raw_text`)."""
    return raw_text(replace(trace, raw=None))


def raw_text(record: Any) -> str:
    """The record as received, as text, for the dead letters (a Trace in the input schema).

    Never raises, and never returns a lone surrogate (escaped as \\udXXX): a dead letter must
    be writable whatever the record held.
    """
    try:
        return escape_surrogates(_raw_text(record))
    except Exception:  # noqa: BLE001 - e.g. a structure too deep for any encoder
        return f"<a {type(record).__name__} that cannot be shown as text>"


def _raw_text(record: Any) -> str:
    if isinstance(record, Trace):
        if record.raw is not None:
            return record.raw
        record = trace_record(record)
    if isinstance(record, Message):
        record = record.data
    if isinstance(record, bytes):
        return record.decode("utf-8", errors="replace")
    if isinstance(record, str):
        return record
    try:
        return orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # lone surrogates, integers beyond 64 bits, deep nesting
        return json.dumps(record, default=str, ensure_ascii=True)
