"""The gcloud Pub/Sub emulator for tests, on 127.0.0.1 (ephemeral port), plus a streaming runner.

`PubSubEmulator.start()` launches `gcloud beta emulators pubsub start` in its own session: the
gcloud wrapper spawns a `java` child that outlives a killed wrapper, so `stop()` signals the whole
process group (SIGTERM, then SIGKILL after a bounded wait) and never anything else. Readiness is
an HTTP GET on the port (the emulator answers "Ok"), bounded, with the log tail in the error.
Start-up measured at 1.1-2.3 s on the dev box; stop (SIGTERM to java) takes about 2 s.

The helpers (`create_topic`, `publish`, `pull_all`, ...) talk to this emulator explicitly, over an
insecure gRPC channel, whatever `PUBSUB_EMULATOR_HOST` says. Beam's `ReadFromPubSub` and
`WriteToPubSub` only find an emulator through that variable: set it from `env()`.

`run_streaming(pipeline)` is the reference for running a streaming pipeline in a test: the local
DirectRunner has no `wait_until_finish(duration=...)`, so start it, poll the outputs with a
deadline (`StreamingRun.wait_for`), then `cancel()`. Measured with 1-25 messages: `run()` returns
in 0.05-0.25 s, the first message is out 0.2-0.7 s after publishing. A bare `result.cancel()`
waits for the source's blocking pull (`timeout=30`) to end: 23-29 s. `cancel(wake=...)`
publishes to the input topic so that pull returns at once: 0.01-0.06 s. The wake message needs
data or attributes (the emulator rejects an empty message).

Use `PipelineOptions(flags=[], streaming=True, runner="BundleBasedDirectRunner")`: without
`flags=[]` Beam parses pytest's sys.argv, and "DirectRunner" first tries the PrismRunner, which
downloads a binary from GitHub (and, where that works, runs with other semantics).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_PROJECT = "rt4chart-test"


@dataclass(frozen=True)
class PulledMessage:
    """One message pulled (and acked) from a subscription."""

    data: bytes
    attributes: dict[str, str]
    message_id: str
    publish_time: datetime


def free_port() -> int:
    """An ephemeral TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _http_ok(host: str, timeout_s: float = 0.5) -> bool:
    # No proxies: a developer's HTTP(S)_PROXY must not route 127.0.0.1 elsewhere.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{host}/", timeout=timeout_s) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass
