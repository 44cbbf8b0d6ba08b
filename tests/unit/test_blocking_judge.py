"""A custom judge whose coroutine blocks (time.sleep, a CPU loop inside `async def`) holds only
its own call: that call fails at its deadline as a JudgeError, the others answer meanwhile."""

from __future__ import annotations

import asyncio
import time

import pytest
from blocking_judge import BlockingJudge

from rt4chart.transforms.judges.adapter import TypedJudge, runs_in_own_thread
from rt4chart.transforms.judges.base import JudgeError, metered, queued, record_usage
from rt4chart.transforms.judges.offline.judge import OfflineJudge

CHUNK = "Tokyo is the capital of Japan. Kyoto was the capital until 1868."


@pytest.mark.parametrize("how", ["sleep", "spin"])
def test_a_blocking_call_fails_at_its_deadline_and_holds_no_other(how):
    judge = TypedJudge(BlockingJudge({"how": how, "block_s": "3", "call_deadline_s": "0.5"}))

    async def timed(claim: str) -> tuple[object, float]:
        started = time.monotonic()
        try:
            out: object = await judge.verify_local(claim, CHUNK, "")
        except JudgeError as exc:
            out = exc
        return out, time.monotonic() - started

    async def scenario():
        return await asyncio.gather(timed("Kyoto was the capital until 1868."),
                                    *(timed("Tokyo is the capital of Japan.")
                                      for _ in range(5)))

    started = time.monotonic()
    (blocked, blocked_s), *others = asyncio.run(scenario())
    assert isinstance(blocked, JudgeError) and "did not answer within 0.5 s" in str(blocked)
    assert blocked_s < 2.0  # failed at its deadline, not after the 3 s block
    assert all(v.label == "ENT" and s < 1.0 for v, s in others), others
    assert time.monotonic() - started < 2.5


def test_custom_judges_run_apart_built_in_ones_share_the_loop():
    assert runs_in_own_thread(BlockingJudge({}))
    assert not runs_in_own_thread(OfflineJudge({}))

    class SharesLoop(BlockingJudge):
        shares_event_loop = True

    assert not runs_in_own_thread(SharesLoop({}))


class _Metering(BlockingJudge):
    """Records usage and waits in its own queue, from the thread its call runs in."""

    async def verify_local(self, claim, chunk, question):
        with queued():
            await asyncio.sleep(0.6)  # queued: not counted against the 0.4 s deadline
        record_usage(10, 2, 3, 0.5)
        return await super().verify_local(claim, chunk, question)


def test_usage_and_queue_time_reach_the_caller_from_the_thread():
    judge = TypedJudge(_Metering({"call_deadline_s": "0.4"}))
    verdict, usage = asyncio.run(metered(
        lambda: judge.verify_local("Tokyo is the capital of Japan.", CHUNK, "")))
    assert verdict.label == "ENT"
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (1, 10, 3)
