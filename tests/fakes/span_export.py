"""Trace records (rt4chart's input schema) as a traced RAG application would have logged them:
OTLP JSON (the Collector's file exporter), OTLP protobuf messages (its googlecloudpubsub
exporter), OpenInference span JSON, a Phoenix spans export (Parquet) and a Langfuse export.

Each trace becomes a root CHAIN span (question in, answer out; metadata with the original
trace id, route and task), a RETRIEVER child with the contexts as retrieval documents and an
LLM child (model = the generator, the answer as its output message). A record without contexts
has no retriever span, one without an answer no output. `python span_export.py` rewrites the
bundled examples (pipeline/examples/spans.otlp.json and phoenix_spans.parquet).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span

EXAMPLES = Path(__file__).parents[2] / "pipeline" / "examples"
DEFAULT_TIME = "2024-05-01T00:00:00Z"
SECOND_NS = 1_000_000_000


def hex_id(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def _ns(timestamp: str) -> int:
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1) * 1000


def _metadata(record: dict) -> dict:
    meta = {"trace_id": record["trace_id"], "route": record.get("route", "default")}
    if record.get("task") is not None:
        meta["task"] = record["task"]
    return {**record.get("metadata", {}), **meta}


def trace_spans(record: dict) -> list[dict]:
    """The spans of one trace record: {trace_id, span_id, parent_id, name, start, end (ns),
    attributes (flat OpenInference keys)}."""
    trace_id = hex_id(record["trace_id"], 32)
    end = _ns(record.get("timestamp", DEFAULT_TIME))
    root = {"trace_id": trace_id, "span_id": hex_id(record["trace_id"] + "/root", 16),
            "parent_id": "", "name": "rag", "start": end - 3 * SECOND_NS, "end": end,
            "attributes": {"openinference.span.kind": "CHAIN",
                           "input.value": record.get("question", ""),
                           "metadata": json.dumps(_metadata(record))}}
    if "answer" in record:
        root["attributes"]["output.value"] = record["answer"]
    spans = [root]
    if record.get("contexts"):
        docs = {}
        for i, doc in enumerate(record["contexts"]):
            doc = doc if isinstance(doc, dict) else {"doc_id": f"doc{i}", "text": doc}
            docs[f"retrieval.documents.{i}.document.id"] = doc["doc_id"]
            docs[f"retrieval.documents.{i}.document.content"] = doc["text"]
            docs[f"retrieval.documents.{i}.document.score"] = 1.0 / (i + 1)
        spans.append(_child(root, "retrieve", "RETRIEVER", 0, docs))
    llm = {"llm.input_messages.0.message.role": "system",
           "llm.input_messages.0.message.content": "Answer from the passages.",
           "llm.input_messages.1.message.role": "user",
           "llm.input_messages.1.message.content": record.get("question", "")}
    if record.get("generator"):
        llm["llm.model_name"] = record["generator"]
    if "answer" in record:
        llm["llm.output_messages.0.message.role"] = "assistant"
        llm["llm.output_messages.0.message.content"] = record["answer"]
    spans.append(_child(root, "generate", "LLM", 1, llm))
    return spans


def _child(root: dict, name: str, kind: str, step: int, attributes: dict) -> dict:
    start = root["start"] + (step + 1) * SECOND_NS // 2
    return {"trace_id": root["trace_id"], "span_id": hex_id(root["span_id"] + name, 16),
            "parent_id": root["span_id"], "name": name, "start": start,
            "end": start + SECOND_NS // 3,
            "attributes": {"openinference.span.kind": kind, **attributes}}


# -- OTLP ---------------------------------------------------------------------------------------

def _any(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=value)


def otlp_request(spans: list[dict], route: str) -> ExportTraceServiceRequest:
    """Spans of one service as an OTLP request (resource service.name = route)."""
    resource = ResourceSpans()
    resource.resource.attributes.append(KeyValue(key="service.name", value=_any(route)))
    scope = resource.scope_spans.add()
    scope.scope.name = "openinference.instrumentation.test"
    for s in spans:
        span = Span(trace_id=bytes.fromhex(s["trace_id"]), span_id=bytes.fromhex(s["span_id"]),
                    parent_span_id=bytes.fromhex(s["parent_id"]), name=s["name"],
                    start_time_unix_nano=s["start"], end_time_unix_nano=s["end"],
                    kind=Span.SPAN_KIND_INTERNAL)
        for key, value in s["attributes"].items():
            span.attributes.append(KeyValue(key=key, value=_any(value)))
        scope.spans.append(span)
    return ExportTraceServiceRequest(resource_spans=[resource])


def _hex_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId")
                else _hex_ids(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_hex_ids(v) for v in node]
    return node


def otlp_json(request: ExportTraceServiceRequest) -> str:
    """A request as one line of the Collector's file exporter (ids in hex)."""
    return json.dumps(_hex_ids(json_format.MessageToDict(request, use_integers_for_enums=True)))