class PubSubEmulator:
    """A running Pub/Sub emulator process group; use `start()`, not the constructor."""

    host: str
    project: str
    process: subprocess.Popen
    workdir: Path
    start_seconds: float = 0.0
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)
    _stopped: bool = field(default=False, repr=False)

    @classmethod
    def start(cls, project: str = DEFAULT_PROJECT, timeout_s: float = 60.0) -> PubSubEmulator:
        """Start an emulator on a free 127.0.0.1 port and wait (bounded) until it answers.

        Raises:
            RuntimeError: gcloud exited or the emulator did not answer within `timeout_s`; the
                message carries the tail of its log.
        """
        gcloud = shutil.which("gcloud")
        if gcloud is None:
            raise RuntimeError("gcloud is not on PATH: cannot start the Pub/Sub emulator")
        workdir = Path(tempfile.mkdtemp(prefix="rt4chart-pubsub-"))
        (workdir / "data").mkdir()
        host = f"127.0.0.1:{free_port()}"
        command = [gcloud, "beta", "emulators", "pubsub", "start", f"--host-port={host}",
                   f"--project={project}", f"--data-dir={workdir / 'data'}", "--quiet"]
        began = time.monotonic()
        with open(workdir / "emulator.log", "wb") as log:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
        emulator = cls(host=host, project=project, process=process, workdir=workdir)
        try:
            emulator._wait_ready(began + timeout_s)
        except BaseException:
            emulator.stop()
            raise
        emulator.start_seconds = time.monotonic() - began
        logger.info("Pub/Sub emulator on %s ready in %.1f s", host, emulator.start_seconds)
        return emulator

    def _wait_ready(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Pub/Sub emulator exited with {self.process.returncode}:\n"
                                   f"{self.log_tail()}")
            if _http_ok(self.host):
                return
            time.sleep(0.1)
        raise RuntimeError(f"Pub/Sub emulator on {self.host} not ready in time:\n"
                           f"{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the emulator's combined stdout and stderr."""
        try:
            text = (self.workdir / "emulator.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def env(self) -> dict[str, str]:
        """The variables through which clients (and Beam's Pub/Sub IO) find this emulator."""
        return {"PUBSUB_EMULATOR_HOST": self.host, "PUBSUB_PROJECT_ID": self.project}

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the whole process group this emulator started (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        for client in self._clients.values():
            with contextlib.suppress(Exception):
                client.close() if hasattr(client, "close") else client.stop()
        self._clients.clear()
        pgid = self.process.pid  # start_new_session: the wrapper leads its own group
        _signal_group(pgid, signal.SIGTERM)
        if not _wait_group_gone(self.process, pgid, timeout_s):
            logger.warning("Pub/Sub emulator group %d ignored SIGTERM; killing it", pgid)
            _signal_group(pgid, signal.SIGKILL)
            _wait_group_gone(self.process, pgid, timeout_s)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> PubSubEmulator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Resource names -------------------------------------------------------------------------

    def topic_path(self, topic: str) -> str:
        """`projects/PROJECT/topics/TOPIC` (a full path is returned as is)."""
        return topic if topic.startswith("projects/") else f"projects/{self.project}/topics/{topic}"

    def subscription_path(self, subscription: str) -> str:
        """`projects/PROJECT/subscriptions/NAME` (a full path is returned as is)."""
        if subscription.startswith("projects/"):
            return subscription
        return f"projects/{self.project}/subscriptions/{subscription}"

    # Clients bound to this emulator, whatever the process environment says ------------------

    def publisher(self):
        """A `pubsub_v1.PublisherClient` on this emulator (cached; closed by `stop()`)."""
        return self._client("publisher")

    def subscriber(self):
        """A `pubsub_v1.SubscriberClient` on this emulator (cached; closed by `stop()`)."""
        return self._client("subscriber")

    def _client(self, kind: str):
        if kind not in self._clients:
            import grpc
            from google.cloud import pubsub_v1
            from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
            from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport

            channel = grpc.insecure_channel(self.host)
            if kind == "publisher":
                # One message per batch: publish() returns as soon as the emulator has it.
                transport = PublisherGrpcTransport(channel=channel, host=self.host)
                self._clients[kind] = pubsub_v1.PublisherClient(
                    transport=transport,
                    batch_settings=pubsub_v1.types.BatchSettings(max_messages=1))
            else:
                transport = SubscriberGrpcTransport(channel=channel, host=self.host)
                self._clients[kind] = pubsub_v1.SubscriberClient(transport=transport)
        return self._clients[kind]

    # Helpers ----------------------------------------------------------------------------------

    def create_topic(self, name: str) -> str:
        """Create a topic; returns its full path."""
        path = self.topic_path(name)
        self.publisher().create_topic(name=path, timeout=30)
        return path

    def create_subscription(self, topic: str, name: str, ack_deadline: int = 30) -> str:
        """Create a pull subscription on `topic`; returns its full path."""
        path = self.subscription_path(name)
        self.subscriber().create_subscription(
            request={"name": path, "topic": self.topic_path(topic),
                     "ack_deadline_seconds": ack_deadline},
            timeout=30)
        return path

    def publish(self, topic: str, data: bytes, **attributes: str) -> tuple[str, float]:
        """Publish one message; returns (message id, wall-clock `time.time()` when acknowledged)."""
        future = self.publisher().publish(self.topic_path(topic), data, **attributes)
        message_id = future.result(timeout=30)
        return message_id, time.time()

    def pull_all(self, subscription: str, max_wait_s: float,
                 expect: int | None = None) -> list[PulledMessage]:
        """Pull and ack until `expect` messages arrived or `max_wait_s` passed.

        Without `expect`, pulls for the whole `max_wait_s`. Redeliveries (same message id) are
        acked and dropped.
        """
        from google.api_core import exceptions

        path = self.subscription_path(subscription)
        client = self.subscriber()
        deadline = time.monotonic() + max_wait_s
        seen: dict[str, PulledMessage] = {}
        while (expect is None or len(seen) < expect) and time.monotonic() < deadline:
            wait = max(0.1, min(5.0, deadline - time.monotonic()))
            try:
                response = client.pull(subscription=path, max_messages=100, timeout=wait)
            except (exceptions.DeadlineExceeded, exceptions.RetryError):
                continue
            for received in response.received_messages:
                message = received.message
                seen.setdefault(message.message_id, PulledMessage(
                    data=message.data, attributes=dict(message.attributes),
                    message_id=message.message_id, publish_time=message.publish_time))
            if response.received_messages:
                client.acknowledge(subscription=path, timeout=30,
                                   ack_ids=[r.ack_id for r in response.received_messages])
        return list(seen.values())


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _wait_group_gone(process: subprocess.Popen, pgid: int, timeout_s: float) -> bool:
    """Reap the wrapper, then wait until no process of its group is left."""
    deadline = time.monotonic() + timeout_s
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=timeout_s)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.05)
    return False


class StreamingRun:
    """A streaming pipeline started by `run_streaming`: poll with `wait_for`, then `cancel`."""

    def __init__(self, result: Any, started: float,
                 wake: Callable[[], object] | None = None) -> None:
        self.result = result
        self.started = started
        self.wake = wake
        self.error: BaseException | None = None
        self.cancel_seconds: float | None = None
        self._waiter = threading.Thread(target=self._watch, name="streaming-run-watch",
                                        daemon=True)
        self._waiter.start()

    def _watch(self) -> None:
        # wait_until_finish raises once a task failed and the source's pending pull ended (up to
        # 30 s later on an idle subscription); a healthy run never returns.
        try:
            self.result.wait_until_finish()
        except BaseException as error:  # noqa: BLE001 - reported through wait_for
            self.error = error

    def wait_for(self, condition: Callable[[], bool], timeout_s: float,
                 poll_s: float = 0.25) -> None:
        """Poll `condition` until it holds.

        Raises:
            RuntimeError: the pipeline failed (its exception is chained). This surfaces only
                when the source's pending pull ends, up to 30 s after the failure.
            TimeoutError: `condition` did not hold within `timeout_s`.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            if self.error is not None:
                raise RuntimeError(f"streaming pipeline failed: {self.error!r}") from self.error
            if condition():
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"condition not met in {timeout_s:.0f} s "
                                   f"(pipeline state {self.result.state})")
            time.sleep(poll_s)

    def cancel(self, timeout_s: float = 60.0, wake: Callable[[], object] | None = None) -> float:
        """Cancel (idempotent, bounded); returns the seconds it took.

        Args:
            timeout_s: give up waiting after this long (the runner's threads are daemons).
            wake: called every second while the cancel waits, for instance publishing to the
                input topic, so that the source's blocking pull returns early; defaults to the
                one given to `run_streaming`.
        """
        if self.cancel_seconds is not None:
            return self.cancel_seconds
        wake = wake or self.wake
        began = time.monotonic()
        canceller = threading.Thread(target=self._cancel_quietly, name="streaming-run-cancel",
                                     daemon=True)
        canceller.start()
        while canceller.is_alive() and time.monotonic() - began < timeout_s:
            if wake is not None:
                try:
                    wake()
                except Exception:  # noqa: BLE001 - the cancel goes on, only slower
                    logger.warning("wake() failed; cancel waits for the pull", exc_info=True)
                    wake = None
            canceller.join(timeout=1.0)
        self.cancel_seconds = time.monotonic() - began
        if canceller.is_alive():
            logger.warning("streaming pipeline still cancelling after %.0f s", timeout_s)
        return self.cancel_seconds

    def _cancel_quietly(self) -> None:
        try:
            self.result.cancel()
        except Exception:  # noqa: BLE001 - a failed pipeline may refuse to cancel
            logger.warning("cancelling the streaming pipeline failed", exc_info=True)

    def __enter__(self) -> StreamingRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


def run_streaming(pipeline: Any, start_timeout_s: float = 60.0,
                  wake: Callable[[], object] | None = None) -> StreamingRun:
    """Start a streaming pipeline without blocking; returns a handle to poll and cancel.

    `pipeline.run()` runs in a daemon thread (the DirectRunner returns once the graph is
    started) and is awaited for at most `start_timeout_s`. `wake` is the default for
    `StreamingRun.cancel` (also used on leaving a `with` block), e.g.
    `lambda: emulator.publish(input_topic, b"wake")`.
    """
    began = time.monotonic()
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = pipeline.run()
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = error

    starter = threading.Thread(target=run, name="streaming-run-start", daemon=True)
    starter.start()
    starter.join(timeout=start_timeout_s)
    if "error" in box:
        raise box["error"]
    if "result" not in box:
        raise TimeoutError(f"pipeline.run() did not return in {start_timeout_s:.0f} s")
    return StreamingRun(box["result"], began, wake)
