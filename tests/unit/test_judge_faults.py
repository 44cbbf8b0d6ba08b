"""Every judge call ends: deadlines, BaseExceptions, the circuit breaker, without a pipeline."""

from __future__ import annotations

import asyncio

import pytest

from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.adapter import TypedJudge
from rt4chart.transforms.judges.base import (
    DEFAULT_CALL_DEADLINE_S,
    JudgeError,
    Verdict,
    call_deadline_of,
    metered,
    queued,
)
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.breaker import BreakerOpen, CircuitBreaker
from rt4chart.transforms.judges.openai.endpoint_speed import CALL_DEADLINE_MAX_S

import fake_judges as fj

CTX = "Tokyo is the capital of Japan."


def _faulty(fault: str, deadline: float | None = None, **options: str) -> fj.FaultyJudge:
    judge = fj.FaultyJudge({"fault": fault, "fail_on": "Kyoto", **options})
    if deadline is not None:
        judge.call_deadline_s = deadline
    return judge


def test_a_hanging_judge_fails_at_its_deadline():
    typed = TypedJudge(_faulty("hang", deadline=0.05))

    async def run():
        with pytest.raises(JudgeError, match=r"did not answer within 0\.05 s"):
            await typed.verify_local("Kyoto is the capital of Japan.", CTX, "q")
        return await typed.verify_local("Tokyo is the capital of Japan.", CTX, "q")

    assert asyncio.run(run()).label == "ENT"


def test_a_judge_that_swallows_the_cancellation_is_abandoned_not_awaited():
    judge = _faulty("stubborn", deadline=0.05, linger_s="0.3")

    async def run():
        with pytest.raises(JudgeError, match="did not answer"):
            await TypedJudge(judge).verify_local("Kyoto is big.", CTX, "q")
        failed_while_running = not judge.finished
        while not judge.finished:  # let it end before the loop closes
            await asyncio.sleep(0.05)
        return failed_while_running

    assert asyncio.run(run()) is True


@pytest.mark.parametrize("fault", sorted(fj.BASE_EXCEPTIONS))
def test_a_base_exception_from_a_judge_is_a_judge_error_naming_it(fault):
    typed = TypedJudge(_faulty(fault))

    async def run():
        with pytest.raises(JudgeError, match=f"the judge raised {fault}") as caught:
            await typed.verify_local("Kyoto is big.", CTX, "q")
        healthy = await typed.verify_local("Tokyo is the capital of Japan.", CTX, "q")
        return caught.value, healthy

    error, healthy = asyncio.run(run())  # the loop survived: asyncio.run returned
    assert "BaseException" in str(error) or fault == "CancelledError"
    assert healthy.label == "ENT"


def test_the_shared_loop_survives_a_keyboard_interrupt_and_a_system_exit():
    """Through `metered` on the worker's shared loop, as the stages call judges."""
    typed = TypedJudge(_faulty("KeyboardInterrupt"))
    worker = runtime.JudgeRuntime()
    failed = worker.submit(metered(lambda: typed.verify_local("Kyoto is big.", CTX, "q")))
    with pytest.raises(JudgeError, match="KeyboardInterrupt") as caught:
        failed.result()
    assert caught.value.rt4chart_usage.calls == 1

    async def raw_system_exit():  # not through TypedJudge: metered contains it too
        raise SystemExit(2)

    with pytest.raises(JudgeError, match="SystemExit: 2"):
        worker.submit(metered(raw_system_exit)).result()
    assert worker.thread.is_alive()
    verdict, usage = worker.submit(metered(
        lambda: typed.verify_local("Tokyo is the capital of Japan.", CTX, "q"))).result()
    assert verdict.label == "ENT" and usage.calls == 1


class _QueuedJudge:
    """Waits `wait_s` before answering, in its own queue (`queued`) or not."""

    def __init__(self, wait_s: float, in_queue: bool, deadline: float):
        self.wait_s, self.in_queue, self.call_deadline_s = wait_s, in_queue, deadline

    async def verify_local(self, claim, chunk, question):
        if self.in_queue:
            with queued():
                await asyncio.sleep(self.wait_s)
        else:
            await asyncio.sleep(self.wait_s)
        return Verdict("NIC")


def test_time_in_the_judges_own_queue_does_not_count_against_the_deadline():
    queued_judge = TypedJudge(_QueuedJudge(0.4, in_queue=True, deadline=0.15))
    assert asyncio.run(queued_judge.verify_local("c", "t", "q")).label == "NIC"
    running = TypedJudge(_QueuedJudge(0.4, in_queue=False, deadline=0.15))
    with pytest.raises(JudgeError, match="did not answer within 0.15 s"):
        asyncio.run(running.verify_local("c", "t", "q"))


class _RequeuingJudge:
    """Runs `run_s`, queues briefly, runs again...: forever, unless its deadline ends it (as a
    call that retries through its rate limiter, each attempt dripping for a while)."""

    def __init__(self, run_s: float, deadline: float):
        self.run_s, self.call_deadline_s, self.pieces = run_s, deadline, 0

    async def verify_local(self, claim, chunk, question):
        while True:
            await asyncio.sleep(self.run_s)
            self.pieces += 1
            with queued():
                await asyncio.sleep(0.01)


def test_a_call_that_keeps_queueing_between_runs_still_ends_at_its_running_deadline():
    # Leaving the queue used to restart the whole deadline: this call never ended.
    judge = _RequeuingJudge(run_s=0.1, deadline=0.35)
    with pytest.raises(JudgeError, match="did not answer within 0.35 s"):
        asyncio.run(TypedJudge(judge).verify_local("c", "t", "q"))
    assert judge.pieces <= 4  # its running time counted across the queue waits