def otlp_lines(records: list[dict]) -> list[str]:
    """OTLP JSON lines: each trace's children in one line, its root in a later one (so that a
    trace is split over records and its root comes last)."""
    children, roots = [], []
    for record in records:
        spans, route = trace_spans(record), record.get("route", "default")
        children.append(otlp_json(otlp_request(spans[1:], route)))
        roots.append(otlp_json(otlp_request(spans[:1], route)))
    return children + roots


def pubsub_message(spans: list[dict], route: str, encoding: str = "gzip",
                   content_type: str = "application/protobuf") -> tuple[bytes, dict]:
    """(data, attributes) as the googlecloudpubsub exporter publishes a request."""
    request = otlp_request(spans, route)
    data = (request.SerializeToString() if "protobuf" in content_type
            else otlp_json(request).encode())
    attributes = {"ce-specversion": "1.0", "ce-type": "org.opentelemetry.otlp.traces.v1",
                  "ce-source": "/opentelemetry/collector/googlecloudpubsub/0.120.0",
                  "ce-id": hex_id(data.hex(), 32), "ce-time": "2024-05-01T00:00:00Z",
                  "content-type": content_type}
    if encoding == "gzip":
        data = gzip.compress(data)
        attributes["content-encoding"] = "gzip"
    return data, attributes


# -- OpenInference span JSON and the Phoenix export --------------------------------------------

def _nested(flat: dict) -> dict:
    """Dotted keys as nested objects, numeric parts as lists (Phoenix's span JSON)."""
    root: dict = {}
    for key, value in flat.items():
        node: Any = root
        parts = key.split(".")
        for part, following in zip(parts, parts[1:], strict=False):
            nxt = [] if following.isdigit() else {}
            if isinstance(node, list):
                index = int(part)
                while len(node) <= index:
                    node.append(None)
                node[index] = node[index] if node[index] is not None else nxt
                node = node[index]
            else:
                node = node.setdefault(part, nxt)
        node[parts[-1]] = value
    return root


def _iso(ns: int) -> str:
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)).isoformat()


def openinference_lines(records: list[dict]) -> list[str]:
    """One OpenInference span JSON object a line, nested attributes, roots last."""
    lines = []
    for record in records:
        for s in reversed(trace_spans(record)):
            lines.append(json.dumps({
                "name": s["name"], "context": {"trace_id": s["trace_id"],
                                               "span_id": s["span_id"]},
                "parent_id": s["parent_id"] or None,
                "span_kind": s["attributes"]["openinference.span.kind"],
                "start_time": _iso(s["start"]), "end_time": _iso(s["end"]),
                "attributes": _nested(s["attributes"])}))
    return lines


def _structs(flat: dict, prefix: str) -> list[dict] | None:
    items: dict[int, dict] = {}
    for key, value in flat.items():
        if key.startswith(prefix + "."):
            index, _, rest = key[len(prefix) + 1:].partition(".")
            items.setdefault(int(index), {})[rest] = value
    return [items[i] for i in sorted(items)] or None


