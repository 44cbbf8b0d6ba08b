"""Cache-aware scheduling: calls that share a long prompt prefix wait for the first one.

A provider caches a prompt's prefix (OpenAI: 1,024 tokens and more, in blocks of 128) once it
has processed the prompt, so a call whose prefix is cached pays half price for those tokens. The
calls of one trace share long prefixes: every claim is checked against the same window (local
verification) and the same full context (global verification). Sent all at once, as a fan-out
sends them, none finds the prefix cached.

:class:`PrefixGate` lets the first call of a prefix (the leader) go and holds the others
(followers) until it has answered, or until `timeout_s` after it was sent, then releases them
together. A prefix answered in the last `ttl_s` seconds lets calls through at once. Calls with a
prefix shorter than the provider caches are never held. The gate only changes when a call is
sent, never what it sends: verdicts are the same with and without it.

The leader marks when it is actually sent (:func:`mark_sent`, after the judge's rate limiter):
time the leader spends queued behind the rate budget does not count against the followers'
timeout. Time a follower is held is queue time for the call's deadline (`base.queued`).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from rt4chart.transforms.judges.base import queued
from rt4chart.transforms.judges.option_values import judge_option

CACHE_MIN_TOKENS = 1024  # the shortest prefix OpenAI caches
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class GateConfig:
    """Judge options `prefix_gate`, `prefix_gate_timeout_s`, `prefix_gate_ttl_s`,
    `prefix_gate_min_tokens`."""

    enabled: bool = field(default=True, metadata=judge_option("prefix_gate"))
    # after the leader was sent, followers go anyway
    timeout_s: float = field(default=10.0, metadata=judge_option("prefix_gate_timeout_s"))
    # how long a prefix counts as cached after its leader answered
    ttl_s: float = field(default=300.0, metadata=judge_option("prefix_gate_ttl_s"))
    min_tokens: int = field(default=CACHE_MIN_TOKENS,
                            metadata=judge_option("prefix_gate_min_tokens"))

    def __post_init__(self) -> None:
        if self.timeout_s < 0 or self.ttl_s < 0 or self.min_tokens < 0:
            raise ValueError("prefix_gate_timeout_s, _ttl_s and _min_tokens must be >= 0")


class _Prefix:
    def __init__(self) -> None:
        self.sent = asyncio.Event()
        self.done = asyncio.Event()
        self.answered_at: float | None = None


_LEADING: contextvars.ContextVar[_Prefix | None] = contextvars.ContextVar(
    "rt4chart_prefix_leader", default=None)


def mark_sent() -> None:
    """Called when a call is sent to the provider: if it leads a prefix, its followers' timeout
    starts now. A no-op for any other call."""
    leading = _LEADING.get()
    if leading is not None:
        leading.sent.set()


def prefix_of(system: str, user: str, shared: str | None) -> tuple[str | None, int]:
    """The prompt prefix that ends with the shared text (the system message, then the user
    message up to the end of `shared`): its hash and its estimated tokens. (None, 0) when the
    call shares nothing."""
    if not shared:
        return None, 0
    at = user.find(shared)
    if at < 0:
        return None, 0
    head = user[: at + len(shared)]
    digest = hashlib.sha256(f"{len(system)}:{system}{head}".encode()).hexdigest()[:32]
    return digest, (len(system) + len(head)) // CHARS_PER_TOKEN


class PrefixGate:
    """Holds the followers of a prefix until its leader has answered (one event loop)."""

    def __init__(self, config: GateConfig | None = None):
        self.config = config or GateConfig()
        self._prefixes: dict[str, _Prefix] = {}
        self.leaders = self.held = self.timeouts = self.passed = 0
        self._sweep_at = 0.0

    @contextlib.asynccontextmanager
    async def turn(self, key: str | None, prefix_tokens: int) -> AsyncIterator[None]:
        """Around one call (outside the judge's concurrency limit): lead the prefix, wait for
        its leader, or pass."""
        cfg = self.config
        if not cfg.enabled or key is None or prefix_tokens < cfg.min_tokens:
            yield
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        self._sweep(now)
        prefix = self._prefixes.get(key)
        if prefix is None or (prefix.answered_at is not None
                              and now - prefix.answered_at > cfg.ttl_s):
            async with self._lead(key, loop):
                yield
            return
        if not prefix.done.is_set():
            await self._follow(prefix)
        else:
            self.passed += 1
        yield

    @contextlib.asynccontextmanager
    async def _lead(self, key: str, loop: asyncio.AbstractEventLoop) -> AsyncIterator[None]:
        prefix = self._prefixes[key] = _Prefix()
        self.leaders += 1
        token = _LEADING.set(prefix)
        try:
            yield
        finally:
            _LEADING.reset(token)
            prefix.answered_at = loop.time()
            prefix.sent.set()
            prefix.done.set()

    async def _follow(self, prefix: _Prefix) -> None:
        self.held += 1
        with queued():  # held by the gate is not the call hanging
            await prefix.sent.wait()
            try:
                await asyncio.wait_for(prefix.done.wait(), self.config.timeout_s)
            except TimeoutError:
                self.timeouts += 1

    def _sweep(self, now: float) -> None:
        """Forget prefixes answered more than ttl_s ago (at most once a minute)."""
        if now < self._sweep_at:
            return
        self._sweep_at = now + 60.0
        ttl = self.config.ttl_s
        self._prefixes = {k: p for k, p in self._prefixes.items()
                          if p.answered_at is None or now - p.answered_at <= ttl}

    def figures(self) -> dict[str, int]:
        return {"leaders": self.leaders, "held": self.held, "timeouts": self.timeouts,
                "passed_warm": self.passed}
