"""The openai judge's calls in flight: a limit that backs off when the endpoint is busy.

A server that is slow because it is busy (a local model server sharing its cores with other
work) answers later the more calls it is given at once. A call that times out there is not a
sign that the endpoint is down: it is a sign to send fewer calls. So the limit is additive
increase, multiplicative decrease (as TCP's congestion window): a timeout halves it (never
below 1; once for the calls that were in flight together, not once per call), and every
`limit` calls answered in a row raise it by one, up to `--max-concurrency`, unless the endpoint
is slowing down (see endpoint_speed.EndpointSpeed.slowing).

One instance per judge (one event loop: no locking).
"""

from __future__ import annotations

import asyncio
import collections
import logging

logger = logging.getLogger(__name__)


class AdaptiveLimit:
    """Like ``asyncio.Semaphore(maximum)``, with a limit that moves (see the module docstring).

    `acquire` returns the generation the call started in; pass it to `backoff`."""

    def __init__(self, maximum: int):
        if maximum < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {maximum}")
        self.maximum = self.limit = maximum
        self.in_flight = 0
        self.generation = 0  # bumped by every decrease
        self.backoffs = 0
        self._answered = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def acquire(self) -> int:
        while self.in_flight >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake()  # it was woken: pass the turn on
                raise
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
        self.in_flight += 1
        return self.generation

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1

    def answered(self, slowing: bool = False) -> None:
        """A call got its reply: one step towards a larger limit (none while slowing)."""
        if slowing or self.limit >= self.maximum:
            self._answered = 0
            return
        self._answered += 1
        if self._answered >= self.limit:
            self._answered = 0
            self.limit += 1
            self._wake()

    def backoff(self, started_in: int) -> bool:
        """A call that started in generation `started_in` timed out at a busy endpoint: halve
        the limit, once per generation. Whether it was halved."""
        self._answered = 0
        if started_in != self.generation or self.limit <= 1:
            return False
        self.generation += 1
        self.backoffs += 1
        before, self.limit = self.limit, max(1, self.limit // 2)
        logger.warning("the judge endpoint is busy (a reply timed out): calls at once %d -> %d",
                       before, self.limit)
        return True
