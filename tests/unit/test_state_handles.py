"""The per-process state the stages share lives in objects, not module globals (issue 22): the
tally, the throttling clock and the keys redacted can each be made fresh in a test."""

from __future__ import annotations

import asyncio
import pickle

from rt4chart.transforms.common import tally
from rt4chart.transforms.common.redact import REDACTED, Redactor
from rt4chart.transforms.judges import runtime
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.limits.throttling import ThrottleClock, report_throttled
from rt4chart.transforms.judges.openai.limits.provider import retuned
from rt4chart.transforms.judges.openai.limits.rate import RateLimiter
from rt4chart.transforms.judges.runtime import JudgeRuntime

KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"


def test_a_tally_of_its_own_counts_apart_from_the_process_one():
    live = tally.LiveTally()
    live.add("traces_done", 2)
    live.add("traces_done")
    assert live.local() == {"traces_done": 3}
    assert tally.Tally("/nonexistent", live).snapshot() == {}  # since the job started


def test_a_counter_is_picklable_and_counts_in_the_tally_of_the_process_it_runs_in():
    counter = runtime.counter("rt4chart", "traces_read")
    worker = runtime.acquire(runtime.runtime_handle())  # held, as a DoFn holds it
    held = worker.tally
    before = held.local().get("traces_read", 0)
    pickle.loads(pickle.dumps(counter)).inc(2)
    assert held.local()["traces_read"] - before == 2


def test_judges_a_runtime_builds_count_on_its_clock_and_retuning_keeps_it(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    runtime = JudgeRuntime()
    judge = runtime.judge(JudgeSpec.of("openai", {"base_url": "http://127.0.0.1:9/v1"}))
    assert judge._throttled is runtime.throttled
    assert JudgeRuntime().throttled is not runtime.throttled  # one per runtime (worker)

    async def held() -> RateLimiter:
        limiter = judge._new_limiter(clock=judge._throttled)
        limiter.pause(1.05)
        await limiter.acquire(1)
        return limiter

    limiter = asyncio.run(held())
    assert limiter.throttled is runtime.throttled
    assert retuned(limiter, judge.throughput.limits).throttled is runtime.throttled

    class Signaler:
        seconds: list[int] = []

        def signal_throttled(self, seconds: int) -> None:
            self.seconds.append(seconds)

    signaler = Signaler()
    assert report_throttled(runtime.throttled, signaler) == 1 and signaler.seconds == [1]
    assert report_throttled(None, signaler) == 0 and report_throttled(ThrottleClock()) == 0


def test_the_keys_redacted_are_a_value_over_an_environment_of_its_own():
    env = {"MY_KEY": KEY}
    keys = Redactor()
    assert keys.redact(f"echo {KEY}", env) == f"echo {KEY}"
    keys = keys.with_names("MY_KEY").with_names("MY_KEY")
    assert keys.names == ("MY_KEY",) and keys.secrets(env) == (KEY,)
    assert keys.redact(f"echo {KEY}", env) == f"echo {REDACTED}"
    assert Redactor().names == ()  # another run, other keys
    assert keys.secrets({}) == ()  # names only: the values are the environment's


def test_a_held_key_is_redacted_in_its_process_and_never_pickled():
    keys = Redactor(("MY_KEY",)).with_values(KEY)
    assert keys.redact(f"echo {KEY}", {}) == f"echo {REDACTED}"
    assert KEY not in repr(keys)
    travelled = pickle.loads(pickle.dumps(keys))  # what a DoFn carries to a worker process
    assert travelled == Redactor(("MY_KEY",)) and KEY.encode() not in pickle.dumps(keys)


def test_a_runtime_redacts_the_keys_its_judges_read(monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", KEY)
    worker = JudgeRuntime()
    assert "MY_JUDGE_KEY" not in worker.keys.names
    worker.judge(JudgeSpec.of("openai", {"base_url": "http://127.0.0.1:9/v1",
                                         "api_key_env": "MY_JUDGE_KEY"}))
    assert worker.keys.names == ("MY_JUDGE_KEY",)
    assert worker.keys.redact(f"echo {KEY}") == f"echo {REDACTED}"
