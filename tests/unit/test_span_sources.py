"""Span sources without a pipeline: each format decoded into spans, the bundled examples, the
format told by the file, Pub/Sub messages as the Collector's exporter publishes them, and the
command-line options."""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.cli import parsers as cli_args
from rt4chart.pipeline.run import jobs
from rt4chart.pipeline.sources import langfuse, otlp, phoenix
from rt4chart.pipeline.sources.common import SpanDecodeError
from rt4chart.pipeline.sources.detect import file_format
from rt4chart.schemas.records import Message
from rt4chart.transforms.common.span_mapping import SpanMapping, Unassembled, trace_record
from rt4chart.transforms.validate import parse_trace

from span_export import (
    example_records,
    otlp_json,
    otlp_request,
    pubsub_message,
    trace_spans,
    write_format,
)

EXAMPLES = Path(jobs.example_traces()).parent
MAPPING = SpanMapping("metadata.route", "metadata.trace_id")


def _spans(fmt: str, path: Path) -> list:
    if fmt == "phoenix":
        return [phoenix.row_span(r) for r in pq.read_table(path).to_pylist()]
    if fmt == "langfuse":
        return [s for obj in langfuse.objects(json.loads(path.read_text()))
                for s in langfuse.object_spans(obj)]
    decode = otlp.line_spans if fmt == "otlp" else phoenix.line_spans
    return [s for line in path.read_text().splitlines() for s in decode(line)]


def _traces(spans: list, mapping: SpanMapping = MAPPING) -> dict:
    """{trace id: Trace (without metadata) or the Unassembled reason} of the spans."""
    by_trace = defaultdict(list)
    for s in spans:
        by_trace[s.trace_id].append(s)
    out = {}
    for group in by_trace.values():
        try:
            record = trace_record(group, mapping)
        except Unassembled as exc:
            out[group[0].trace_id] = str(exc)
            continue
        out[record["trace_id"]] = dataclasses.replace(parse_trace(record), metadata=())
    return out


def _expected() -> dict:
    return {r["trace_id"]: dataclasses.replace(parse_trace(r), metadata=())
            for r in example_records() if r.get("answer") is not None}


@pytest.mark.parametrize("fmt", ["otlp", "openinference", "phoenix", "langfuse"])
def test_each_format_maps_back_to_the_example_traces(fmt, tmp_path):
    path = write_format(fmt, example_records(), tmp_path)
    assert file_format(str(path)) == fmt  # the file says what it is
    traces = _traces(_spans(fmt, path))
    unassembled = {k: v for k, v in traces.items() if isinstance(v, str)}
    assert {k: v for k, v in traces.items() if k not in unassembled} == _expected()
    assert [v.split(":")[0] for v in unassembled.values()] == ["no retriever span"]


def test_bundled_examples_hold_the_example_traces_and_assemble_across_files():
    otlp_spans = _spans("otlp", EXAMPLES / "spans.otlp.json")
    phoenix_spans = _spans("phoenix", EXAMPLES / "phoenix_spans.parquet")
    # OTLP's resource gives the route by default (service.name).
    by_default = _traces(otlp_spans, SpanMapping(trace_id_attribute="metadata.trace_id"))
    assert {k: v for k, v in by_default.items() if not isinstance(v, str)} == _expected()
    # The same spans in two files are one trace each.
    both = _traces(otlp_spans + phoenix_spans)
    assert {k: v for k, v in both.items() if not isinstance(v, str)} == _expected()
    assert len(both) == len(example_records())


def test_detection_leaves_trace_files_as_they_were(tmp_path):
    jsonl = tmp_path / "traces.jsonl"
    jsonl.write_text((EXAMPLES / "traces.jsonl").read_text())
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gzip.compress(b'{"resourceSpans": []}\n')[:12])
    assert [file_format(str(p)) for p in (jsonl, broken)] == ["jsonl", "jsonl"]
    assert file_format(str(EXAMPLES / "phoenix_spans.parquet")) == "phoenix"
    assert file_format(str(EXAMPLES / "phoenix_spans.parquet"), "parquet") == "parquet"


