"""The openai judge against the simulated provider (a local OpenAI-compatible server that sends
`x-ratelimit-*` headers and caches only prefixes it has answered): limits adopted from the
headers, and calls sharing a long prefix sent after its first one has answered."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from sim_provider import LatencyModel, SimProvider  # noqa: E402

from rt4chart.transforms.judges.openai.judge import OpenAIJudge  # noqa: E402
from rt4chart.transforms.judges.openai.limits.provider import (
    ProviderLimits,
    reported_limits,  # noqa: E402
)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-sim")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _one_call(options: dict[str, str]) -> OpenAIJudge:
    judge = OpenAIJudge(options)

    async def run() -> None:
        await judge.verify_local("Paris is in France.", "Paris is in France.", "Where?")

    asyncio.run(run())
    return judge


def test_limits_unset_are_adopted_from_the_provider(caplog):
    caplog.set_level(logging.INFO, logger="rt4chart.transforms.judges.openai.limits.provider")
    with SimProvider(rpm=3000, tpm=900_000, latency=LatencyModel.instant()) as sim:
        judge = _one_call({"base_url": sim.base_url})
        shared = _one_call({"base_url": sim.base_url, "rate_share": "2"})
        capped = _one_call({"base_url": sim.base_url, "rpm": "1200"})
        off = _one_call({"base_url": sim.base_url, "provider_limits": "false"})
    assert (judge._limiter.rpm, judge._limiter.tpm) == (3000, 900_000)
    assert (shared._limiter.rpm, shared._limiter.tpm) == (1500, 450_000)  # its share
    assert (capped._limiter.rpm, capped._limiter.tpm) == (1200, 900_000)  # never above a flag
    assert (off._limiter.rpm, off._limiter.tpm) == (500, 200_000)  # the conservative start
    logged = [r.getMessage() for r in caplog.records]
    assert any("500 requests/min (conservative start)" in m for m in logged)
    assert any("3000 requests/min (the provider), 900000 tokens/min (the provider)" in m
               for m in logged)
    assert any("1200 requests/min (--rpm), 900000 tokens/min (the provider)" in m
               for m in logged)


def test_a_lower_provider_limit_wins_over_a_flag():
    limits = ProviderLimits({"rpm": 5000, "tpm": 1e6}, {"rpm": 5000, "tpm": None})
    assert limits.observe({"x-ratelimit-limit-requests": "500",
                           "x-ratelimit-limit-tokens": "200000"})
    assert limits.per_process() == (500, 200_000) and limits.source["rpm"] == "the provider"
    assert not limits.observe({"x-ratelimit-limit-requests": "500"})  # nothing new
    assert reported_limits({"x-ratelimit-limit-requests": "n/a",
                            "x-ratelimit-limit-tokens": "0"}) == {}


def test_calls_sharing_a_long_prefix_wait_for_the_first_and_hit_the_cache():
    window = " ".join(f"Line {i} says item {i} costs {i * 3} dollars." for i in range(500))
    claims = [f"Item {i} costs {i * 3} dollars." for i in range(6)]

    async def run(judge: OpenAIJudge) -> list:
        return await asyncio.gather(*(judge.verify_local(c, window, "Costs?") for c in claims))

    verdicts = {}
    for gate in ("true", "false"):
        latency = LatencyModel(0.3, 0.5)
        with SimProvider(rpm=1e6, tpm=1e9, latency=latency) as sim:
            judge = OpenAIJudge({"base_url": sim.base_url, "prefix_gate": gate,
                                 "rpm": "1e6", "tpm": "1e9"})
            verdicts[gate] = asyncio.run(run(judge))
            stats = sim.stats(timeline=True)
        cached = [row[4] for row in sorted(stats["timeline"], key=lambda r: r[0])]
        if gate == "true":
            assert cached[0] == 0 and all(c >= 1024 for c in cached[1:])
            assert judge.throughput.gate.figures()["held"] == len(claims) - 1
        else:
            assert cached == [0] * len(claims)  # all sent before the first was answered
    assert verdicts["true"] == verdicts["false"]
