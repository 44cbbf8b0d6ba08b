"""The Segment stage in a pipeline: prepared traces with exact offsets and overlapping windows,
dead letters for traces it cannot segment, and (streaming) each trace kept in its window.

The expected PreparedTraces are written out by hand, not computed with `prepare()`.
"""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to, equal_to_per_window
from apache_beam.transforms.window import FixedWindows, IntervalWindow, TimestampedValue

from rt4chart.schemas.records import (
    AnswerSentence,
    Document,
    PreparedTrace,
    Sentence,
    Trace,
    Window,
)
from rt4chart.transforms.segment import Segment, SegmentConfig

W2_O1 = SegmentConfig(window_size=2, window_overlap=1)
DOC_A = Document("a", "The sky is blue. Grass is green.")
DOC_B = Document("b", "Water is wet.\nFire is hot.")
ANSWER = "The sky is blue. Fire is cold."


def trace(trace_id: str, *contexts: Document, answer: str = ANSWER,
          event_s: int = 0) -> Trace:
    return Trace(trace_id, "rag", event_s * 1_000_000, "What is true?", contexts, answer)


def batch_pipeline() -> TestPipeline:
    return TestPipeline(runner="FnApiRunner")  # the default would first try to download Prism


def test_segment_indexes_sentences_across_documents_and_overlaps_windows():
    two_docs, one_sentence = trace("t1", DOC_A, DOC_B), trace("t2", Document("c", "Only one."))
    expected = [
        PreparedTrace(
            two_docs,
            (Sentence(0, "a", 0, 16, "The sky is blue."),
             Sentence(1, "a", 17, 32, "Grass is green."),
             # offsets restart in each document; the index runs over the whole context
             Sentence(2, "b", 0, 13, "Water is wet."),
             Sentence(3, "b", 14, 26, "Fire is hot.")),
            (AnswerSentence(0, 0, 16, "The sky is blue."),
             AnswerSentence(1, 17, 30, "Fire is cold.")),
            # W=2, O=1: each window starts one sentence after the previous, sharing one
            (Window(0, 0, 1), Window(1, 1, 2), Window(2, 2, 3)),
        ),
        PreparedTrace(
            one_sentence,
            (Sentence(0, "c", 0, 9, "Only one."),),
            (AnswerSentence(0, 0, 16, "The sky is blue."),
             AnswerSentence(1, 17, 30, "Fire is cold.")),
            (Window(0, 0, 0),),
        ),
    ]
    with batch_pipeline() as p:
        out = p | beam.Create([two_docs, one_sentence]) | "Segment" >> Segment(W2_O1)
        assert_that(out.prepared, equal_to(expected))
        assert_that(out.dead_letters, equal_to([]), label="NoDeadLetters")


def _dead_letter_row(dead) -> tuple:
    raw = json.loads(dead.raw)  # the trace as received, whole
    return (dead.stage, dead.reason.split(":")[0], dead.trace_id, dead.route, raw["trace_id"],
            [c["text"] for c in raw["contexts"]])


def test_segment_sends_what_it_cannot_segment_to_the_dead_letters():
    good = trace("good", DOC_A)
    blank = trace("blank", Document("a", "  \n\t \n"))  # no sentence in the context
    broken = trace("broken", Document("a", None))  # type: ignore[arg-type] - fails segmentation
    with batch_pipeline() as p:
        out = p | beam.Create([good, blank, broken]) | "Segment" >> Segment(W2_O1)
        ids = out.prepared | "Ids" >> beam.Map(lambda prepared: prepared.trace.trace_id)
        assert_that(ids, equal_to(["good"]))
        rows = out.dead_letters | "Rows" >> beam.Map(_dead_letter_row)
        assert_that(rows, equal_to([
            ("segment", "context has no sentences", "blank", "rag", "blank", ["  \n\t \n"]),
            ("segment", "segmentation failed", "broken", "rag", "broken", [None]),
        ]), label="DeadLetters")


def test_streaming_segment_keeps_each_trace_in_its_event_time_window():
    minute = FixedWindows(60)
    stream = (
        TestStream()
        .add_elements([TimestampedValue(trace("t1", DOC_A, event_s=10), 10),
                       TimestampedValue(trace("t2", DOC_B, event_s=70), 70)])
        .advance_watermark_to(125)
        # Late: the watermark is past its minute. Segment drops nothing and keeps its window.
        .add_elements([TimestampedValue(trace("late", DOC_B, event_s=30), 30),
                       TimestampedValue(trace("blank", Document("a", " "), event_s=75), 75)])
        .advance_watermark_to_infinity()
    )
    options = PipelineOptions(flags=[], streaming=True, runner="BundleBasedDirectRunner")
    with TestPipeline(options=options) as p:
        traces = p | stream | "Minutes" >> beam.WindowInto(minute)
        out = traces | "Segment" >> Segment(W2_O1)
        ids = out.prepared | "Ids" >> beam.Map(lambda prepared: prepared.trace.trace_id)
        assert_that(ids, equal_to_per_window({IntervalWindow(0, 60): ["t1", "late"],
                                              IntervalWindow(60, 120): ["t2"]}))
        dead = out.dead_letters | "DeadIds" >> beam.Map(lambda d: d.trace_id)
        assert_that(dead, equal_to_per_window({IntervalWindow(60, 120): ["blank"]}),
                    label="DeadLettersInTheirWindow")
