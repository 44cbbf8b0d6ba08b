"""One span that cannot be read costs only itself (and its own trace): an OTLP batch line
holding ten valid traces and one bad span gives the ten traces and a dead letter naming the
file, the line and the span id. Before, the whole line was one dead letter."""

from __future__ import annotations

import json

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from rt4chart.pipeline.run import jobs
from rt4chart.pipeline.sources import otlp
from rt4chart.pipeline.sources.traces import ReadTraces
from rt4chart.schemas.records import Message
from rt4chart.schemas.spans import SourceSpan
from rt4chart.transforms.assemble import assemble
from rt4chart.transforms.common.span_mapping import SpanMapping

from span_export import hex_id, otlp_json, otlp_request, trace_spans

CTX = "Tokyo is the capital of Japan."
RECORDS = [{"trace_id": f"t{i}", "contexts": [CTX], "answer": "Tokyo is the capital.",
            "question": "What is the capital?"} for i in range(11)]
BROKEN = hex_id("t10", 32)  # the OTel trace id of the eleventh trace


def _batch_line(breaking) -> dict:
    """One line of the file exporter: the eleven traces' spans; `breaking(span)` spoils the
    LLM span of the eleventh trace (its last: the trace would assemble without it)."""
    spans = [s for r in RECORDS for s in trace_spans(r)]
    line = json.loads(otlp_json(otlp_request(spans, "bot")))
    items = line["resourceSpans"][0]["scopeSpans"][0]["spans"]
    bad = [s for s in items if s["traceId"] == BROKEN][-1]
    breaking(bad)
    return line


SPOILERS = {
    "span id not hex": (lambda s: s.update(spanId="not-hex"), "spanId 'not-hex' is not hex"),
    "start time not a number": (lambda s: s.update(startTimeUnixNano="soon"), "soon"),
    "attributes not a list": (lambda s: s.update(attributes={"k": 1}), "attributes"),
    "no span id": (lambda s: s.pop("spanId"), "has no trace or span id"),
}


@pytest.mark.parametrize("spoiler", SPOILERS, ids=list(SPOILERS))
def test_a_bad_span_is_a_bad_span_and_the_others_are_read(spoiler):
    spoil, reason = SPOILERS[spoiler]
    got = otlp.line_spans(json.dumps(_batch_line(spoil)))
    bad = [s for s in got if isinstance(s, otlp.BadSpan)]
    good = [s for s in got if isinstance(s, SourceSpan)]
    assert len(bad) == 1 and reason in bad[0].reason and bad[0].trace_id == BROKEN
    assert len(good) == len(got) - 1
    assert {s.trace_id for s in good} == {hex_id(r["trace_id"], 32) for r in RECORDS}


def test_the_trace_of_a_bad_span_is_not_assembled_without_it():
    spoil, _ = SPOILERS["start time not a number"]
    got = otlp.line_spans(json.dumps(_batch_line(spoil)))
    (bad,) = [s for s in got if isinstance(s, otlp.BadSpan)]
    rest = [s for s in got if isinstance(s, SourceSpan) and s.trace_id == BROKEN]
    marker = otlp.unreadable_marker(bad)
    assert assemble(BROKEN, rest, SpanMapping())[1] is None  # without a stand-in: audited
    record, letter = assemble(BROKEN, [*rest, marker], SpanMapping())
    assert record is None and "1 span(s) of the trace could not be read" in letter.reason
    assert bad.span_id in letter.reason


def test_a_batch_line_with_a_bad_span_gives_its_valid_traces_and_names_file_line_and_span(
        tmp_path):
    path = tmp_path / "spans.otlp.json"
    spoil, reason = SPOILERS["span id not hex"]
    line = _batch_line(spoil)
    path.write_text(json.dumps({"resourceSpans": []}) + "\n" + json.dumps(line) + "\n")
    with TestPipeline(options=jobs.beam_options([])) as p:
        read = p | ReadTraces((str(path),), "otlp")
        assert_that(read.records | beam.Map(lambda r: r["trace_id"]),
                    equal_to([hex_id(f"t{i}", 32) for i in range(10)]), label="traces")
        assert_that(read.dead_letters | beam.Map(lambda d: (d.stage, d.reason)),
                    equal_to([
                        ("read", f"{path} line 2: span not-hex: not otlp spans: {reason}"),
                        ("assemble", "1 span(s) of the trace could not be read (each is a "
                                     "dead letter of stage read): not-hex"),
                    ]), label="dead")


def test_a_line_that_is_not_otlp_names_its_file_and_line(tmp_path):
    path = tmp_path / "spans.otlp.json"
    path.write_text(json.dumps(_batch_line(lambda s: None)) + "\n{not json\n")
    with TestPipeline(options=jobs.beam_options([])) as p:
        read = p | ReadTraces((str(path),), "otlp")
        assert_that(read.records | beam.combiners.Count.Globally(),
                    equal_to([11]), label="traces")
        assert_that(read.dead_letters | beam.Map(lambda d: d.reason.split(": not valid")[0]),
                    equal_to([f"{path} line 2: not otlp spans"]), label="dead")


def test_a_protobuf_message_with_a_span_without_ids_keeps_the_others():
    request = otlp_request([s for r in RECORDS for s in trace_spans(r)], "bot")
    request.resource_spans[0].scope_spans[0].spans[0].ClearField("span_id")
    message = Message(request.SerializeToString(), (), 1)
    got = otlp.message_spans(message)
    assert sum(isinstance(s, otlp.BadSpan) for s in got) == 1
    assert sum(isinstance(s, SourceSpan) for s in got) == len(got) - 1 == 3 * 11 - 1
    assert ExportTraceServiceRequest.FromString(message.data) == request
