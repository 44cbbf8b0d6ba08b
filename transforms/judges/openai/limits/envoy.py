"""A job-wide rate limit: every worker process asks one Envoy rate-limit service.

Beam's own :class:`apache_beam.io.components.rate_limiter.EnvoyRateLimiter` speaks the protocol
(``envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit``, Beam ships the protos): a call
is admitted once the service has counted one request in the ``requests`` budget and its
estimated tokens in the ``tokens`` budget of the domain (default ``rt4chart``), so that the
sum over all workers holds ``--rpm``/``--tpm`` however many workers Dataflow starts. The service
holds the numbers (``infra/ratelimit/``); the process also keeps a local bucket at the job's
totals, which smooths a process's bursts and can never exceed what the job may spend.

Beam's limiter blocks (gRPC, then sleeps until the service's window resets), so it runs on a
thread pool of the limiter's own; the time it sleeps is reported as throttled
(on the limiter's `ThrottleClock`). A service that cannot be reached fails the call as a judge error
(after Beam's own retries), never the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from dataclasses import dataclass

import grpc
from apache_beam.io.components.rate_limiter import EnvoyRateLimiter

from rt4chart.transforms.judges.base import JudgeError
from rt4chart.transforms.judges.limits.throttling import ThrottleClock
from rt4chart.transforms.judges.openai.limits.rate import RateLimiter

DEFAULT_DOMAIN = "rt4chart"
# The descriptor key of the two budgets; the service's config names the same (infra/ratelimit).
BUDGET_KEY = "budget"
BUDGETS = ("requests", "tokens")


class RateLimitServiceError(JudgeError):
    """The rate-limit service could not be asked (after Beam's retries)."""


@dataclass(frozen=True)
class EnvoySettings:
    """Where the rate-limit service is and how long one question to it may take."""

    address: str
    domain: str = DEFAULT_DOMAIN
    timeout_s: float = 5.0

    def __post_init__(self) -> None:
        host, sep, port = self.address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"rate-limit service address must be HOST:PORT, got "
                             f"{self.address!r}")
        if not self.domain:
            raise ValueError("rate-limit domain must not be empty")


def beam_limiter(settings: EnvoySettings, budget: str, clock: ThrottleClock) -> EnvoyRateLimiter:
    """Beam's Envoy limiter for one budget, its throttled time sent to `clock` (the judge's
    limiter's; its own signaler would record on a thread where Beam keeps no metrics)."""
    limiter = EnvoyRateLimiter(settings.address, settings.domain, [{BUDGET_KEY: budget}],
                               timeout=settings.timeout_s, block_until_allowed=True,
                               namespace="rt4chart")
    limiter.throttling_signaler = clock
    return limiter


def admit(limiter: EnvoyRateLimiter, hits: int) -> None:
    """Block until the service admits `hits` in the limiter's budget."""
    try:
        limiter.allow(hits_added=max(1, int(hits)))
    except grpc.RpcError as exc:
        raise RateLimitServiceError(
            f"rate-limit service {limiter.service_address} unavailable: "
            f"{exc.code() if hasattr(exc, 'code') else exc}") from None


class EnvoyLimiter(RateLimiter):
    """The judge's limiter (same `acquire`/`pause`) with a job-wide budget: the local buckets
    and pause of :class:`RateLimiter` at the job's totals, then the Envoy service's admission
    of one request and of the estimated tokens (capped at `tpm`: a bigger call would never be
    admitted)."""

    def __init__(self, rpm: float, tpm: float, settings: EnvoySettings, threads: int = 32,
                 clock: ThrottleClock | None = None):
        super().__init__(rpm, tpm, clock=clock)
        self.settings = settings
        self._envoy_requests = beam_limiter(settings, "requests", self.throttled)
        self._envoy_tokens = beam_limiter(settings, "tokens", self.throttled)
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, threads), thread_name_prefix="rt4chart-ratelimit")

    async def _admit(self, estimated_tokens: int) -> None:
        # Beam's limiter reports its own sleeps (to self.throttled), so this wait is not timed.
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._pool, admit, self._envoy_requests, 1)
        tokens = min(max(1, estimated_tokens), int(self.tpm))
        await loop.run_in_executor(self._pool, admit, self._envoy_tokens, tokens)
