"""One event loop and one judge per spec for each worker process, held through Beam's `Shared`.

Beam may run several DoFn instances in threads of one process. They all submit their calls to
a single background event loop and a single judge per spec, so a judge's client, concurrency
limit and rate limiter are shared by the whole worker, as the provider's limits are.

The loop and the judges live in a :class:`JudgeRuntime`, which a DoFn acquires in `setup()`
through a `apache_beam.utils.shared.Shared` handle (as Beam's RunInference holds its model).
Every judge stage of a pipeline holds the same handle (:func:`runtime_handle`, made once where
the pipeline is built and pickled with each DoFn), so on a worker they all acquire the same
runtime. The runtime also owns the process's progress tally (`transforms/common/tally.py`; every
stage's progress counters reach it through the same handle: Beam keeps only the last acquired
`Shared` object alive, so a second token would let the runtime go between bundles) and the
worker's throttling clock (`throttling.ThrottleClock`): the
judges it builds count their rate limits' held time on it, and the judge stages report it to
Beam. It holds the objects of a job that a worker's stages share (`held`: a job's spend
ledger, `spend_cap.py`), so that no module keeps a registry of them, and the keys its judges
read (`keys`: the variables their specs name and the keys they hold, e.g. one read from Secret
Manager), which the judge stages and the sinks of this process redact. The runtime lives while
a DoFn holds it (and Beam keeps the last acquired object alive); when it is collected, its loop
stops and its thread ends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from apache_beam.utils.shared import Shared

from rt4chart.transforms.common.redact import Redactor
from rt4chart.transforms.common.tally import LiveCounter, LiveTally
from rt4chart.transforms.judges.contract import Judge, JudgeSpec, close_judge, judge_keys
from rt4chart.transforms.judges.limits.throttling import ThrottleClock, building_judges

# How long a runtime that goes waits for its judges' connections to close.
CLOSE_TIMEOUT_S = 5.0

T = TypeVar("T")


class JudgeRuntime:
    """A worker process's event loop (on a daemon thread) and its judges, one per spec."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._judges: dict[JudgeSpec, Judge] = {}
        self.throttled = ThrottleClock()  # seconds this worker's calls were held back
        self.tally = LiveTally()  # the progress counters' tally of this process
        self._held: dict[str, Any] = {}  # a job's objects in this worker, see `held`
        self._held_lock = threading.Lock()
        self._keys = Redactor()  # its judges' keys, see `keys`
        self._loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=_run_loop, args=(self._loop,),
                                       name="rt4chart-judge-loop", daemon=True)
        self.thread.start()
        weakref.finalize(self, _stop_loop, self._loop, self._judges, self.thread)

    def judge(self, spec: JudgeSpec) -> Judge:
        """The judge for a spec, built once per runtime."""
        with self._lock:
            judge = self._judges.get(spec)
            if judge is None:
                with building_judges(self.throttled):
                    judge = self._judges[spec] = spec.build()
                self._keys = self._keys.joined(judge_keys(spec).with_values(*judge.held_keys()))
            return judge

    @property
    def keys(self) -> Redactor:
        """The keys of the judges built so far: the variables their specs name and the keys
        they hold (a key read from Secret Manager never leaves its judge's process)."""
        return self._keys

    def submit(self, coro: Awaitable[Any]) -> concurrent.futures.Future:
        """Schedule a coroutine on the loop; the future resolves in the caller's thread."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def held(self, key: str, build: Callable[[], T]) -> T:
        """The object of a job this worker keeps under `key` (e.g. a job's spend ledger, which
        every gate of the job in this process shares), built on first use; it lives as long
        as the runtime."""
        with self._held_lock:
            found = self._held.get(key)
            if found is None:
                found = self._held[key] = build()
            return found


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        loop.close()


def _stop_loop(loop: asyncio.AbstractEventLoop, judges: dict[JudgeSpec, Judge],
               thread: threading.Thread) -> None:
    # Called when the runtime is collected (or the process exits): the judges' connections
    # are closed in their loop (else the garbage collector closes them later in a closed
    # loop: "Task exception was never retrieved"), then the thread closes the loop and ends.
    if loop.is_closed():
        return
    if threading.current_thread() is thread:  # collected in the loop itself: cannot wait
        loop.stop()
        return
    closing = asyncio.run_coroutine_threadsafe(_close_all(list(judges.values())), loop)
    with contextlib.suppress(Exception):  # a loop already stopping: nothing left to close
        closing.result(timeout=CLOSE_TIMEOUT_S)
    loop.call_soon_threadsafe(loop.stop)


async def _close_all(judges: list[Judge]) -> None:
    for judge in judges:
        await close_judge(judge)


@functools.cache
def runtime_handle() -> Shared:
    """The `Shared` handle of the judge runtime: one per process that builds pipelines, so
    that every judge stage's DoFn carries the same key to the workers."""
    return Shared()


def acquire(handle: Shared) -> JudgeRuntime:
    """The worker's runtime behind `handle`, built on first use."""
    return handle.acquire(JudgeRuntime)


def process_tally(handle: Shared | None = None) -> LiveTally:
    """The tally of this process (its runtime's, behind `handle`: by default this process's)."""
    return acquire(handle if handle is not None else runtime_handle()).tally


def counter(namespace: str, name: str) -> LiveCounter:
    """Drop-in for `beam.metrics.Metrics.counter` for the counters progress is made of: it
    also counts in the tally of the process it runs in (see `transforms/common/tally.py`)."""
    return LiveCounter(namespace, name, functools.partial(process_tally, runtime_handle()))


def judge_for(spec: JudgeSpec) -> Judge:
    """The judge the stages of this process use for a spec (e.g. to inspect a fake after a
    local run)."""
    return acquire(runtime_handle()).judge(spec)
