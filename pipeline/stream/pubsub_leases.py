"""Pub/Sub messages held unacknowledged until their outcome is written (the local runner).

Beam's local ReadFromPubSub (the DirectRunner's `_PubSubReadEvaluator`) acknowledges every
message as soon as it has pulled it, before any step has run: a process killed then loses what
it had in flight. Locally rt4chart therefore pulls the subscription itself (`Leases`) and
acknowledges a message only when the row that ends it (its answer, or its dead letter) is in a
closed, fsync'd file (`settle`); until then the message's lease is extended. A killed process
extends nothing: Pub/Sub redelivers its messages after the lease (`lease_s`) and the restarted
stream audits them. Dataflow does not need this: its ReadFromPubSub acknowledges once the
messages are durably in the job's own state (see the README, "Streaming").

The contract (`Leases`):
- `start()` pulls in a thread, at most `max_outstanding` messages leased at once, with a gRPC
  receive limit of RECEIVE_LIMIT_BYTES (the client's 4 MB default breaks on Pub/Sub's 10 MB
  messages); each message goes to `deliver(message, key)` unacknowledged.
- `key` names the outcome that ends the message: `message_key` for a message, `outcome_key` for
  a written row; both read the trace_id the same way the validation does.
- `settle(key)`: a row with that key is written; one leased message of the key is acknowledged
  (a key's messages are interchangeable: copies of one trace_id are audited once).
- With `ack_on_receipt` (no durable sink to wait for), messages are acknowledged when
  delivered, as Beam's local read does.
- A lease is extended for at most `max_lease_s`; then it lapses and Pub/Sub redelivers the
  message (a safety net should an outcome never be matched).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from apache_beam.utils.shared import Shared

from rt4chart.schemas.records import DeadLetter, Message
from rt4chart.transforms.aggregate import REDO_STAGE
from rt4chart.transforms.common.limits import MAX_TRACE_ID_CHARS
from rt4chart.transforms.validate import _field_of, raw_text

logger = logging.getLogger(__name__)

RECEIVE_LIMIT_BYTES = 20 * 1024 * 1024  # over Pub/Sub's 10 MB message limit, with room
# Dead letters that do not end a message: an incomplete answer's redo letter (the answer row
# ends it) and a row BigQuery rejected (its Parquet row ends it).
NOT_TERMINAL_STAGES = frozenset({REDO_STAGE, "write_bigquery"})


def subscriber_client(emulator_host: str | None = None):
    """A SubscriberClient that receives messages up to RECEIVE_LIMIT_BYTES: on the emulator at
    `emulator_host` (default: $PUBSUB_EMULATOR_HOST) or on Google Cloud."""
    import grpc
    from google.cloud import pubsub_v1
    from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

    options = [("grpc.max_receive_message_length", RECEIVE_LIMIT_BYTES),
               ("grpc.max_send_message_length", RECEIVE_LIMIT_BYTES)]
    host = emulator_host or os.environ.get("PUBSUB_EMULATOR_HOST")
    if host:
        channel = grpc.insecure_channel(host, options=options)
    else:
        channel = SubscriberGrpcTransport.create_channel("pubsub.googleapis.com:443",
                                                         options=options)
    return pubsub_v1.SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))


def _id_key(trace_id: str) -> str:
    return "id:" + trace_id  # the validation keeps the trace_id byte for byte


def _raw_key(raw: str) -> str:
    return "raw:" + hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


SIZE_ATTRIBUTE = "rt4chart-oversize-bytes"  # set on a message whose body was dropped
PREVIEW_ATTRIBUTE = "rt4chart-oversize-preview"
PREVIEW_BYTES = 1024
STAGE = "receive"


def shrink(message: Message, limit: int) -> Message:
    """A message over `limit` bytes without its body (its size and first bytes as attributes),
    so that it is never held or parsed whole downstream; others unchanged."""
    if len(message.data) <= limit:
        return message
    preview = message.data[:PREVIEW_BYTES].decode("utf-8", errors="replace")
    extra = ((SIZE_ATTRIBUTE, str(len(message.data))), (PREVIEW_ATTRIBUTE, preview))
    return Message(b"", tuple(sorted(message.attributes + extra)), message.publish_time_us,
                   message.message_id)


def oversize_letter(message: Message, limit: int) -> DeadLetter | None:
    """The dead letter of a message over `limit` bytes (shrunk or not), else None. Only its
    attributes and first bytes are read."""
    attributes = dict(message.attributes)
    size = int(attributes.get(SIZE_ATTRIBUTE, len(message.data)))
    if size <= limit:
        return None
    preview = attributes.get(PREVIEW_ATTRIBUTE)
    if preview is None:
        preview = message.data[:PREVIEW_BYTES].decode("utf-8", errors="replace")
    reason = (f"message of {size} bytes is over the limit of {limit} bytes "
              "(max_message_bytes); not parsed, its first bytes are kept")
    return DeadLetter(STAGE, reason, preview, _attribute(attributes, "trace_id"),
                      _attribute(attributes, "route"))


def _attribute(attributes: dict, name: str) -> str | None:
    value = attributes.get(name)
    return value if value is not None and len(value) <= MAX_TRACE_ID_CHARS else None


def letter_key(letter: DeadLetter) -> str:
    return _id_key(letter.trace_id) if letter.trace_id is not None else _raw_key(letter.raw)


def message_key(message: Message, limit: int) -> str:
    """The outcome key of a message: its trace_id as the dead letter would record it (body,
    else attribute), else a hash of the message as the dead letter's `raw` holds it; for a
    message over `limit`, its size dead letter's key."""
    letter = oversize_letter(message, limit)
    if letter is not None:
        return letter_key(letter)
    trace_id = _field_of(message, "trace_id", MAX_TRACE_ID_CHARS)
    return _id_key(trace_id) if trace_id is not None else _raw_key(raw_text(message))


