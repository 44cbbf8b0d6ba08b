"""Client-side rate limiting shared by all calls of one worker process.

Requests/min and tokens/min are metered with two leaky buckets (aiolimiter) before a request is
sent, with tokens estimated from the prompt. When the provider answers 429, or reports that a
budget is exhausted in its ``x-ratelimit-*`` headers, every call of the worker pauses until the
provider says the budget is back.

The time calls are held back is counted on the worker's throttling clock
(:mod:`.throttling`, owned by the judge runtime), which the judge stages report to Beam, so
that Dataflow's autoscaler does not add workers to a job that only waits for its rate budget.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import logging
import math
import re
import time
from collections.abc import Mapping

from aiolimiter import AsyncLimiter

from rt4chart.transforms.judges.limits.throttling import ThrottleClock

logger = logging.getLogger(__name__)

# A Go-style duration as OpenAI sends in x-ratelimit-reset-*: "6m0s", "1s", "20ms", "1h2m3.5s".
_DURATION_PART = r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)"
_DURATION_RE = re.compile(_DURATION_PART)
_WHOLE_DURATION_RE = re.compile(rf"(?:{_DURATION_PART})+")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# A bare number this large in an x-ratelimit-reset header is a Unix time (some servers send
# the moment the budget is back, as GitHub's API does), not a delay: 10^9 s is 2001-09-09, and
# no provider asks for a 31-year wait.
EPOCH_FLOOR_S = 1e9


def _number(value: str) -> float | None:
    """A finite, non-negative number, or None (garbage, negative, nan, inf)."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def parse_duration(value: str | None, now: float | None = None) -> float | None:
    """Seconds in an ``x-ratelimit-reset*`` value: a duration ("1s", "6m0s", "20ms",
    "1h2m3.5s"), seconds ("0.5"), or a Unix time (a number above EPOCH_FLOOR_S, read as the
    moment the budget is back: the seconds from `now` to then, 0 when past). None for anything
    else (garbage, a negative number)."""
    if not value or not value.strip():
        return None
    value = value.strip()
    number = _number(value)
    if number is not None:
        if number >= EPOCH_FLOOR_S:
            return max(0.0, number - (time.time() if now is None else now))
        return number
    if not _WHOLE_DURATION_RE.fullmatch(value):
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in _DURATION_RE.findall(value))


def http_date_in(value: str, now: float | None = None) -> float | None:
    """Seconds until an HTTP date (RFC 9110: IMF-fixdate, the obsolete RFC 850 and asctime
    forms, all in GMT), 0 when past, None when `value` is not a date."""
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:  # asctime has no zone: HTTP dates are always GMT
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return max(0.0, parsed.timestamp() - (time.time() if now is None else now))


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """How long the provider asks us to wait: ``retry-after-ms`` (milliseconds, fractions
    allowed), else ``retry-after`` as delay-seconds (fractions allowed) or an HTTP date. None
    when neither says anything usable (absent, negative, garbage). The value is as asked:
    callers cap it (:class:`PauseCap`)."""
    ms = _number(headers.get("retry-after-ms") or "")
    if ms is not None:
        return ms / 1000.0
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    seconds = _number(value)
    return seconds if seconds is not None else http_date_in(value, now)


class PauseCap:
    """The longest a provider may make a worker pause (the judge's `backoff_max_s`): a larger
    ask (10^9 s, a date years ahead) is cut to it, logged once with the asked and capped
    values, so that no reply can stall a run."""

    def __init__(self, cap_s: float):
        if not cap_s >= 0:
            raise ValueError(f"the pause cap must be 0 or more, got {cap_s}")
        self.cap_s = cap_s
        self.applied = 0
        self._logged = False

    def __call__(self, asked: float | None, source: str) -> float | None:
        if asked is None or asked <= self.cap_s:
            return asked
        self.applied += 1
        if not self._logged:
            self._logged = True
            logger.warning("the provider asked for a %.6g s pause (%s): capped at %g s "
                           "(backoff_max_s); further capped pauses are not logged",
                           asked, source, self.cap_s)
        return self.cap_s


