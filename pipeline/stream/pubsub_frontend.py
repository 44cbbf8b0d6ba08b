"""A loopback Pub/Sub front-end for the local runner, so that acknowledgements wait for sinks.

The DirectRunner's only unbounded source that keeps a real clock is its ReadFromPubSub, which
acknowledges on receipt (a splittable DoFn such as PeriodicImpulse does not run on the
bundle-based runner, and TestStream swaps in a test clock). So locally `rt4chart stream` points
Beam's Pub/Sub clients at this front-end on 127.0.0.1 (through PUBSUB_EMULATOR_HOST, for the
run only): Beam pulls and "acknowledges" here, while `pubsub_leases.Leases` holds the real
subscription's messages until their rows are written. Publishes (dead-letter and alerts topics)
are forwarded to the real service unchanged.

The front-end answers Pull (at most FRONT_BYTES per response: Beam's own client keeps gRPC's
4 MB receive limit), Acknowledge and ModifyAckDeadline (no-ops: the real leases are elsewhere)
and Publish; any other call is UNIMPLEMENTED.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import queue
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import TYPE_CHECKING

from rt4chart.schemas.records import Message

if TYPE_CHECKING:
    from rt4chart.pipeline.stream.pubsub_leases import LeaseHandle

logger = logging.getLogger(__name__)

FRONT_BYTES = 3 * 1024 * 1024  # per Pull response, under Beam's client's 4 MiB limit
MAX_QUEUED = 2000  # messages waiting for Beam's next pull
PULL_WAIT_S = 1.0  # an empty Pull returns after this: Beam's watermark follows each pull


def publisher_api(emulator_host: str | None = None):
    """The unbatched GAPIC publisher on the real service (or emulator at `emulator_host`)."""
    import grpc
    from google.pubsub_v1.services.publisher import PublisherClient
    from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport

    host = emulator_host or os.environ.get("PUBSUB_EMULATOR_HOST")
    if host:
        channel = grpc.insecure_channel(host, options=[
            ("grpc.max_send_message_length", 20 * 1024 * 1024)])
        return PublisherClient(transport=PublisherGrpcTransport(channel=channel))
    return PublisherClient()


class Frontend:
    """The front-end server: `deliver` queues a message for Beam; `address` is host:port."""

    def __init__(self, publisher=None):
        # Bounded: with acknowledgement on receipt nothing else stops the pull outrunning Beam
        # (leased messages are bounded by Leases.max_outstanding, below this).
        self._queue: queue.Queue[Message] = queue.Queue(maxsize=MAX_QUEUED)
        self._held: Message | None = None  # the message that did not fit the last response
        self._publisher = publisher
        self._ids = itertools.count()
        self._server = None
        self._lock = threading.Lock()  # one Pull at a time: `_held` is shared
        self.address = ""

    def deliver(self, message: Message, _key: str = "") -> None:
        self._queue.put(message)

    def start(self) -> Frontend:
        import grpc

        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8), options=[
            ("grpc.max_receive_message_length", 20 * 1024 * 1024),
            ("grpc.max_send_message_length", 20 * 1024 * 1024)])
        self._server.add_generic_rpc_handlers([self._handlers()])
        port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        self.address = f"127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=1).wait(5)

    def _handlers(self):
        import grpc
        from google.protobuf import empty_pb2
        from google.pubsub_v1 import types

        def unary(fn, request_type, response_type):
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=request_type.deserialize,
                response_serializer=response_type.serialize)

        def empty(_request, _context):
            return empty_pb2.Empty()

        nothing = grpc.unary_unary_rpc_method_handler(
            empty, request_deserializer=lambda b: b,
            response_serializer=empty_pb2.Empty.SerializeToString)
        subscriber = grpc.method_handlers_generic_handler("google.pubsub.v1.Subscriber", {
            "Pull": unary(self._pull, types.PullRequest, types.PullResponse),
            "Acknowledge": nothing, "ModifyAckDeadline": nothing})
        publisher = grpc.method_handlers_generic_handler("google.pubsub.v1.Publisher", {
            "Publish": unary(self._publish, types.PublishRequest, types.PublishResponse)})
        return _Both(subscriber, publisher)

    def _pull(self, request, _context):
        with self._lock:
            return self._pull_locked(request)

    def _pull_locked(self, request):
        from google.pubsub_v1 import types

        batch, size = [], 0
        limit = max(1, request.max_messages or 1)
        while len(batch) < limit:
            message = self._next(wait=not batch)
            if message is None:
                break
            if batch and size + len(message.data) > FRONT_BYTES:
                self._held = message
                break
            batch.append(message)
            size += len(message.data)
        return types.PullResponse(received_messages=[
            types.ReceivedMessage(ack_id=f"front-{next(self._ids)}",
                                  message=_to_pubsub(m)) for m in batch])

    def _next(self, wait: bool) -> Message | None:
        if self._held is not None:
            message, self._held = self._held, None
            return message
        try:
            return self._queue.get(timeout=PULL_WAIT_S) if wait else self._queue.get_nowait()
        except queue.Empty:
            return None

    def _publish(self, request, _context):
        return self._publisher.publish(request=request, timeout=60)


class _Both:
    """One generic handler over the Subscriber and Publisher services."""

    def __init__(self, *handlers):
        self._handlers = handlers

    def service(self, details):
        for handler in self._handlers:
            found = handler.service(details)
            if found is not None:
                return found
        return None


def _to_pubsub(message: Message):
    from google.protobuf import timestamp_pb2
    from google.pubsub_v1 import types

    stamp = timestamp_pb2.Timestamp()
    stamp.FromMicroseconds(message.publish_time_us or 0)
    return types.PubsubMessage(data=message.data, attributes=dict(message.attributes),
                               message_id=message.message_id or "", publish_time=stamp)


@contextlib.contextmanager
def local_subscription(config) -> Iterator[LeaseHandle | None]:
    """Run a local stream's Pub/Sub through the front-end (module docstring): pulls
    `config.subscription` with `Leases`, points Beam's Pub/Sub clients at the front-end while
    inside (`beam_clients_at`), and yields the handle the sinks settle under, or None when
    nothing can be waited for (no --out, or OTLP, whose traces span messages): then messages
    are acknowledged on receipt, as Beam's local read does, and a warning says so.
    """
    from rt4chart.pipeline.stream import pubsub_leases

    durable = bool(config.out) and config.input_format == "json"
    if not durable:
        logger.warning("local stream without --out (or with OTLP input): messages are "
                       "acknowledged on receipt, so a killed process loses those in flight; "
                       "Dataflow does not")
    upstream = os.environ.get("PUBSUB_EMULATOR_HOST")
    front = Frontend(publisher_api(upstream)).start()
    leases = pubsub_leases.Leases(
        config.subscription, front.deliver, client=pubsub_leases.subscriber_client(upstream),
        lease_s=config.lease_s, ack_on_receipt=not durable,
        max_message_bytes=config.max_message_bytes)
    handle = pubsub_leases.LeaseHandle(leases) if durable else None
    try:
        with beam_clients_at(front.address):
            leases.start()
            yield handle
    finally:
        leases.stop()  # its handle settles nothing from now on
        front.stop()


@contextlib.contextmanager
def beam_clients_at(address: str) -> Iterator[None]:
    """Beam's own Pub/Sub clients (the local runner's ReadFromPubSub and WriteToPubSub) at
    `address` while inside. Beam builds them with no arguments (`pubsub.SubscriberClient()`),
    so their endpoint can only be given the way the client library reads it: the
    PUBSUB_EMULATOR_HOST variable, set for this run only and restored after. rt4chart's own
    clients are given their endpoint (`publisher_api`, `pubsub_leases.subscriber_client`)."""
    saved = os.environ.get("PUBSUB_EMULATOR_HOST")
    os.environ["PUBSUB_EMULATOR_HOST"] = address
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PUBSUB_EMULATOR_HOST", None)
        else:
            os.environ["PUBSUB_EMULATOR_HOST"] = saved
