from __future__ import annotations

import asyncio
import time

import pytest

from rt4chart.transforms.judges.base import metered, record_usage
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.judge import OpenAIConfig, OpenAIJudge
from rt4chart.transforms.judges.openai.limits.rate import (
    RateLimiter,
    exhausted_for,
    parse_duration,
    retry_after_seconds,
)
from rt4chart.transforms.judges.openai.pricing import Prices


@pytest.mark.parametrize("value,seconds", [
    ("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("0.5", 0.5), ("1h2m", 3720.0), ("", None),
    ("soon", None),
])
def test_parse_duration(value, seconds):
    assert parse_duration(value) == seconds


def test_retry_after_headers():
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({}) is None
    assert exhausted_for({"x-ratelimit-remaining-requests": "0",
                          "x-ratelimit-reset-requests": "1s",
                          "x-ratelimit-remaining-tokens": "0",
                          "x-ratelimit-reset-tokens": "3s"}) == pytest.approx(0.06)
    # reset-* is the time until the whole budget is back: wait for a small share of it.
    assert exhausted_for({"x-ratelimit-remaining-tokens": "0",
                          "x-ratelimit-reset-tokens": "60s"}) == pytest.approx(1.2)
    assert exhausted_for({"x-ratelimit-remaining-requests": "5",
                          "x-ratelimit-reset-requests": "1s"}) is None


def test_pause_holds_every_call():
    async def scenario():
        limiter = RateLimiter(rpm=6000, tpm=1_000_000)
        limiter.pause(0.2)
        started = time.monotonic()
        await asyncio.gather(*(limiter.acquire(10) for _ in range(5)))
        return time.monotonic() - started

    assert asyncio.run(scenario()) >= 0.19


def test_request_budget_is_enforced_from_the_first_second():
    async def scenario():
        limiter = RateLimiter(rpm=6000, tpm=10_000_000)  # 100 per second, no burst at start
        started = time.monotonic()
        for _ in range(50):
            await limiter.acquire(1)
        return time.monotonic() - started

    # No initial burst: a provider's 60 s sliding window never sees rate + bucket.
    assert asyncio.run(scenario()) >= 0.45


def test_token_budget_is_enforced():
    async def scenario():
        limiter = RateLimiter(rpm=1_000_000, tpm=60_000)  # 1000 tokens per second
        started = time.monotonic()
        for _ in range(3):
            await limiter.acquire(500)
        return time.monotonic() - started

    assert asyncio.run(scenario()) >= 1.4


def test_prices():
    p = Prices(0.15, 0.075, 0.60)
    assert p.cost(1_000_000, 0, 0) == pytest.approx(0.15)
    assert p.cost(1_000_000, 1_000_000, 1_000_000) == pytest.approx(0.675)


def test_openai_options_are_validated(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert OpenAIConfig.from_options({"rpm": "60", "model": "m"}).rpm == 60.0
    with pytest.raises(ValueError, match="unknown openai judge option"):
        OpenAIConfig.from_options({"rmp": "60"})
    with pytest.raises(ValueError, match="rpm"):
        OpenAIConfig.from_options({"rpm": "fast"})
    judge = OpenAIJudge({"model": "local-model"})
    assert judge.prices is None  # unknown model, no prices given: cost unknown, not free
    free = OpenAIJudge({"model": "local-model", "price_input": "0", "price_output": "0"})
    assert free.prices == Prices(0.0, 0.0, 0.0)  # a local model said to be free
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIJudge({})


def test_judge_spec_errors():
    with pytest.raises(ValueError, match="cannot be imported"):
        JudgeSpec.of("no_such_module:factory").build()
    with pytest.raises(ValueError, match="expected"):
        JudgeSpec.of("no_colon").build()
    with pytest.raises(ValueError, match="lacks"):
        JudgeSpec.of("builtins:dict").build()


def test_metered_attributes_usage_to_the_call():
    async def call(n):
        await asyncio.sleep(0.01 * n)
        record_usage(n, 0, 1, 0.5)
        return n

    async def scenario():
        return await asyncio.gather(*(metered(lambda n=n: call(n)) for n in (1, 2, 3)))

    results = asyncio.run(scenario())
    assert [(r, u.input_tokens, u.calls) for r, u in results] == [(1, 1, 1), (2, 2, 1), (3, 3, 1)]


def test_local_worker_processes_share_the_rate_limits():
    from apache_beam.options.pipeline_options import PipelineOptions

    from rt4chart.pipeline.run.jobs import share_limits
    from rt4chart.transforms.judges.contract import JudgeSpec
    from rt4chart.transforms.judges.openai.judge import OpenAIConfig

    spec = JudgeSpec.of("openai", {"rpm": "600"})
    multi = PipelineOptions(["--direct_num_workers", "3", "--direct_running_mode",
                             "multi_processing"])
    shared = share_limits(spec, multi)
    assert dict(shared.options)["rate_share"] == "3"
    assert OpenAIConfig.from_options(dict(shared.options)).rate_share == 3
    # Threads of one process share one limiter already; an explicit share is kept.
    assert share_limits(spec, PipelineOptions(["--direct_num_workers", "3"])) == spec
    explicit = JudgeSpec.of("openai", {"rate_share": "8"})
    assert share_limits(explicit, multi) == explicit
    assert share_limits(JudgeSpec.of("offline"), multi) == JudgeSpec.of("offline")


def test_judge_stages_of_a_process_share_one_judge_and_one_loop_until_released():
    import gc
    import pickle

    from apache_beam.utils.shared import Shared

    from rt4chart.transforms.decompose import _DecomposeFn
    from rt4chart.transforms.verify_global import _GlobalFn

    spec = JudgeSpec.of("fake_judges:keyword")
    # As on a worker: each stage's DoFn unpickled on its own, then set up.
    fns = [pickle.loads(pickle.dumps(fn)) for fn in (_DecomposeFn(spec), _GlobalFn(spec))]
    for fn in fns:
        fn.setup()
    first, second = fns
    assert first._runtime is second._runtime and first._judge is second._judge

    async def running_loop():
        return asyncio.get_running_loop()

    loops = {fn._runtime.submit(running_loop()).result(timeout=30) for fn in fns}
    assert len(loops) == 1
    thread = first._runtime.thread
    for fn in fns:
        fn.teardown()

    class Other:
        pass

    Shared().acquire(Other)  # Beam keeps the last acquired object alive: acquire another one
    gc.collect()
    thread.join(timeout=30)
    assert not thread.is_alive() and loops.pop().is_closed()
