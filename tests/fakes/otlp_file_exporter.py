"""An OpenTelemetry SDK span exporter that writes OTLP JSON lines, as the OpenTelemetry
Collector's file exporter does: one `ExportTraceServiceRequest` a line, ids in hex.

The request is built by the SDK's own OTLP encoder (`encode_spans`, what the OTLP exporters
send), so the file holds what an instrumented application exports; only the ids' spelling is
the file exporter's (hex, where protobuf's JSON mapping writes base64).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Sequence
from pathlib import Path

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


class OtlpJsonFileExporter(SpanExporter):
    """Appends each batch of finished spans to `path` as one OTLP JSON line."""

    def __init__(self, path: Path):
        self._path = Path(path)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        request = json_format.MessageToDict(encode_spans(spans))
        _hex_ids(request)
        with self._lock, self._path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(request) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def file_tracer_provider(path: Path, service: str = "agent") -> TracerProvider:
    """A tracer provider whose spans go to `path` (OTLP JSON lines) as each span ends."""
    from opentelemetry.sdk.resources import Resource

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(OtlpJsonFileExporter(path)))
    return provider
