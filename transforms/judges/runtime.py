"""One event loop and one judge instance per worker process, shared by every DoFn thread.

Beam may run several DoFn instances in threads of one process. They all submit their calls to a
single background event loop and a single judge per spec, so a judge's client, concurrency
limit and rate limiter are shared by the whole worker, as the provider's limits are.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from rt4chart.schemas.records import Usage
from rt4chart.transforms.judges.base import Judge, JudgeSpec

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()
_LOOP: asyncio.AbstractEventLoop | None = None
_JUDGES: dict[JudgeSpec, Judge] = {}


def _loop() -> asyncio.AbstractEventLoop:
    global _LOOP
    with _LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="rt4chart-judge-loop", daemon=True
            )
            thread.start()
            _LOOP = loop
        return _LOOP


def judge_for(spec: JudgeSpec) -> Judge:
    """The process's judge for a spec, built once."""
    with _LOCK:
        judge = _JUDGES.get(spec)
        if judge is None:
            judge = _JUDGES[spec] = spec.build()
        return judge


def submit(coro: Awaitable[Any]) -> concurrent.futures.Future:
    """Schedule a coroutine on the shared loop; the future resolves in the caller's thread."""
    return asyncio.run_coroutine_threadsafe(coro, _loop())


@dataclass
class _Progress:
    calls: int = 0
    errors: int = 0
    usage: Usage = Usage()
    traces: int = 0
    last_log: float = 0.0


_PROGRESS = _Progress()
PROGRESS_EVERY_S = 10.0


def note_calls(usage: Usage, errors: int = 0) -> None:
    """Count judge usage for the progress line."""
    with _LOCK:
        _PROGRESS.usage = _PROGRESS.usage + usage
        _PROGRESS.errors += errors
    _maybe_log()


def note_traces(n: int) -> None:
    """Count finished traces for the progress line."""
    with _LOCK:
        _PROGRESS.traces += n
    _maybe_log()


def _maybe_log() -> None:
    now = time.monotonic()
    with _LOCK:
        if now - _PROGRESS.last_log < PROGRESS_EVERY_S:
            return
        _PROGRESS.last_log = now
        p, u = _PROGRESS, _PROGRESS.usage
    logger.info(
        "progress: %d traces done, %d judge calls (%d failed), %d input / %d cached / %d output "
        "tokens, $%.4f",
        p.traces, u.calls, p.errors, u.input_tokens, u.cached_tokens, u.output_tokens, u.cost_usd,
    )
