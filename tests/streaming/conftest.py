"""Fixtures for streaming tests against the gcloud Pub/Sub emulator.

One emulator serves the whole session (start-up is 1-2.5 s); each test gets its own uniquely
named topics and subscriptions, so tests never see each other's messages.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from pubsub_emulator import PubSubEmulator


@dataclass(frozen=True)
class Topics:
    """Full resource paths of one test's topics and subscriptions."""

    traces: str
    traces_sub: str
    dead_letters: str
    dead_letters_sub: str
    alerts: str
    alerts_sub: str


@pytest.fixture(scope="session")
def pubsub() -> Iterator[PubSubEmulator]:
    """The session's Pub/Sub emulator, with `PUBSUB_EMULATOR_HOST` set while it runs.

    Beam's ReadFromPubSub/WriteToPubSub find the emulator only through the environment, so the
    variables are set for the session and restored afterwards.
    """
    if shutil.which("gcloud") is None or shutil.which("java") is None:
        pytest.fail("the Pub/Sub emulator needs gcloud (with the pubsub-emulator component) and "
                    "java on PATH; see README, Development")
    with PubSubEmulator.start() as emulator, pytest.MonkeyPatch.context() as patch:
        for name, value in emulator.env().items():
            patch.setenv(name, value)
        assert os.environ["PUBSUB_EMULATOR_HOST"] == emulator.host
        yield emulator


@pytest.fixture
def topics(pubsub: PubSubEmulator) -> Topics:
    """Fresh topics (traces, dead letters, alerts), each with one pull subscription."""
    suffix = uuid.uuid4().hex[:12]
    paths: dict[str, str] = {}
    for base in ("traces", "dead-letters", "alerts"):
        topic = pubsub.create_topic(f"{base}-{suffix}")
        paths[base.replace("-", "_")] = topic
        paths[base.replace("-", "_") + "_sub"] = pubsub.create_subscription(
            topic, f"{base}-sub-{suffix}")
    return Topics(**paths)
