"""OTLP traces -> SourceSpans: JSON as the OpenTelemetry Collector's file exporter writes it (one
`ExportTraceServiceRequest` per line: resourceSpans -> scopeSpans -> spans, ids in hex,
attributes as key/value lists), and Pub/Sub messages as its `googlecloudpubsub` exporter
publishes them (protobuf, or JSON; gzip when `content-encoding` says so; CloudEvents `ce-*`
attributes). Both are read into the protobuf types of `opentelemetry-proto`.

Each span is read on its own: one that cannot be read (ids that are not hex, a field of the
wrong type, no ids) is a `BadSpan`, its own dead letter, and the request's other spans are read;
its trace, if its trace id can be read, gets a stand-in (`unreadable_marker`) so that it is not
audited without the span. Only a request that is not OTLP at all is lost whole."""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from rt4chart.pipeline.sources.common import SpanDecodeError, as_items
from rt4chart.schemas.records import Message
from rt4chart.schemas.spans import SPAN_FAILED, UNREADABLE_SPAN, Scalar, SourceSpan
from rt4chart.transforms.checks.json_text import load_strict
from rt4chart.transforms.common.fields import InvalidTrace

# The Collector's googlecloudpubsub exporter: CloudEvents binary-mode attributes.
CONTENT_TYPE = "content-type"
CONTENT_ENCODING = "content-encoding"
CE_TYPE = "ce-type"
TRACES_CE_TYPE = "org.opentelemetry.otlp.traces.v1"
_ID_FIELDS = ("traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id")
_GZIP_MAGIC = b"\x1f\x8b"


def _any_value(value: AnyValue, key: str, out: dict[str, Scalar]) -> None:
    """One attribute value, flattened: arrays and key/value lists as dotted keys."""
    which = value.WhichOneof("value")
    if which == "array_value":
        for i, item in enumerate(value.array_value.values):
            _any_value(item, f"{key}.{i}", out)
    elif which == "kvlist_value":
        for kv in value.kvlist_value.values:
            _any_value(kv.value, f"{key}.{kv.key}", out)
    elif which == "bytes_value":
        out[key] = base64.b64encode(value.bytes_value).decode()
    elif which is not None:
        out[key] = getattr(value, which)


def attributes(kvs: list[KeyValue] | Any) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    for kv in kvs:
        _any_value(kv.value, kv.key, out)
    return out


@dataclass(frozen=True)
class BadSpan:
    """A span of an OTLP request that cannot be read: it becomes a dead letter of its own and
    the request's other spans are read. `span_id` and `trace_id` are as the source spells
    them (hex in JSON), "" when absent."""

    reason: str
    raw: str
    span_id: str
    trace_id: str


def unreadable_marker(bad: BadSpan) -> SourceSpan | None:
    """A stand-in for a bad span in its trace, so that the trace is not assembled as if it
    were whole (`span_mapping.trace_record` refuses a trace holding one); None when the trace
    id cannot be read either. Not a root: it has a parent."""
    trace_id = bad.trace_id.lower()
    if len(trace_id) != 32 or any(c not in "0123456789abcdef" for c in trace_id):
        return None
    return SourceSpan(trace_id=trace_id, span_id=f"unreadable:{bad.span_id}",
                      parent_id=UNREADABLE_SPAN, name="", start_ns=0, end_ns=0,
                      attributes=((UNREADABLE_SPAN, bad.reason[:200]),))


def _source_span(span: Span, resource: tuple, received_us: int | None) -> SourceSpan:
    if not span.trace_id or not span.span_id:
        raise SpanDecodeError(f"span {span.name!r} has no trace or span id")
    found = attributes(span.attributes)
    if span.status.code == Status.STATUS_CODE_ERROR:  # a failed tool's output is no evidence
        found[SPAN_FAILED] = True
    return SourceSpan(
        trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex(), name=span.name,
        start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano,
        attributes=as_items(found), resource=resource,
        received_us=received_us)


def request_spans(request: ExportTraceServiceRequest,
                  received_us: int | None = None) -> Iterator[SourceSpan | BadSpan]:
    """Every span of an OTLP protobuf request, with its resource's attributes; a span without
    ids is a BadSpan."""
    for resource_spans in request.resource_spans:
        resource = as_items(attributes(resource_spans.resource.attributes))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                try:
                    yield _source_span(span, resource, received_us)
                except SpanDecodeError as exc:
                    raw = orjson.dumps(json_format.MessageToDict(span)).decode()
                    yield BadSpan(str(exc), raw, span.span_id.hex(), span.trace_id.hex())


