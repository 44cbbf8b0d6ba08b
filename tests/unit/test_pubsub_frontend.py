"""The local stream's event server (pipeline/stream/pubsub_frontend.py), read through Beam's own
TestStreamService client on 127.0.0.1: the clock and the watermark move before each batch, a
batch holds at most FRONT_MESSAGES and FRONT_BYTES, messages keep their publish times, a batch
goes out only once the pipeline has taken the one before (what arrived meanwhile goes out
together), and the process environment is left alone."""

from __future__ import annotations

import os
import threading
import time

import apache_beam as beam
import grpc
import pytest
from apache_beam.portability.api import beam_interactive_api_pb2, beam_interactive_api_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.pipeline.stream import pubsub_frontend
from rt4chart.pipeline.stream.pubsub_frontend import Frontend, FrontHandle, decode, encode
from rt4chart.schemas.records import Message

CODER = beam.coders.FastPrimitivesCoder()


def _message(i: int, size: int = 10) -> Message:
    return Message(b"x" * size, (("route", "faq"), ("n", str(i))), 1_700_000_000_000_000 + i,
                   f"id-{i}")


class _Reader:
    """Beam's TestStream client side: collects the events of one stream in a thread."""

    def __init__(self, front: Frontend, take: bool = True):
        self._front, self.take = front, take  # take: report each batch taken, as the pipeline
        self._channel = grpc.insecure_channel(front.address)
        stub = beam_interactive_api_pb2_grpc.TestStreamServiceStub(self._channel)
        self._stream = stub.Events(beam_interactive_api_pb2.EventsRequest(output_ids=["None"]))
        self.events: list = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for event in self._stream:
                self.events.append(event)
                if self.take and event.HasField("element_event"):
                    self._front.took(len(event.element_event.elements))
        except grpc.RpcError:
            pass

    def messages(self) -> list[Message]:
        return [decode(CODER.decode(e.encoded_element)) for ev in list(self.events)
                if ev.HasField("element_event") for e in ev.element_event.elements]

    def wait(self, test, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not test():
            assert time.monotonic() < deadline, f"no such events within {timeout_s} s"
            time.sleep(0.05)

    def close(self) -> None:
        self._stream.cancel()
        self._channel.close()
        self._thread.join(10)


@pytest.fixture
def front():
    front = Frontend().start()
    yield front
    front.stop()


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=64), st.lists(st.tuples(st.text(max_size=8), st.text(max_size=8)),
                                        max_size=4).map(tuple),
       st.one_of(st.none(), st.integers(0, 2**62)), st.one_of(st.none(), st.text(max_size=12)))
def test_a_message_survives_the_event_coding(data, attributes, publish_us, message_id):
    message = Message(data, attributes, publish_us, message_id)
    assert decode(CODER.decode(CODER.encode(encode(message)))) == message


def test_the_clock_and_the_watermark_move_before_each_batch_to_the_wall_clock(front):
    before_us = int(time.time() * 1e6)
    reader = _Reader(front)
    try:
        for i in range(25):
            front.deliver(_message(i))
        reader.wait(lambda: len(reader.messages()) == 25)
        events = list(reader.events)
        kinds = [e.WhichOneof("event") for e in events]
        first_batch = kinds.index("element_event")
        assert "watermark_event" in kinds[:first_batch]
        assert "processing_time_event" in kinds[:first_batch]
        # The runner's clock starts at 0: the advances add up to the wall clock.
        clock_us = sum(e.processing_time_event.advance_duration for e in events
                       if e.HasField("processing_time_event"))
        assert before_us <= clock_us <= int(time.time() * 1e6)
        marks = [e.watermark_event.new_watermark for e in events if e.HasField("watermark_event")]
        assert marks == sorted(set(marks)) and marks[0] >= before_us
        batches = [e.element_event.elements for e in events if e.HasField("element_event")]
        assert all(1 <= len(b) <= pubsub_frontend.FRONT_MESSAGES for b in batches)
        assert len(batches) >= 3
        assert reader.messages() == [_message(i) for i in range(25)]
        assert [e.timestamp for b in batches for e in b] == [
            _message(i).publish_time_us for i in range(25)]
    finally:
        reader.close()


def test_an_idle_stream_still_moves_the_clock(front):
    reader = _Reader(front)
    try:
        reader.wait(lambda: sum(e.HasField("processing_time_event") for e in reader.events) >= 3,
                    timeout_s=30)
        assert not reader.messages()
    finally:
        reader.close()


def test_a_batch_stays_under_the_byte_limit(front, monkeypatch):
    monkeypatch.setattr(pubsub_frontend, "FRONT_BYTES", 100)
    reader = _Reader(front)
    try:
        for i in range(6):
            front.deliver(_message(i, size=40))
        front.deliver(_message(6, size=500))  # alone over the limit: sent alone, not dropped
        reader.wait(lambda: len(reader.messages()) == 7)
        batches = [[decode(CODER.decode(x.encoded_element)) for x in e.element_event.elements]
                   for e in reader.events if e.HasField("element_event")]
        assert all(len(b) == 1 or sum(len(m.data) for m in b) <= 100 for b in batches)
        assert [m.message_id for b in batches for m in b] == [f"id-{i}" for i in range(7)]
    finally:
        reader.close()


def test_a_batch_goes_out_once_the_one_before_is_taken(front):
    reader = _Reader(front, take=False)
    handle = FrontHandle(front)
    try:
        front.deliver(_message(0))
        reader.wait(lambda: len(reader.messages()) == 1)
        for i in range(1, 26):
            front.deliver(_message(i))
        time.sleep(2.5)  # more than two idle rounds: nothing more until the first is taken
        assert len(reader.messages()) == 1
        assert sum(e.HasField("processing_time_event") for e in reader.events) >= 3  # clock on
        reader.take = True
        handle.took(1)  # the pipeline took it: what arrived meanwhile follows, in full batches
        reader.wait(lambda: len(reader.messages()) == 26)
        batches = [len(e.element_event.elements) for e in reader.events
                   if e.HasField("element_event")]
        assert batches == [1, pubsub_frontend.FRONT_MESSAGES, pubsub_frontend.FRONT_MESSAGES, 5]
        assert reader.messages() == [_message(i) for i in range(26)]
    finally:
        reader.close()


def test_a_second_reader_gets_no_messages(front):
    first = _Reader(front)
    first.wait(lambda: first.events)
    second = _Reader(front)
    try:
        second.wait(lambda: second.events)
        front.deliver(_message(0))
        first.wait(lambda: len(first.messages()) == 1)
        assert second.messages() == []
    finally:
        first.close()
        second.close()


def test_the_stream_ends_when_the_front_end_stops():
    front = Frontend().start()
    reader = _Reader(front)
    reader.wait(lambda: reader.events)
    front.stop()
    reader._thread.join(15)
    assert not reader._thread.is_alive()
    reader.close()


def test_reading_the_local_stream_leaves_the_environment_alone(front):
    before = dict(os.environ)
    reader = _Reader(front)
    try:
        front.deliver(_message(0))
        reader.wait(lambda: len(reader.messages()) == 1)
        assert dict(os.environ) == before
    finally:
        reader.close()