def phoenix_rows(records: list[dict]) -> list[dict]:
    """The rows of Phoenix's spans dataframe for the records' spans."""
    rows = []
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    lists = ("retrieval.documents", "llm.input_messages", "llm.output_messages")
    for record in records:
        for s in trace_spans(record):
            attrs = s["attributes"]
            row = {"name": s["name"], "span_kind": attrs["openinference.span.kind"],
                   "parent_id": s["parent_id"] or None,
                   "start_time": epoch + timedelta(microseconds=s["start"] // 1000),
                   "end_time": epoch + timedelta(microseconds=s["end"] // 1000),
                   "context.trace_id": s["trace_id"], "context.span_id": s["span_id"]}
            for key, value in attrs.items():
                if not any(key.startswith(p + ".") for p in lists):
                    row[f"attributes.{key}"] = value
            for prefix in lists:
                row[f"attributes.{prefix}"] = _structs(attrs, prefix)
            rows.append(row)
    return rows


def write_phoenix(path: Path, records: list[dict]) -> Path:
    rows = phoenix_rows(records)
    columns = sorted({k for r in rows for k in r})
    table = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in rows])
    pq.write_table(table, path)
    return path


# -- Langfuse -----------------------------------------------------------------------------------

def langfuse_export(records: list[dict]) -> dict:
    """An API page of traces with their observations (retriever, generation)."""
    traces = []
    for record in records:
        spans = trace_spans(record)
        start = datetime.fromisoformat(record.get("timestamp", DEFAULT_TIME).replace("Z",
                                                                                   "+00:00"))
        trace = {"id": record["trace_id"], "timestamp": start.isoformat(), "name": "rag",
                 "input": {"question": record.get("question", "")},
                 "metadata": _metadata(record), "observations": []}
        if "answer" in record:
            trace["output"] = record["answer"]
        for s in spans[1:]:
            attrs = s["attributes"]
            obs = {"id": s["span_id"], "name": s["name"], "startTime": _iso(s["start"]),
                   "endTime": _iso(s["end"]), "parentObservationId": None}
            if attrs["openinference.span.kind"] == "RETRIEVER":
                docs = _structs(attrs, "retrieval.documents") or []
                obs.update(type="RETRIEVER", input=record.get("question", ""), output=[
                    {"page_content": d["document.content"],
                     "metadata": {"id": d["document.id"]}} for d in docs])
            else:
                obs.update(type="GENERATION", model=attrs.get("llm.model_name"),
                           input=[{"role": "user", "content": record.get("question", "")}],
                           output={"role": "assistant", "content": record["answer"]}
                           if "answer" in record else None)
            trace["observations"].append(obs)
        traces.append(trace)
    return {"data": traces, "meta": {"page": 1, "limit": 50, "totalItems": len(traces)}}


def write_format(fmt: str, records: list[dict], folder: Path) -> Path:
    """The records converted to `fmt` (otlp, openinference, phoenix, langfuse) in a file."""
    folder.mkdir(parents=True, exist_ok=True)
    if fmt == "phoenix":
        return write_phoenix(folder / "spans.parquet", records)
    if fmt == "langfuse":
        path = folder / "langfuse.json"
        path.write_text(json.dumps(langfuse_export(records), indent=2))
        return path
    lines = otlp_lines(records) if fmt == "otlp" else openinference_lines(records)
    path = folder / f"{fmt}.json"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def example_records() -> list[dict]:
    return [json.loads(line) for line in (EXAMPLES / "traces.jsonl").read_text().splitlines()
            if line.strip()]


if __name__ == "__main__":
    records = example_records()
    (EXAMPLES / "spans.otlp.json").write_text("".join(f"{line}\n" for line in
                                                      otlp_lines(records)))
    write_phoenix(EXAMPLES / "phoenix_spans.parquet", records)