def _message(data: bytes, attributes: dict) -> Message:
    return Message(data, tuple(sorted(attributes.items())), 1_714_555_800_000_000)


@pytest.mark.parametrize(("encoding", "content_type"), [
    ("gzip", "application/protobuf"), ("none", "application/protobuf"),
    ("gzip", "application/json"), ("none", "application/json"),
])
def test_exporter_messages_decode_to_the_same_spans(encoding, content_type):
    record = example_records()[0]
    data, attributes = pubsub_message(trace_spans(record), "support-bot", encoding, content_type)
    assert attributes["ce-type"] == otlp.TRACES_CE_TYPE
    spans = otlp.message_spans(_message(data, attributes))
    line = otlp_json(otlp_request(trace_spans(record), "support-bot"))  # the file exporter's
    assert spans == otlp.json_spans(line, 1_714_555_800_000_000)
    assert {s.received_us for s in spans} == {1_714_555_800_000_000}
    assert dict(spans[0].resource) == {"service.name": "support-bot"}


@pytest.mark.parametrize(("data", "attributes", "reason"), [
    (b"\x00\x01", {"ce-type": "org.opentelemetry.otlp.metrics.v1"}, "not OTLP traces"),
    (b"plain", {"content-encoding": "gzip"}, "does not decompress"),
    (b"x", {"content-encoding": "br"}, "unsupported content-encoding"),
    (b"not a protobuf request", {"content-type": "application/protobuf"}, "protobuf"),
    (b'{"resourceSpans": 3}', {"content-type": "application/json"}, "not OTLP JSON"),
])
def test_messages_that_are_not_otlp_traces_say_why(data, attributes, reason):
    with pytest.raises(SpanDecodeError, match=reason):
        otlp.message_spans(_message(data, attributes))


def test_langfuse_documents_and_kinds():
    assert langfuse.documents({"documents": [
        "plain", {"pageContent": "lc", "metadata": {"id": 7}}, {"text": "t", "doc_id": "d"},
        {"no": "text"}]}) == [(None, "plain"), ("7", "lc"), ("d", "t")]
    rerank = langfuse.observation_span({"id": "o", "traceId": "t", "type": "SPAN",
                                        "name": "Rerank", "output": ["a"]})
    assert dict(rerank.attributes)["reranker.output_documents.0.document.content"] == "a"
    with pytest.raises(SpanDecodeError):
        langfuse.object_spans({"name": "no id"})


def test_source_options_reach_the_configs():
    parser = cli.parser()
    args = parser.parse_args(["audit", "spans.json", "--input-format", "otlp",
                              "--trace-id-attribute", "metadata.trace_id"])
    config = cli_args.audit_config(args)
    assert config.input_format == "otlp"
    assert config.spans == SpanMapping("service.name", "metadata.trace_id")
    args = parser.parse_args(["stream", "--subscription", "projects/p/subscriptions/s",
                              "--out", "o", "--input-format", "otlp", "--trace-gap", "5",
                              "--route-attribute", "metadata.app"])
    config = cli_args.stream_config(args, cli_args.judge_spec(args))
    assert (config.input_format, config.spans) == ("otlp", SpanMapping("metadata.app", None, 5))


@pytest.mark.parametrize(("options", "message"), [
    (["--input-format", "otlp", "--trace-gap", "0"], "--trace-gap must be positive"),
    (["--input-format", "jsonl"], "--input-format must be one of json, otlp"),
])
def test_bad_stream_source_options_are_usage_errors(options, message, capsys):
    assert cli.main(["stream", "--judge", "offline", "--subscription",
                     "projects/p/subscriptions/s", "--out", "o", *options]) == 2
    assert message in capsys.readouterr().err
