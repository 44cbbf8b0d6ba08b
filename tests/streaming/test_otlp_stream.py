"""End to end on the Pub/Sub emulator: `stream --input-format otlp` audits traces published as
the OpenTelemetry Collector's googlecloudpubsub exporter publishes them (OTLP protobuf, gzip or
not, or OTLP JSON; CloudEvents attributes), whose spans arrive split over several messages, out
of order and redelivered; every trace is audited once, and incomplete ones are dead letters
with the reason once no span has come for the gap."""

from __future__ import annotations

import time
from collections import Counter

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.config import StagesConfig, StreamConfig
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.common.windows import WindowingConfig
from rt4chart.transforms.judges.contract import JudgeSpec

from pubsub_emulator import run_streaming
from span_export import example_records, hex_id, pubsub_message, trace_spans
from testutil import read_tables

DEADLINE_S = 180
# Generous: on a loaded machine the runner may pause between two messages of one trace for
# more than a second or two, and a shorter gap would then split the trace.
GAP_S = 5.0
JSON = "application/json"


def _messages(records: dict[str, dict]) -> list[tuple[bytes, dict]]:
    """The messages to publish, in publishing order."""
    def spans(name: str) -> list[dict]:
        return trace_spans(records[name])

    def route(name: str) -> str:
        return records[name]["route"]

    paper, qa1, qa2 = spans("paper-running-example"), spans("ragtruth-12015"), spans(
        "ragtruth-12022")
    summary, data2txt = spans("ragtruth-69"), spans("ragtruth-5820")
    orphan = [s for s in trace_spans({**records["paper-running-example"],
                                      "trace_id": "orphan"}) if s["parent_id"]]
    return [
        # Children first, the root in a later message (gzip protobuf, the exporter's default).
        pubsub_message(paper[1:], route("paper-running-example")),
        # One span a message, root first, uncompressed protobuf.
        *[pubsub_message([s], route("ragtruth-12022"), encoding="none") for s in qa2],
        pubsub_message(paper[:1], route("paper-running-example")),
        # OTLP JSON, spans in reverse order.
        pubsub_message(qa1[::-1], route("ragtruth-12015"), encoding="none",
                       content_type=JSON),
        # The same message twice (a redelivery or a retried export).
        pubsub_message(summary, route("ragtruth-69")),
        pubsub_message(summary, route("ragtruth-69")),
        pubsub_message(data2txt, route("ragtruth-5820"), content_type=JSON),
        # No retriever span and no answer; and spans whose root never comes.
        pubsub_message(trace_spans(records["broken-example"]), "support-bot"),
        pubsub_message(orphan, "support-bot"),
        # Not OTLP at all.
        (b"not a protobuf request", {"content-type": "application/protobuf"}),
    ]


def test_otlp_stream_assembles_each_trace_once_and_dead_letters_incomplete_ones(
        pubsub, topics, tmp_path):
    out = tmp_path / "out"
    records = {r["trace_id"]: r for r in example_records()}
    config = StreamConfig(
        topics.traces_sub,
        StagesConfig(JudgeSpec.of("offline", {}), windowing=WindowingConfig.streaming_default()),
        out=str(out), input_format="otlp",
        spans=SpanMapping(trace_id_attribute="metadata.trace_id", trace_gap_s=GAP_S))
    pipeline = beam.Pipeline(options=PipelineOptions(flags=[], streaming=True,
                                                     runner="BundleBasedDirectRunner"))
    graph.build_stream(pipeline, config, RunInfo("offline", "h"))
    valid = set(records) - {"broken-example"}

    def done() -> bool:
        tick()
        if not (out / "answers").exists() or not (out / "dead_letters").exists():
            return False
        tables = read_tables(out)
        stages = Counter(d["stage"] for d in tables["dead_letters"])
        return {a["trace_id"] for a in tables["answers"]} >= valid and (
            stages["assemble"] >= 2 and stages["read"] >= 1)

    wake = lambda: pubsub.publish(topics.traces, b"wake", **{"ce-type": "wake"})  # noqa: E731

    def tick() -> None:
        # An OTLP request without spans: the local runner checks processing-time timers when a
        # pull returns, which on an idle subscription is every ~30 s (traffic keeps it moving).
        pubsub.publish(topics.traces, b'{"resourceSpans": []}', **{"content-type": JSON})
    with run_streaming(pipeline, wake=wake) as run:
        for data, attributes in _messages(records):
            pubsub.publish(topics.traces, data, **attributes)
            time.sleep(0.05)
        run.wait_for(done, timeout_s=DEADLINE_S, poll_s=1.0)
        for _ in range(2):  # a second copy of a trace would have come by now
            time.sleep(GAP_S)
            tick()
        run.cancel(timeout_s=DEADLINE_S)
    tables = read_tables(out)

    # Every trace audited once, under its original id, with its route.
    counts = Counter(a["trace_id"] for a in tables["answers"])
    assert counts == dict.fromkeys(valid, 1)
    routes = {a["trace_id"]: a["route"] for a in tables["answers"]}
    assert routes == {t: records[t]["route"] for t in valid}
    assert all(a["status"] == "ok" and a["n_claims"] > 0 for a in tables["answers"])

    # The incomplete traces and the message that is not OTLP, each with its reason.
    dead = [d for d in tables["dead_letters"] if d["stage"] in ("assemble", "read")]
    reasons = {d["trace_id"]: d["reason"] for d in dead if d["stage"] == "assemble"}
    assert set(reasons) == {"broken-example", hex_id("orphan", 32)}
    assert reasons["broken-example"].startswith("no retriever span")
    assert "no answer" in reasons["broken-example"]
    assert reasons[hex_id("orphan", 32)].startswith(
        f"incomplete trace: no root span after --trace-gap {GAP_S:g} s (2 span(s)")
    unread = [d for d in dead if d["stage"] == "read" and "'wake'" not in d["reason"]]
    assert len(unread) == 1 and "not OTLP traces" in unread[0]["reason"]
    # No trace was dead-lettered as a duplicate: the redelivered spans were assembled once.
    assert not [d for d in tables["dead_letters"] if d["stage"] == "dedupe"]
