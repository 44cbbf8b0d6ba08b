"""A circuit breaker for a judge endpoint: fail fast while it is down, probe until it is back.

When every call to the endpoint has failed for `after_s` seconds (no success in between), the
breaker opens: further calls are refused at once with the reason (their answers are
`incomplete`, for a later ``--redo``) instead of each retrying for minutes. Every `probe_s`
seconds one call is let through as a probe (half-open) and the calls that come meanwhile wait
for its outcome: its success closes the breaker and lets them through, its failure keeps the
breaker open (they are refused) until the next probe.

One breaker serves one judge on one event loop (all of a worker's calls), so it needs no lock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from rt4chart.transforms.judges.base import JudgeError, queued

logger = logging.getLogger(__name__)


class BreakerOpen(JudgeError):
    """A call refused because the endpoint has been failing every call (not retried)."""


class CircuitBreaker:
    """Closed -> open after `after_s` of failures only -> half-open every `probe_s` -> closed.

    Args:
        after_s: seconds of failing calls (and no success) before the breaker opens; 0: never.
        probe_s: seconds between probes while open.
        clock: monotonic seconds (injectable for tests).
    """

    def __init__(self, after_s: float, probe_s: float,
                 clock: Callable[[], float] = time.monotonic):
        if after_s < 0 or probe_s <= 0:
            raise ValueError(f"breaker_after_s must be >= 0 and breaker_probe_s > 0, got "
                             f"{after_s:g} and {probe_s:g}")
        self.after_s = after_s
        self.probe_s = probe_s
        self._clock = clock
        self._failing_since: float | None = None
        self._opened_at: float | None = None
        self._next_probe = 0.0
        self._probe: asyncio.Future[None] | None = None  # the probe in flight, if any
        self._last_failure = ""
        self.refused = 0  # calls refused while open

    @property
    def is_open(self) -> bool:
        return self._opened_at is not None

    async def admit(self) -> bool:
        """Let a call through, or raise BreakerOpen. True when the call is the probe (it must
        end with `success`, `failure` or `release`)."""
        while self.is_open:
            if self._probe is not None:
                with queued():  # the probe's outcome decides
                    await asyncio.shield(self._probe)
                continue
            now = self._clock()
            if now < self._next_probe:
                self.refused += 1
                raise BreakerOpen(self.reason(now))
            self._probe = asyncio.get_running_loop().create_future()
            return True
        return False

    def reason(self, now: float | None = None) -> str:
        now = self._clock() if now is None else now
        since = self._failing_since if self._failing_since is not None else now
        return (f"judge endpoint down: every call failed for {_seconds(now - since)} (last: "
                f"{self._last_failure}); call not attempted (circuit breaker open, "
                f"breaker_after_s={self.after_s:g}); audit it later with --redo")

    def success(self) -> None:
        """A call got a reply (closes the breaker, and lets the calls waiting on a probe go)."""
        if self.is_open:
            logger.info("judge endpoint answers again: circuit breaker closed")
        self._failing_since = self._opened_at = None
        self._end_probe()

    def failure(self, what: str, probe: bool = False) -> None:
        """A call failed because of the endpoint (connection, timeout, HTTP error, a reply
        that is not a chat completion); `what` says how (redacted: it goes into reasons),
        `probe` whether it was the probe."""
        now = self._clock()
        self._last_failure = what[:100]
        if self._failing_since is None:
            self._failing_since = now
        if self.is_open:
            if probe:
                self._next_probe = now + self.probe_s
        elif self.after_s and now - self._failing_since >= self.after_s:
            self._opened_at = now
            self._next_probe = now + self.probe_s
            logger.warning("judge endpoint failed every call for %s: circuit breaker open, "
                           "calls fail fast (their answers are incomplete, to --redo); probing "
                           "every %g s", _seconds(now - self._failing_since), self.probe_s)
        if probe:
            self._end_probe()

    def release(self, probe: bool) -> None:
        """A call ended with neither verdict on the endpoint (cancelled, a content error): if
        it was the probe, the next call may probe."""
        if probe:
            self._next_probe = self._clock()
            self._end_probe()

    def _end_probe(self) -> None:
        probe, self._probe = self._probe, None
        if probe is not None and not probe.done():
            probe.set_result(None)


def _seconds(value: float) -> str:
    return f"{value:.0f} s" if value >= 10 else f"{value:.1f} s"
