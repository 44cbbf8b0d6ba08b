"""Streamed replies through the real `openai` client against the local server (issue 33,
defect 8): a reply that keeps producing tokens finishes however long it takes; one that stops
fails after the idle timeout, as a judge error (never ENT); a busy endpoint gets fewer calls at
once and does not open the circuit breaker; a dead one still does; servers that do not stream
are read whole."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from sse_stream import Pace

from rt4chart.transforms.judges.base import JudgeError, metered
from rt4chart.transforms.judges.openai.judge import OpenAIJudge

import fake_judges as fj
from fake_openai_server import FakeOpenAI
from testutil import write_jsonl

CLAIM = "The museum opened in 1990."
PASSAGE = "The museum opened in 1990 on the river bank."


@pytest.fixture(autouse=True)
def no_hosted_key(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY",
                 "AZURE_OPENAI_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def _judge(server: FakeOpenAI, **options: str) -> OpenAIJudge:
    base = {"base_url": server.base_url, "backoff_initial_s": "0.01", "backoff_max_s": "0.05",
            "price_input": "0", "price_cached": "0", "price_output": "0"}
    return OpenAIJudge({**base, **options})


async def _verify(judge: OpenAIJudge, n: int = 1) -> list:
    return list(await asyncio.gather(*(judge.verify_local(CLAIM, PASSAGE, "When?")
                                       for _ in range(n))))


def test_a_slow_steady_reply_finishes_past_the_whole_reply_timeout():
    # About 60 tokens, 0.05 s apart: 3 s a reply, six times the 0.5 s timeout of old.
    pace = Pace(first_s=0.05, token_s=0.05)
    with FakeOpenAI(pace=pace) as server:
        started = time.monotonic()
        (verdict,) = asyncio.run(_verify(_judge(server, timeout_s="0.5", idle_timeout_s="1")))
        took = time.monotonic() - started
        assert verdict.label == "ENT" and took > 0.5
        body = server.requests[-1]
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        # The same server, replies read whole under the same timeout: every attempt times out.
        whole = _judge(server, timeout_s="0.5", stream="false", max_attempts="2")
        with pytest.raises(JudgeError, match="Timeout"):
            asyncio.run(_verify(whole))
        assert "stream" not in server.requests[-1]


def test_a_streamed_reply_records_the_usage_the_server_reports():
    with FakeOpenAI() as server:
        judge = _judge(server)
        _, usage = asyncio.run(metered(lambda: judge.verify_local(CLAIM, PASSAGE, "When?")))
        sent = server.requests[-1]
    prompt = sum(len(m["content"]) for m in sent["messages"]) // 4 + 1
    assert usage.calls == 1 and usage.input_tokens == prompt and usage.output_tokens > 0
    assert usage.cost_usd == 0.0
    figures = judge.speed.figures()
    assert figures["output_tokens_per_s"] and figures["replies_measured"] == 1


def test_a_stalled_reply_fails_after_the_idle_timeout_and_the_breaker_stays_closed():
    pace = Pace(token_s=0.01, stall_after=5, stall_s=3.0)
    with FakeOpenAI(pace=pace) as server:
        judge = _judge(server, idle_timeout_s="0.3", max_attempts="2", breaker_after_s="0.01",
                       max_concurrency="4")
        with pytest.raises(JudgeError, match=r"no token for [0-9.]+ s after 5 token") as failed:
            asyncio.run(_verify(judge, 4))
        assert "stalled after 2 attempt" in str(failed.value)
        # Tokens came before each stall: a busy endpoint, not a dead one.
        assert not judge._breaker.is_open
        assert judge._semaphore.limit < 4 and judge._semaphore.backoffs >= 1


def test_a_server_that_gives_no_token_at_all_opens_the_breaker():
    pace = Pace(stall_after=0, stall_s=3.0)
    with FakeOpenAI(pace=pace) as server:
        judge = _judge(server, timeout_s="0.3", max_attempts="2", breaker_after_s="0.2",
                       breaker_probe_s="60")


        async def twice():
            with pytest.raises(JudgeError, match="no first token"):
                await _verify(judge)
            assert judge._breaker.is_open
            with pytest.raises(JudgeError, match="circuit breaker open"):
                await _verify(judge)

        asyncio.run(twice())


def test_tokens_never_restart_a_replys_deadline():
    # A real token every 0.4 s, never a finish: well within the idle timeout, under the cap
    # for a long while; the reply's deadline (here the call's, set) ends each attempt.
    with FakeOpenAI(pace=Pace(drip="x", token_s=0.4)) as server:
        judge = _judge(server, idle_timeout_s="2", max_attempts="2")
        judge.call_deadline_s = 3.0  # as the option call_deadline_s sets it (JudgeSpec.build)
        with pytest.raises(JudgeError, match=r"ran past its deadline after 2 attempt.*"
                                             r"did not end within its deadline of 3\.0 s"):
            asyncio.run(_verify(judge))
    # Tokens came: a working endpoint, not a dead one.
    assert not judge._breaker.is_open


def test_a_server_that_times_out_but_answers_its_health_check_is_slow_not_down():
    # Silent replies, as above, from a server whose model list answers (issue 47,
    # point 9: a one-slot server answering late): fewer calls at once, no open breaker.
    pace = Pace(stall_after=0, stall_s=30.0)
    with FakeOpenAI(pace=pace, health=True) as server:
        judge = _judge(server, timeout_s="0.3", max_attempts="3", breaker_after_s="0.2",
                       breaker_probe_s="60", max_concurrency="4")
        with pytest.raises(JudgeError, match="no first token"):
            asyncio.run(_verify(judge, 4))
    # Three failed attempts, well past breaker_after_s: counted, they would have opened it.
    assert not judge._breaker.is_open and judge._semaphore.limit < 4


def test_a_stalled_reply_in_a_run_is_a_judge_error_never_ent(tmp_path, audit):
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    with FakeOpenAI(fj.running_example_responder,
                    pace=Pace(stall_after=2, stall_s=2.0)) as server:
        code, tables, _ = audit(str(traces), "--judge", "openai", "--base-url",
                                server.base_url, "--judge-option", "idle_timeout_s=0.2",
                                "--judge-option", "max_attempts=1")
    assert code == 1
    (answer,) = tables["answers"]
    assert answer["status"] == "incomplete" and answer["label"] is None
    assert "stalled" in answer["reason"]
    assert all(c["label"] is None for c in tables["claims"])


@pytest.mark.parametrize(("profile", "streams"), [
    ("no-stream", True), ("permissive", False), ("no-stream-options", True)])
def test_servers_that_cannot_stream_with_usage_are_read_whole(profile, streams):
    # Refused `stream`, ignored it, or refused `stream_options` (no usage in the stream:
    # costs would be unknown): the replies are read whole, with their usage.
    with FakeOpenAI(profile=profile, streams=streams) as server:
        judge = _judge(server)

        async def twice():  # one event loop: the client belongs to it
            _, usage = await metered(lambda: judge.verify_local(CLAIM, PASSAGE, "When?"))
            return usage, await judge.verify_local(CLAIM, PASSAGE, "When?")

        usage, second = asyncio.run(twice())
    assert second.label == "ENT" and usage.input_tokens > 0 and usage.cost_usd == 0.0
    assert not judge.capabilities.stream and "stream" not in server.requests[-1]
    # How replies travel is not what is asked: the prompt hash's request mode is unchanged.
    assert judge.request_mode == _judge(server).request_mode


def test_check_judge_measures_the_speed_and_the_estimate_says_how_long_at_it(tmp_path,
                                                                               capsys):
    from rt4chart.pipeline.cli import main as cli

    # The probe's calls come at once; the example calls at 20 tokens a second (pace).
    with FakeOpenAI(pace=Pace(first_s=0.2, token_s=0.05), probe_faults=True) as server:
        code = cli.main(["check-judge", "--judge", "openai", "--base-url", server.base_url,
                         "--json"])
    findings = json.loads(capsys.readouterr().out)
    assert code == 0 and findings["usable"]
    speed = findings["speed"]
    assert 0 < speed["output_tokens_per_s"] < 40 and speed["replies_measured"] >= 2
    assert speed["long_call_seconds"] > 0
    assert findings["probe"]["adapted_options"]["output_tokens_per_s"]
    options = [f"--judge-option={k}={v}" for k, v in speed["options"].items()]
    traces = write_jsonl(tmp_path / "t.jsonl", [fj.RUNNING_TRACE])
    assert cli.main(["audit", str(traces), "--judge", "openai", "--model", "gpt-4o-mini",
                     "--max-concurrency", "1", *options, "--estimate",
                     "--estimate-json", "-"]) == 0
    run = json.loads(capsys.readouterr().out)["runs"]["configured"]
    total = run["total"]
    expected = (total["input_tokens"] / float(speed["options"]["prompt_tokens_per_s"])
                + total["output_tokens"] / float(speed["options"]["output_tokens_per_s"]))
    assert run["time"]["seconds"] == pytest.approx(expected, rel=0.01, abs=0.1)
    assert run["time"]["calls_at_once"] == 1
    # Without a measured speed the estimate says how to get one instead of a figure.
    assert cli.main(["audit", str(traces), "--judge", "openai", "--model", "gpt-4o-mini",
                     "--estimate"]) == 0
    assert "check-judge" in capsys.readouterr().out


def test_a_server_that_streams_without_usage_is_read_whole_and_still_probed_for_a_lost_prompt(
        capsys):
    from rt4chart.pipeline.cli import main as cli

    # As llama-cpp-python: streams, but never with the usage report.
    with FakeOpenAI(stream_usage=False) as server:
        code = cli.main(["check-judge", "--judge", "openai", "--base-url", server.base_url,
                         "--json"])
        findings = json.loads(capsys.readouterr().out)
        assert code == 0 and findings["probe"]["request"]["streaming"] is False
        assert all(c["prompt_tokens"] for c in findings["calls"])  # counted, not unknown
        assert "stream" not in server.requests[-1]
    # The check that the prompt arrived whole still runs on such a server.
    with FakeOpenAI(stream_usage=False, profile="drops-system") as server:
        code = cli.main(["check-judge", "--judge", "openai", "--base-url", server.base_url])
    assert code == 1 and "chat template dropped part of the prompt" in capsys.readouterr().err
