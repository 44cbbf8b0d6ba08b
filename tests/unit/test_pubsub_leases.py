"""The contract of pipeline/stream/pubsub_leases.py without Pub/Sub: a message's key is the key of
the
row that ends it (answer or dead letter, as the validation writes them), an oversize message
is dead-lettered from its first bytes, and `settle` acknowledges one leased message per row."""

from __future__ import annotations

import pickle

import orjson
import pytest

from rt4chart.pipeline.stream.pubsub_leases import (
    LeaseHandle,
    Leases,
    message_key,
    outcome_key,
    oversize_letter,
    settle,
    shrink,
)
from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.records import Message
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.transforms.validate import dead_letter, parse_trace

LIMIT = 1000
CONTEXT = "The sky is blue."


def _row_of(message: Message) -> tuple[str, dict]:
    """The table and row the validation makes of a message (an answer's trace_id, or the dead
    letter), as the file sink sees it."""
    try:
        trace = parse_trace(message)
    except Exception as exc:  # noqa: BLE001 - any invalid message becomes its dead letter
        letter = dead_letter(message, str(exc)).value
        return "dead_letters", to_dict(DeadLetterRow.of(letter))
    return "answers", {"trace_id": trace.trace_id}


@pytest.mark.parametrize("message", [
    Message(orjson.dumps({"trace_id": " t-1 ", "contexts": [CONTEXT], "answer": "a"})),
    Message(orjson.dumps({"contexts": [CONTEXT], "answer": "a"}), (("trace_id", "attr"),)),
    Message(b"{not json"),
    Message(b"\xff\xfe broken utf-8"),
    Message(orjson.dumps({"trace_id": 7, "contexts": [CONTEXT], "answer": "a"})),
    Message(orjson.dumps({"trace_id": "no-contexts", "answer": "a"})),
])
def test_a_message_and_the_row_that_ends_it_share_a_key(message):
    table, row = _row_of(message)
    assert outcome_key(table, row) == message_key(message, LIMIT)


def test_an_oversize_message_is_dead_lettered_from_its_first_bytes():
    big = Message(b'{"trace_id": "x", "answer": "' + b"a" * 5000 + b'"}',
                  (("route", "faq"), ("trace_id", "big-1")), 1, "m1")
    shrunk = shrink(big, LIMIT)
    assert shrunk.data == b""  # never held or parsed whole downstream
    letter = oversize_letter(shrunk, LIMIT)
    assert letter == oversize_letter(big, LIMIT)
    assert letter.stage == "receive" and f"{len(big.data)} bytes" in letter.reason
    assert (letter.trace_id, letter.route) == ("big-1", "faq") and len(letter.raw) == 1024
    row = to_dict(DeadLetterRow.of(letter))
    assert outcome_key("dead_letters", row) == message_key(shrunk, LIMIT)
    assert oversize_letter(Message(b"small"), LIMIT) is None


def test_rows_that_do_not_end_a_message_settle_nothing():
    assert outcome_key("claims", {"trace_id": "t"}) is None
    for stage in ("judge", "write_bigquery"):  # the answer row or Parquet row ends it
        assert outcome_key("dead_letters", {"stage": stage, "trace_id": "t", "raw": ""}) is None


class _RecordingClient:
    def __init__(self):
        self.acked: list[str] = []

    def acknowledge(self, subscription, ack_ids, timeout):
        self.acked += ack_ids


class _Received:
    def __init__(self, ack_id: str, data: bytes):
        from datetime import UTC, datetime

        self.ack_id = ack_id
        self.message = type("M", (), {"data": data, "attributes": {}, "message_id": ack_id,
                                      "publish_time": datetime(2024, 1, 1, tzinfo=UTC)})()


def test_settle_acknowledges_one_leased_copy_per_written_row():
    client, delivered = _RecordingClient(), []
    leases = Leases("projects/p/subscriptions/s", lambda m, k: delivered.append(k),
                    client=client, max_message_bytes=LIMIT)
    trace = orjson.dumps({"trace_id": "t", "contexts": [CONTEXT], "answer": "a"})
    for ack_id in ("a1", "a2"):  # a producer's retry: two copies of one trace
        leases._received(_Received(ack_id, trace))
    assert client.acked == [] and leases.outstanding == 2  # nothing before a row is written
    leases.settle("id:t")  # the answer
    assert client.acked == ["a1"] and leases.outstanding == 1
    leases.settle("id:t")  # the copy's dedupe dead letter
    leases.settle("id:t")  # a row of nothing leased: acknowledges nothing more
    assert client.acked == ["a1", "a2"] and leases.outstanding == 0
    assert delivered == ["id:t", "id:t"]


def test_a_lease_handle_settles_the_run_leases_in_its_process_until_they_stop():
    client = _RecordingClient()
    leases = Leases("projects/p/subscriptions/s", lambda m, k: None, client=client,
                    max_message_bytes=LIMIT)
    for ack_id in ("a1", "a2", "a3"):
        trace = orjson.dumps({"trace_id": ack_id, "contexts": [CONTEXT], "answer": "a"})
        leases._received(_Received(ack_id, trace))
    handle = LeaseHandle(leases)
    sink_copy = pickle.loads(pickle.dumps(handle))  # as a sink's DoFn carries it
    assert sink_copy.leases() is leases
    settle(sink_copy, ["id:a1", "id:a2"])
    assert client.acked == ["a1", "a2"]
    leases.stop()  # the run ended: a late row settles nothing
    settle(sink_copy, ["id:a3"])
    assert client.acked == ["a1", "a2"] and leases.outstanding == 1
