"""How the openai judge retries a call (tenacity): which failures are retried, how long it
waits between attempts, and the checks of a reply that send it back (a cut-off reply, verdicts
numbered out of order)."""

from __future__ import annotations

import hashlib
import random

import openai
from tenacity import RetryCallState, wait_exponential_jitter

from rt4chart.transforms.judges.openai.faults import rejected_request
from rt4chart.transforms.judges.openai.limits.rate import PauseCap, retry_after_seconds
from rt4chart.transforms.judges.schema_check import (
    OUT_OF_BOUNDS_ATTEMPTS,
    OutOfBounds,
    SchemaMismatch,
)


class Truncated(SchemaMismatch):
    """The answer hit the output token budget: retried with twice the budget."""


def check_numbering(data: dict, n: int) -> None:
    """A multi-claim reply must give one verdict to each of claims 1..n, in order, as the
    prompt asks: verdicts numbered otherwise (2, 3, 1: rotated) cannot be told from verdicts in
    the wrong order, so which verdict is whose would be a guess (OutOfBounds)."""
    got = [v["claim"] for v in data["verdicts"]]
    if got != list(range(1, n + 1)):
        raise OutOfBounds(f"verdicts numbered {got[:12]}{'...' if len(got) > 12 else ''}, "
                          f"expected claims 1..{n} in order")


def cache_key_of(shared: str | None) -> str | None:
    """A short, stable name for a shared prompt prefix (no trace content leaves in clear)."""
    if not shared:
        return None
    return "rt4chart-" + hashlib.sha256(shared.encode("utf-8")).hexdigest()[:24]


def should_retry(state: RetryCallState) -> bool:
    """Tenacity's retry test: `retryable`, and a reply beyond the schema's bounds retried
    only until OUT_OF_BOUNDS_ATTEMPTS."""
    exc = state.outcome.exception() if state.outcome else None
    if exc is None:
        return False
    if isinstance(exc, OutOfBounds) and state.attempt_number >= OUT_OF_BOUNDS_ATTEMPTS:
        return False
    return retryable(exc)


def retryable(exc: BaseException) -> bool:
    if isinstance(exc, SchemaMismatch | openai.APITimeoutError | openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        if rejected_request(exc) is not None:  # the same request would fail the same way
            return False
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


class Backoff:
    """Tenacity wait: the provider's Retry-After on 429 (capped, see PauseCap), else
    exponential backoff with jitter, never above `maximum`."""

    def __init__(self, initial: float, maximum: float, cap: PauseCap | None = None):
        self._exp = wait_exponential_jitter(initial=initial, max=maximum)
        self._max = maximum
        self._cap = cap or PauseCap(maximum)

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, openai.APIStatusError) and exc.status_code == 429:
            asked = self._cap(retry_after_seconds(exc.response.headers), "retry-after")
            if asked is not None:
                return min(self._max, asked + random.uniform(0, 0.05 + asked * 0.1))
        return self._exp(state)
