"""The worker's throttling clock: seconds its judge calls were held back, whatever held them.

Beam's metrics are recorded per bundle-processing thread and the calls wait on the judge's
event loop thread: the held time is summed on a :class:`ThrottleClock`, one per worker process,
owned by the judge runtime (`runtime.py`). The runtime hands it to the judges it builds
(:func:`building_judges`, :func:`judge_clock`), whose limiters (any judge's: the OpenAI judge's
rate limiter, a job-wide Envoy limiter) add to it, and the judge stages report it from their
own thread (:func:`report_throttled`) through Beam's ``ThrottlingSignaler`` (the counter
``cumulativeThrottlingSeconds``), so that Dataflow's autoscaler does not add workers to a job
that only waits for its rate budget. Nothing here knows a provider: the runtime and the stages
depend on this, and so do the judges' limiters.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from apache_beam.io.components.adaptive_throttler import ThrottlingSignaler

# The namespace of the throttling counter (Dataflow reads `cumulativeThrottlingSeconds` in any).
THROTTLING_NAMESPACE = "rt4chart"


class ThrottleClock:
    """Seconds calls were held back by a rate limit, summed over calls (as Beam's limiters
    count them), handed out in whole seconds; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds = 0.0
        self.total = 0.0

    def add(self, seconds: float) -> None:
        if seconds > 0:
            with self._lock:
                self._seconds += seconds
                self.total += seconds

    def signal_throttled(self, seconds: int) -> None:
        """The `ThrottlingSignaler` interface, for limiters that report their own waits."""
        self.add(float(seconds))

    def take(self) -> int:
        """The whole seconds held since the last take (the fraction is kept for the next)."""
        with self._lock:
            whole = int(self._seconds)
            self._seconds -= whole
            return whole


# The clock of the judge runtime that is building a judge (set only while it builds one).
_BUILDING: contextvars.ContextVar[ThrottleClock | None] = contextvars.ContextVar(
    "rt4chart_throttle_clock", default=None)


@contextmanager
def building_judges(clock: ThrottleClock) -> Iterator[None]:
    """While inside, the judges built in this thread count their held time on `clock` (the
    judge runtime's: one per worker process, as the limiters are)."""
    token = _BUILDING.set(clock)
    try:
        yield
    finally:
        _BUILDING.reset(token)


def judge_clock() -> ThrottleClock:
    """The clock a judge being built counts its limiters' held time on: its runtime's, or a
    clock of its own when built outside a runtime (the launcher checking options)."""
    clock = _BUILDING.get()
    return clock if clock is not None else ThrottleClock()


def report_throttled(clock: ThrottleClock | None,
                     signaler: ThrottlingSignaler | None = None) -> int:
    """Report the time held on `clock` since the last report through Beam's
    ThrottlingSignaler. Call it from a bundle-processing thread (a DoFn method), where Beam
    records metrics."""
    seconds = clock.take() if clock is not None else 0
    if seconds:
        (signaler or ThrottlingSignaler(THROTTLING_NAMESPACE)).signal_throttled(seconds)
    return seconds

