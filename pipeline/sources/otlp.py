"""OTLP traces -> SourceSpans: JSON as the OpenTelemetry Collector's file exporter writes it (one
`ExportTraceServiceRequest` per line: resourceSpans -> scopeSpans -> spans, ids in hex,
attributes as key/value lists), and Pub/Sub messages as its `googlecloudpubsub` exporter
publishes them (protobuf, or JSON; gzip when `content-encoding` says so; CloudEvents `ce-*`
attributes). Both are read into the protobuf types of `opentelemetry-proto`."""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Iterator
from typing import Any

import orjson
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from rt4chart.pipeline.sources.common import SpanDecodeError, as_items
from rt4chart.schemas.records import Message
from rt4chart.schemas.spans import Scalar, SourceSpan

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


def request_spans(request: ExportTraceServiceRequest,
                  received_us: int | None = None) -> Iterator[SourceSpan]:
    """Every span of an OTLP request, with its resource's attributes."""
    for resource_spans in request.resource_spans:
        resource = as_items(attributes(resource_spans.resource.attributes))
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if not span.trace_id or not span.span_id:
                    raise SpanDecodeError(f"span {span.name!r} has no trace or span id")
                yield SourceSpan(
                    trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex(), name=span.name,
                    start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano,
                    attributes=as_items(attributes(span.attributes)), resource=resource,
                    received_us=received_us)


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


def parse_json(data: bytes | str) -> ExportTraceServiceRequest:
    """One OTLP JSON object (a line of the Collector's file exporter) as a request.

    Raises:
        SpanDecodeError: not JSON, or not an OTLP traces request.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SpanDecodeError(f"not valid JSON: {exc}") from exc
    if not isinstance(value, dict) or "resourceSpans" not in value and (
            "resource_spans" not in value):
        raise SpanDecodeError("not an OTLP traces object (no resourceSpans)")
    _hex_ids_to_base64(value)
    try:
        return json_format.ParseDict(value, ExportTraceServiceRequest(),
                                     ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise SpanDecodeError(f"not OTLP JSON: {exc}") from exc


def line_spans(line: str | bytes) -> list[SourceSpan]:
    """The spans of one line of OTLP JSON."""
    return list(request_spans(parse_json(line)))


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


def message_spans(message: Message) -> list[SourceSpan]:
    """The spans of an OTLP message on Pub/Sub: protobuf unless `content-type` says JSON (or,
    without one, the body is a JSON object); gzip-compressed when `content-encoding` says so.

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
        request = parse_json(data)
    else:
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
