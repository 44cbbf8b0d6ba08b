"""Regroup, the join between judge stages: batch (CoGroupByKey) and streaming (stateful DoFn).

The join function here records which parts it was given, so an early, duplicated or missing
join shows in the output: a trace joined before all its parts arrived comes out with fewer
parts (as "incomplete"), and its remaining parts would start a second join.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.test_stream import TestStream
from apache_beam.testing.util import assert_that, equal_to, equal_to_per_window
from apache_beam.transforms.window import FixedWindows, IntervalWindow, TimestampedValue

from rt4chart.transforms.regroup import Regroup

TIMEOUT_S = 60.0
# The streaming join's timeout is a processing-time timer set from the wall clock; TestStream's
# processing time starts at 0, so advancing it by now + a day passes any timer the run set.
PAST_ANY_TIMEOUT_S = int(time.time()) + 86_400


@dataclass(frozen=True)
class Head:
    trace_id: str
    parts: int  # how many parts to wait for
    event_s: float = 0.0


@dataclass(frozen=True)
class Part:
    trace_id: str
    index: int


def join(head: Head, parts: list[Part]):
    """(trace_id, part indices in order); tagged "incomplete" when parts are missing."""
    got = (head.trace_id, tuple(sorted(p.index for p in parts)))
    if len(parts) < head.parts:
        yield beam.pvalue.TaggedOutput("incomplete", got)
    else:
        yield got


def _join_fault(head: Head, reason: str):
    yield beam.pvalue.TaggedOutput("incomplete", (head.trace_id, reason))


join.fault = _join_fault


def regroup(streaming: bool) -> Regroup:
    return Regroup(key_head=lambda h: h.trace_id, key_part=lambda p: p.trace_id,
                   expected=lambda h: h.parts, join=join, event_time=lambda h: h.event_s,
                   streaming=streaming, tags=("incomplete",), timeout_s=TIMEOUT_S)


def batch_pipeline() -> TestPipeline:
    return TestPipeline(runner="FnApiRunner")  # the default would first try to download Prism


def streaming_pipeline() -> TestPipeline:
    options = PipelineOptions(flags=[], streaming=True, runner="BundleBasedDirectRunner")
    return TestPipeline(options=options)


def split(events: beam.PCollection) -> dict[str, beam.PCollection]:
    """One TestStream of heads and parts -> Regroup's {"head", "parts"} inputs."""
    return {"head": events | "Heads" >> beam.Filter(lambda e: isinstance(e, Head)),
            "parts": events | "Parts" >> beam.Filter(lambda e: isinstance(e, Part))}


def at(seconds: float, *elements) -> list[TimestampedValue]:
    return [TimestampedValue(e, seconds) for e in elements]


# ---------------------------------------------------------------------------------- batch


def test_batch_joins_each_head_with_exactly_its_own_parts():
    heads = [Head("t1", 2), Head("t2", 3), Head("t3", 0)]
    parts = [Part("t2", 2), Part("t1", 1), Part("t2", 0), Part("t1", 0), Part("t2", 1),
             Part("orphan", 0)]  # no head: never joined
    with batch_pipeline() as p:
        out = {"head": p | "Heads" >> beam.Create(heads),
               "parts": p | "Parts" >> beam.Create(parts)} | "Join" >> regroup(False)
        assert_that(out.main, equal_to([("t1", (0, 1)), ("t2", (0, 1, 2)), ("t3", ())]))
        assert_that(out.incomplete, equal_to([]), label="NoneIncomplete")


def test_batch_joins_a_trace_with_missing_parts_once_with_what_there_is():
    heads = [Head("t1", 3), Head("t2", 1)]
    parts = [Part("t1", 0), Part("t1", 2), Part("t2", 0)]
    with batch_pipeline() as p:
        out = {"head": p | "Heads" >> beam.Create(heads),
               "parts": p | "Parts" >> beam.Create(parts)} | "Join" >> regroup(False)
        assert_that(out.main, equal_to([("t2", (0,))]))
        assert_that(out.incomplete, equal_to([("t1", (0, 2))]), label="Incomplete")