def test_call_deadline_is_an_option_of_every_judge():
    spec = JudgeSpec.of("fake_judges:faulty", {"call_deadline_s": "2.5", "fault": "hang"})
    judge = spec.build()
    assert call_deadline_of(judge) == 2.5 and judge.fault == "hang"
    assert call_deadline_of(JudgeSpec.of("fake_judges:faulty", {"call_deadline_s": "0"})
                            .build()) is None
    assert call_deadline_of(JudgeSpec.of("offline").build()) == DEFAULT_CALL_DEADLINE_S
    for bad in ("-1", "soon", "inf"):
        with pytest.raises(ValueError, match="call_deadline_s"):
            JudgeSpec.of("offline", {"call_deadline_s": bad}).build()


def test_the_openai_judge_deadline_follows_its_speed_and_token_limit_and_is_bounded(
        monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unit-0123456789abcdef")

    def deadline(**options: str) -> float:
        return call_deadline_of(JudgeSpec.of("openai", options).build())

    fast = deadline(timeout_s="20", max_output_tokens="64", prompt_tokens_per_s="1000",
                    output_tokens_per_s="50")
    slow = deadline(timeout_s="20", max_output_tokens="64", prompt_tokens_per_s="1000",
                    output_tokens_per_s="5")
    longer = deadline(timeout_s="20", max_output_tokens="128", prompt_tokens_per_s="1000",
                      output_tokens_per_s="50")
    assert 20 < fast < slow and fast < longer
    # Unmeasured, at one token a second: far more, but never past the bound.
    assert deadline(timeout_s="20") == deadline(timeout_s="600") == CALL_DEADLINE_MAX_S
    assert deadline(call_deadline_s="7") == 7
    assert deadline(call_deadline_s="5000") == 5000  # a deadline given is the user's


def test_every_judge_option_is_accepted_where_the_openai_judges_options_are_read():
    # The job's share of the rate limits reads the options before the judge is built.
    from apache_beam.options.pipeline_options import PipelineOptions

    from rt4chart.transforms.judges.openai.limits.shares import share_rate_limits

    spec = JudgeSpec.of("openai", {"base_url": "http://127.0.0.1:9/v1",
                                   "call_deadline_s": "30", "calibration": "identity"})
    assert share_rate_limits(spec, PipelineOptions([])) == spec
    with pytest.raises(ValueError, match="call_deadline_s"):
        share_rate_limits(JudgeSpec.of("openai", {"call_deadline_s": "soon"}),
                          PipelineOptions([]))


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_opens_only_after_every_call_failed_for_after_s():
    clock = _Clock()
    breaker = CircuitBreaker(after_s=60, probe_s=10, clock=clock)

    async def run():
        assert await breaker.admit() is False
        breaker.failure("APIConnectionError: refused")
        clock.now += 59
        breaker.failure("APIConnectionError: refused")
        assert await breaker.admit() is False  # 59 s of failures: still closed
        breaker.success()  # a success starts the count again
        clock.now += 30
        breaker.failure("HTTP 503")
        clock.now += 59
        breaker.failure("HTTP 503")
        assert not breaker.is_open
        clock.now += 1
        breaker.failure("HTTP 503")
        assert breaker.is_open
        with pytest.raises(BreakerOpen, match=r"every call failed for 60 s \(last: HTTP 503\)"):
            await breaker.admit()
        assert breaker.refused == 1

    asyncio.run(run())


def test_the_breaker_probes_once_and_the_others_wait_for_the_outcome():
    clock = _Clock()
    breaker = CircuitBreaker(after_s=1, probe_s=10, clock=clock)

    async def run():
        breaker.failure("down")
        clock.now += 1
        breaker.failure("down")
        clock.now += 10
        assert await breaker.admit() is True  # the probe
        waiting = [asyncio.ensure_future(breaker.admit()) for _ in range(3)]
        await asyncio.sleep(0)
        assert not any(w.done() for w in waiting)
        breaker.failure("still down", probe=True)  # the probe failed: the others are refused
        results = await asyncio.gather(*waiting, return_exceptions=True)
        assert all(isinstance(r, BreakerOpen) for r in results)
        clock.now += 10
        assert await breaker.admit() is True  # the next probe
        waiting = [asyncio.ensure_future(breaker.admit()) for _ in range(3)]
        await asyncio.sleep(0)
        breaker.success()  # it succeeded: closed, the others go
        assert await asyncio.gather(*waiting) == [False, False, False]
        assert not breaker.is_open

    asyncio.run(run())


def test_a_probe_that_ends_without_a_verdict_hands_the_probe_on():
    clock = _Clock()
    breaker = CircuitBreaker(after_s=1, probe_s=10, clock=clock)

    async def run():
        breaker.failure("down")
        clock.now += 11
        breaker.failure("down")
        clock.now += 10
        assert await breaker.admit() is True
        waiter = asyncio.ensure_future(breaker.admit())
        await asyncio.sleep(0)
        breaker.release(probe=True)  # e.g. cancelled at its deadline
        assert await waiter is True  # the waiter is the new probe

    asyncio.run(run())


def test_a_breaker_with_after_s_zero_never_opens():
    clock = _Clock()
    breaker = CircuitBreaker(after_s=0, probe_s=10, clock=clock)
    for _ in range(5):
        breaker.failure("down")
        clock.now += 1000
    assert not breaker.is_open and asyncio.run(breaker.admit()) is False
    with pytest.raises(ValueError, match="breaker_probe_s"):
        CircuitBreaker(after_s=1, probe_s=0)