# When a budget is used up, wait for this share of it to come back (OpenAI's reset-* is the time
# until the whole budget is back: waiting for all of it would idle the worker for up to a minute).
REFILL_SHARE = 0.02


def exhausted_for(headers: Mapping[str, str]) -> float | None:
    """If a response says a budget is used up (remaining 0), how long to pause: until a small
    share of it is back (`x-ratelimit-reset-*` is the time until all of it is). Servers that
    send one budget without a kind (`x-ratelimit-remaining`, `x-ratelimit-reset`, the latter
    often a Unix time) are read the same way. As asked: callers cap it (:class:`PauseCap`)."""
    waits = []
    for suffix in ("-requests", "-tokens", ""):
        remaining = _number(headers.get(f"x-ratelimit-remaining{suffix}") or "")
        if remaining == 0:
            reset = parse_duration(headers.get(f"x-ratelimit-reset{suffix}"))
            if reset is not None:
                waits.append(reset * REFILL_SHARE)
    return max(waits) if waits else None


# Providers enforce per-minute limits over shorter windows (60,000/min may be applied as
# 1,000/s): the buckets hold this many seconds of budget, so a burst cannot spend a whole
# minute's budget at once. They start full (no burst at start): a bucket that starts empty lets
# the first minute spend its rate plus the bucket, over a provider's 60 s sliding window.
BUCKET_SECONDS = 10.0


async def _fill(limiter: AsyncLimiter) -> None:
    """Fill a new (empty) leaky bucket to its capacity, now: calls then flow at the steady rate,
    without an initial burst. Through aiolimiter's public API: acquiring the whole capacity of
    an empty bucket takes no wait and leaves it full from this moment, as a level set by hand
    would (its private `_level`/`_last_check` are not ours to write)."""
    await limiter.acquire(limiter.max_rate)


class RateLimiter:
    """Requests/min and tokens/min budget plus a shared pause, for one event loop."""

    def __init__(self, rpm: float, tpm: float, bucket_s: float = BUCKET_SECONDS,
                 clock: ThrottleClock | None = None):
        if rpm <= 0 or tpm <= 0:
            raise ValueError(f"rate limits must be positive, got rpm={rpm}, tpm={tpm}")
        self.rpm, self.tpm = rpm, tpm
        self._requests = AsyncLimiter(max(1.0, rpm * bucket_s / 60.0), bucket_s)
        self._tokens = AsyncLimiter(max(1.0, tpm * bucket_s / 60.0), bucket_s)
        self._started = False
        self._token_capacity = self._tokens.max_rate
        self._pause_until = 0.0
        self.pauses = 0
        self.throttled = clock if clock is not None else ThrottleClock()  # time held here

    def pause(self, seconds: float) -> None:
        """Hold every call of this worker for `seconds` from now (the longest pause wins)."""
        if not math.isfinite(seconds):  # never a pause without end
            return
        until = time.monotonic() + max(0.0, seconds)
        if until > self._pause_until:
            self._pause_until = until
            self.pauses += 1

    def paused_for(self) -> float:
        """Seconds left of the current pause (0 when calls may go)."""
        return max(0.0, self._pause_until - time.monotonic())

    async def acquire(self, estimated_tokens: int) -> None:
        """Wait for the shared pause, then for a request slot and the estimated tokens; the
        time waited counts as throttled."""
        started = time.monotonic()
        try:
            await self._acquire(estimated_tokens)
        finally:
            self.throttled.add(time.monotonic() - started)
        await self._admit(estimated_tokens)

    async def _admit(self, estimated_tokens: int) -> None:
        """A further admission after the local budget, which reports its own held time (none
        here; a job-wide limiter asks its service)."""

    async def _acquire(self, estimated_tokens: int) -> None:
        if not self._started:
            self._started = True
            await _fill(self._requests)
            await _fill(self._tokens)
        while (delay := self._pause_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)
        await self._requests.acquire(1)
        # A call larger than the bucket waits for a full bucket rather than failing.
        await self._tokens.acquire(min(float(max(1, estimated_tokens)), self._token_capacity))