def outcome_key(table: str, row: dict) -> str | None:
    """The key of a written row that ends a message (an answer, a terminal dead letter)."""
    if table == "answers":
        return _id_key(row["trace_id"])
    if table == "dead_letters" and row["stage"] not in NOT_TERMINAL_STAGES:
        return letter_key(DeadLetter(row["stage"], row["reason"], row["raw"],
                                     row.get("trace_id")))
    return None


@dataclass
class _Lease:
    ack_id: str
    key: str
    leased_at: float


class Leases:
    """The messages of one subscription pulled and not yet acknowledged (module docstring)."""

    def __init__(self, subscription: str, deliver: Callable[[Message, str], None], *,
                 client=None, lease_s: int = 30, max_outstanding: int = 1000,
                 max_lease_s: float = 3600.0, ack_on_receipt: bool = False,
                 max_message_bytes: int):
        self._subscription = subscription
        self._deliver = deliver
        self._client = client
        self._lease_s = lease_s
        self._max_outstanding = max_outstanding
        self._max_lease_s = max_lease_s
        self._ack_on_receipt = ack_on_receipt
        self._limit = max_message_bytes
        self._lock = threading.Lock()
        self._by_key: dict[str, deque[_Lease]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.acked = 0

    @property
    def outstanding(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._by_key.values())

    def start(self) -> Leases:
        if self._client is None:
            self._client = subscriber_client()
        self._thread = threading.Thread(target=self._run, name="rt4chart-pubsub-pull",
                                        daemon=True)
        self._thread.start()
        return self

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        """Stop pulling; leases still held lapse and Pub/Sub redelivers their messages."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._lease_s)

    def settle(self, key: str) -> None:
        """A row ending a message of `key` is durably written: acknowledge one such message."""
        with self._lock:
            queue = self._by_key.get(key)
            if not queue:  # e.g. a redelivered copy's row, or a lease that lapsed
                return
            lease = queue.popleft()
            if not queue:
                del self._by_key[key]
        self._ack([lease.ack_id])

    def _ack(self, ack_ids: list[str]) -> None:
        try:
            self._client.acknowledge(subscription=self._subscription, ack_ids=ack_ids,
                                     timeout=30)
            self.acked += len(ack_ids)
        except Exception:  # noqa: BLE001 - not acknowledged: redelivered, audited again
            logger.warning("acknowledging %d message(s) failed; Pub/Sub will redeliver them",
                           len(ack_ids), exc_info=True)

    def _run(self) -> None:
        extended = time.monotonic()
        while not self._stop.is_set():
            try:
                room = self._max_outstanding - self.outstanding
                if room > 0:
                    self._pull(min(100, room))
                else:
                    self._stop.wait(0.2)
                if time.monotonic() - extended >= self._lease_s / 3:
                    self._extend()
                    extended = time.monotonic()
            except Exception:  # noqa: BLE001 - a failed pull is retried; leases lapse at worst
                logger.warning("pulling %s failed; retrying", self._subscription, exc_info=True)
                self._stop.wait(1.0)

    def _pull(self, max_messages: int) -> None:
        from google.api_core import exceptions

        try:
            response = self._client.pull(subscription=self._subscription,
                                         max_messages=max_messages, timeout=5)
        except exceptions.DeadlineExceeded:
            return
        except exceptions.ResourceExhausted:  # several large messages over the limit at once
            if max_messages == 1:
                raise
            return self._pull(1)
        for received in response.received_messages:
            self._received(received)

    def _received(self, received) -> None:
        m = received.message
        message = shrink(Message(
            bytes(m.data), tuple(sorted(dict(m.attributes).items())),
            int(m.publish_time.timestamp() * 1_000_000), m.message_id), self._limit)
        if self._ack_on_receipt:  # nothing to settle later: no key (no parse of the body)
            self._deliver(message, "")
            self._ack([received.ack_id])
            return
        key = message_key(message, self._limit)
        with self._lock:
            self._by_key.setdefault(key, deque()).append(
                _Lease(received.ack_id, key, time.monotonic()))
        self._deliver(message, key)

    def _extend(self) -> None:
        """Extend every lease younger than max_lease_s; older ones lapse (redelivered)."""
        now = time.monotonic()
        with self._lock:
            keep = [lease.ack_id for q in self._by_key.values() for lease in q
                    if now - lease.leased_at < self._max_lease_s]
            for key in [k for k, q in self._by_key.items()
                        if all(now - lease.leased_at >= self._max_lease_s for lease in q)]:
                logger.warning("no outcome written for %s within %.0f s; letting Pub/Sub "
                               "redeliver it", key[:80], self._max_lease_s)
                del self._by_key[key]
        for start in range(0, len(keep), 1000):
            self._client.modify_ack_deadline(subscription=self._subscription,
                                             ack_ids=keep[start:start + 1000],
                                             ack_deadline_seconds=self._lease_s, timeout=30)


class LeaseHandle:
    """What the sinks settle under: a picklable handle to the run's `Leases`, held through
    Beam's `Shared` (as the judge runtime is). The run (pubsub_frontend.local_subscription)
    makes it and holds the Leases while the stream runs; the local runner's sinks run in its
    process, so the handle a sink's DoFn carries finds them there. Once the run lets them go,
    or in another process, a handle settles nothing."""

    def __init__(self, leases: Leases):
        self._shared = Shared()
        self._shared.acquire(lambda: leases)  # under the handle's key, while the run holds it

    def __getstate__(self) -> dict:
        return {"_shared": self._shared}

    def leases(self) -> Leases | None:
        """The run's Leases, if they are still held in this process."""
        return self._shared.acquire(lambda: None)


def settle(handle: LeaseHandle, keys: Iterable[str]) -> None:
    """Called by a sink once rows with `keys` are durably written (see `Leases.settle`); once
    the run has stopped its Leases, nothing is settled."""
    leases = handle.leases()
    if leases is None or leases.stopped:
        return
    for key in keys:
        leases.settle(key)