def _hex_ids_to_base64(node: Any) -> None:
    """OTLP JSON spells ids in hex where protobuf's JSON mapping expects base64: convert in
    place, wherever the request nests them."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(value)).decode()
                except ValueError as exc:
                    raise SpanDecodeError(f"{key} {value[:40]!r} is not hex") from exc
            else:
                _hex_ids_to_base64(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item)


def _json_object(data: bytes | str) -> dict:
    try:
        value = load_strict(data)  # a key given twice is ambiguous: refused (json_text)
    except orjson.JSONDecodeError as exc:
        raise SpanDecodeError(f"not valid JSON: {exc}") from exc
    except InvalidTrace as exc:
        raise SpanDecodeError(str(exc)) from exc
    if not isinstance(value, dict) or "resourceSpans" not in value and (
            "resource_spans" not in value):
        raise SpanDecodeError("not an OTLP traces object (no resourceSpans)")
    return value


def _entries(node: Any, *keys: str) -> list:
    """The list under the first of `keys` in an OTLP JSON object (none when absent)."""
    if not isinstance(node, dict):
        raise SpanDecodeError(f"not OTLP JSON: an object expected, got {type(node).__name__}")
    for key in keys:
        if key in node:
            if not isinstance(node[key], list):
                raise SpanDecodeError(f"not OTLP JSON: {key} must be a list")
            return node[key]
    return []


def _resource(resource_spans: dict) -> tuple[tuple, str | None]:
    """(the resource's attributes, None), or ((), why it does not parse)."""
    try:
        resource = json_format.ParseDict(resource_spans.get("resource") or {}, Resource(),
                                         ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as exc:
        return (), f"its resource is not OTLP JSON: {exc}"
    return as_items(attributes(resource.attributes)), None


def _raw_id(item: Any, *keys: str) -> str:
    value = next((item[k] for k in keys if isinstance(item, dict) and k in item), "")
    return value[:64] if isinstance(value, str) else repr(value)[:64]


def _json_span(item: Any, resource: tuple, fault: str | None,
               received_us: int | None) -> SourceSpan | BadSpan:
    """One span of OTLP JSON, parsed alone so that its fault is its own."""
    raw = orjson.dumps(item, default=str).decode()
    try:
        if fault is not None:
            raise SpanDecodeError(fault)
        if not isinstance(item, dict):
            raise SpanDecodeError(f"a span must be an object, got {type(item).__name__}")
        converted = orjson.loads(raw)  # a copy: the ids are converted in place
        _hex_ids_to_base64(converted)
        return _source_span(json_format.ParseDict(converted, Span(),
                                                  ignore_unknown_fields=True),
                            resource, received_us)
    except (json_format.ParseError, ValueError, TypeError) as exc:  # SpanDecodeError too
        return BadSpan(str(exc), raw, _raw_id(item, "spanId", "span_id"),
                       _raw_id(item, "traceId", "trace_id"))


def json_spans(data: bytes | str, received_us: int | None = None) -> list[SourceSpan | BadSpan]:
    """The spans of one OTLP JSON object (a line of the Collector's file exporter), each read
    on its own: a span that is not OTLP (ids not hex, a field of the wrong type, no ids) is a
    BadSpan and the others are read.

    Raises:
        SpanDecodeError: not JSON, or not an OTLP traces request at all.
    """
    out: list[SourceSpan | BadSpan] = []
    for resource_spans in _entries(_json_object(data), "resourceSpans", "resource_spans"):
        resource, fault = _resource(resource_spans) if isinstance(resource_spans, dict) else (
            (), None)
        for scope_spans in _entries(resource_spans, "scopeSpans", "scope_spans"):
            out.extend(_json_span(item, resource, fault, received_us)
                       for item in _entries(scope_spans, "spans"))
    return out


def line_spans(line: str | bytes) -> list[SourceSpan | BadSpan]:
    """The spans of one line of OTLP JSON (see `json_spans`)."""
    return json_spans(line)


def _payload(message: Message) -> bytes:
    attributes = dict(message.attributes)
    data = message.data
    encoding = attributes.get(CONTENT_ENCODING, "").lower()
    if encoding == "gzip" or (not encoding and data.startswith(_GZIP_MAGIC)):
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise SpanDecodeError(f"content-encoding gzip, but the body does not "
                                  f"decompress: {exc}") from exc
    if encoding and encoding != "identity":
        raise SpanDecodeError(f"unsupported content-encoding {encoding!r}")
    return data


def message_spans(message: Message) -> list[SourceSpan | BadSpan]:
    """The spans of an OTLP message on Pub/Sub: protobuf unless `content-type` says JSON (or,
    without one, the body is a JSON object); gzip-compressed when `content-encoding` says so.
    A span that cannot be read is a BadSpan, as in `json_spans`.

    Raises:
        SpanDecodeError: not OTLP traces (other CloudEvents type, undecodable body).
    """
    attributes = dict(message.attributes)
    ce_type = attributes.get(CE_TYPE)
    if ce_type is not None and ce_type != TRACES_CE_TYPE:
        raise SpanDecodeError(f"not OTLP traces: ce-type {ce_type[:80]!r}")
    data = _payload(message)
    content_type = attributes.get(CONTENT_TYPE, "").lower()
    if "json" in content_type or (not content_type and data.lstrip()[:1] == b"{"):
        return json_spans(data, message.publish_time_us)
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except DecodeError as exc:
        raise SpanDecodeError(f"not an OTLP protobuf ExportTraceServiceRequest: "
                              f"{exc}") from exc
    return list(request_spans(request, message.publish_time_us))


def message_raw(message: Message) -> str:
    """A message as text for its dead letter: its attributes and its body (base64)."""
    return orjson.dumps({"attributes": dict(message.attributes),
                         "data_base64": base64.b64encode(message.data).decode()}).decode()