# ------------------------------------------------------------------------------ streaming


def test_streaming_joins_once_every_part_is_in_whatever_the_arrival_order():
    stream = (
        TestStream()
        .add_elements(at(10, Head("t1", 2), Part("t2", 1)))  # t2's parts before its head
        .add_elements(at(11, Part("t1", 0), Part("t2", 0)))
        .advance_watermark_to(100)
        .add_elements(at(12, Part("t1", 1)))  # behind the watermark: still t1's part
        .add_elements(at(13, Head("t2", 3)))
        .add_elements(at(14, Part("t2", 2)))
        .advance_watermark_to_infinity()
    )
    with streaming_pipeline() as p:
        out = split(p | stream) | "Join" >> regroup(True)
        # Joined early, t1 would come out as ("t1", (0,)) plus a second join of (1,).
        assert_that(out.main, equal_to([("t1", (0, 1)), ("t2", (0, 1, 2))]))
        assert_that(out.incomplete, equal_to([]), label="NoneIncomplete")


def test_streaming_waits_for_missing_parts_without_a_timeout():
    # No processing time passes: neither the end of input nor the watermark may join t1.
    stream = (
        TestStream()
        .add_elements(at(10, Head("t1", 3), Part("t1", 0)))
        .add_elements(at(11, Part("t1", 1)))
        .advance_watermark_to_infinity()
    )
    with streaming_pipeline() as p:
        out = split(p | stream) | "Join" >> regroup(True)
        assert_that(out.main, equal_to([]))
        assert_that(out.incomplete, equal_to([]), label="NotYet")


def test_streaming_timeout_joins_what_arrived_at_the_heads_event_time():
    stream = (
        TestStream()
        .add_elements(at(130, Head("t1", 3, event_s=130.0), Part("t1", 2)))
        .add_elements(at(131, Part("t1", 0), Head("t2", 1, event_s=70.0), Part("t2", 0)))
        .advance_processing_time(PAST_ANY_TIMEOUT_S)
        .advance_watermark_to_infinity()
    )
    with streaming_pipeline() as p:
        out = split(p | stream) | "Join" >> regroup(True)
        incomplete = out.incomplete | "Minutes" >> beam.WindowInto(FixedWindows(60))
        assert_that(out.main, equal_to([("t2", (0,))]))
        # The timer's output carries t1's event time (130 s), so it lands in t1's window.
        assert_that(incomplete, equal_to_per_window({IntervalWindow(120, 180): [("t1", (0, 2))]}),
                    label="TimedOut")


def test_streaming_results_after_the_join_are_dropped_as_orphans(caplog):
    stream = (
        TestStream()
        .add_elements(at(10, Head("t1", 1), Part("t1", 0)))
        .add_elements(at(11, Part("t1", 0), Part("t1", 1)))  # a redelivery and a stray result
        .add_elements(at(12, Head("t2", 1), Part("t2", 0)))
        .advance_processing_time(PAST_ANY_TIMEOUT_S)
        .advance_watermark_to_infinity()
    )
    with streaming_pipeline() as p:
        out = split(p | stream) | "Join" >> regroup(True)
        # Not a second join of t1 (nor an incomplete one when the orphans' timer fires).
        assert_that(out.main, equal_to([("t1", (0,)), ("t2", (0,))]))
        assert_that(out.incomplete, equal_to([]), label="NoneIncomplete")
    # The orphans counter is incremented in the timer callback, whose metrics the local runner
    # does not report (as Beam's Java harness did not, apache/beam#29099): read the log.
    orphans = [r.getMessage() for r in caplog.records if "arrived after it was joined" in
               r.getMessage()]
    assert orphans == ["Join: 2 result(s) for trace t1 arrived after it was joined or without "
                       "it; dropped from the join"]
