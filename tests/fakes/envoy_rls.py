"""A local Envoy rate-limit service for tests: gRPC on 127.0.0.1 (ephemeral port).

It answers `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` with Beam's copy of
the protos, as envoyproxy/ratelimit does: fixed windows of `window_s` seconds, one limit per
descriptor value (`{"budget": "requests"}` -> `limits["requests"]`), OVER_LIMIT with the time
until the window resets when a request's hits do not fit. Every admission is recorded.

`worker(...)` is what a test's worker process runs: a job-wide limiter asked `calls` times.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from concurrent import futures
from dataclasses import dataclass

import grpc
from apache_beam.io.components import rate_limit_pb2

METHOD = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
Response = rate_limit_pb2.RateLimitResponse


@dataclass(frozen=True)
class Admission:
    at: float
    window: int
    budget: str
    hits: int


class FakeRateLimitService:
    """Fixed-window counters per (domain, budget); a context manager that stops itself."""

    def __init__(self, limits: dict[str, int], window_s: float = 1.0, domain: str = "rt4chart"):
        self.limits, self.window_s, self.domain = limits, window_s, domain
        self.admitted: list[Admission] = []
        self.refused = 0
        self.requests = 0
        self._used: dict[tuple[int, str], int] = defaultdict(int)
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
        handler = grpc.unary_unary_rpc_method_handler(
            self._should_rate_limit,
            request_deserializer=rate_limit_pb2.RateLimitRequest.FromString,
            response_serializer=Response.SerializeToString)
        service, method = METHOD.strip("/").split("/")
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, {method: handler}),))
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> FakeRateLimitService:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)

    def _should_rate_limit(self, request, context) -> Response:
        now = time.monotonic() - self._t0
        window = int(now // self.window_s)
        hits = request.hits_addend or 1
        budgets = [e.value for d in request.descriptors for e in d.entries if e.key == "budget"]
        with self._lock:
            self.requests += 1
            if request.domain != self.domain:
                return Response(overall_code=Response.OK)  # no rule for the domain: allowed
            over = [b for b in budgets if self._used[(window, b)] + hits > self.limits[b]]
            if over:
                self.refused += 1
                status = Response.DescriptorStatus(code=Response.OVER_LIMIT)
                status.duration_until_reset.FromNanoseconds(
                    int(((window + 1) * self.window_s - now) * 1e9))
                return Response(overall_code=Response.OVER_LIMIT, statuses=[status])
            for budget in budgets:
                self._used[(window, budget)] += hits
                self.admitted.append(Admission(now, window, budget, hits))
        return Response(overall_code=Response.OK,
                        statuses=[Response.DescriptorStatus(code=Response.OK)])

    def per_window(self, budget: str) -> dict[int, int]:
        """Hits admitted per window in one budget."""
        counts: dict[int, int] = defaultdict(int)
        for a in self.admitted:
            if a.budget == budget:
                counts[a.window] += a.hits
        return dict(counts)


def worker(address: str, calls: int, tokens: int, results) -> None:
    """A worker process: `calls` admissions of `tokens` each through the judge's job-wide
    limiter, 4 at a time; puts (calls admitted, seconds reported as throttled) on `results`."""
    from rt4chart.transforms.judges.limits.throttling import ThrottleClock
    from rt4chart.transforms.judges.openai.limits.envoy import EnvoyLimiter, EnvoySettings

    throttled = ThrottleClock()  # the clock a judge's limiters share in its runtime

    async def run() -> int:
        limiter = EnvoyLimiter(1e9, 1e12, EnvoySettings(address), threads=4, clock=throttled)
        gate = asyncio.Semaphore(4)

        async def one() -> None:
            async with gate:
                await limiter.acquire(tokens)

        await asyncio.gather(*(one() for _ in range(calls)))
        return calls

    done = asyncio.run(run())
    results.put((done, throttled.total))
