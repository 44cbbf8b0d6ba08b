"""The running speed of a judge endpoint, the concurrency limit that backs off, the assembly of
streamed chunks and the streaming capability (issue 33, defect 8): without a server."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk
from sse_stream import chunks_of

from rt4chart.transforms.judges.openai.capabilities import Capabilities, corrected
from rt4chart.transforms.judges.openai.endpoint_speed import (
    CALL_DEADLINE_MAX_S,
    EndpointSpeed,
    RunningRate,
    call_deadline_s,
)
from rt4chart.transforms.judges.openai.faults import NotACompletion
from rt4chart.transforms.judges.openai.limits.concurrency import AdaptiveLimit
from rt4chart.transforms.judges.openai.reply_size import reply_cap
from rt4chart.transforms.judges.openai.streamed import Assembled, Piece
from rt4chart.transforms.judges.speed import Speed, run_seconds

rates = st.floats(min_value=1e-6, max_value=100.0, allow_nan=False)


@given(st.lists(rates, min_size=1, max_size=60))
def test_the_pessimistic_rate_is_never_below_the_mean_nor_the_mean_outside_the_samples(xs):
    rate = RunningRate()
    for x in xs:
        rate.observe(x)
    assert min(xs) - 1e-9 <= rate.mean <= max(xs) + 1e-9
    assert rate.pessimistic >= rate.mean and rate.samples == len(xs)


@given(st.lists(rates, min_size=1, max_size=30), rates)
def test_a_censored_sample_never_lowers_the_estimate(xs, censored):
    rate = RunningRate()
    for x in xs:
        rate.observe(x)
    before = rate.mean
    rate.at_least(censored)
    assert rate.mean >= before


def test_a_machine_that_gets_busy_moves_the_estimate_within_a_few_replies():
    speed = EndpointSpeed(Speed(prompt_tps=1000, output_tps=20))  # the quiet probe
    quiet = speed.first_token_s(3000, floor=1.0)
    for _ in range(6):  # four times slower now
        speed.observe(3000, 12.0, 100, 99 * 0.2)
    assert speed.first_token_s(3000, floor=1.0) > 3 * quiet
    assert speed.measured().output_tps < 10 and speed.idle_s(0.1) > 8 * 0.05


@given(st.integers(1, 20_000), rates, st.floats(0.01, 600))
def test_waits_are_never_below_their_floor(prompt, seconds, floor):
    speed = EndpointSpeed()
    speed.observe(prompt, seconds, 50, seconds)
    assert speed.first_token_s(prompt, floor) >= floor and speed.idle_s(floor) >= floor


def test_a_first_token_that_did_not_come_lengthens_the_next_wait():
    speed = EndpointSpeed(Speed(prompt_tps=1000, output_tps=20))
    before = speed.first_token_s(2000, floor=1.0)
    speed.stalled(2000, waited_s=before, tokens=0)
    assert speed.first_token_s(2000, floor=1.0) > before
    idle = speed.idle_s(0.5)
    speed.stalled(2000, waited_s=5.0, tokens=7)  # a stop between tokens is no speed
    assert speed.idle_s(0.5) == idle


def test_overhead_of_a_cached_prompt_is_not_a_reading_speed():
    speed = EndpointSpeed()
    speed.observe(3, 2.0, 10, 1.0)
    assert speed.prompt.mean is None and speed.output.mean == pytest.approx(1 / 9)


def test_run_time_at_a_speed():
    speed = Speed(prompt_tps=100, output_tps=10, slots=2)
    assert run_seconds(speed, 1000, 100) == pytest.approx((10 + 10) / 2)
    assert run_seconds(Speed(prompt_tps=100), 1000, 100) is None


ops = st.lists(st.sampled_from(["acquire", "release", "answered", "slowing", "backoff",
                                "backoff_old"]), max_size=80)


@given(st.integers(1, 64), ops)
def test_the_limit_stays_between_one_and_the_maximum(maximum, plan):
    async def run():
        limit, held = AdaptiveLimit(maximum), 0
        for op in plan:
            if op == "acquire" and limit.in_flight < limit.limit:
                await limit.acquire()
                held += 1
            elif op == "release" and held:
                limit.release()
                held -= 1
            elif op in ("answered", "slowing"):
                limit.answered(slowing=op == "slowing")
            elif op == "backoff":
                limit.backoff(limit.generation)
            elif op == "backoff_old":
                limit.backoff(limit.generation - 1)
            assert 1 <= limit.limit <= maximum and limit.in_flight == held
    asyncio.run(run())


def test_timeouts_of_calls_in_flight_together_halve_the_limit_once():
    limit = AdaptiveLimit(16)
    generation = limit.generation
    assert limit.backoff(generation) and limit.limit == 8
    assert not limit.backoff(generation) and limit.limit == 8  # same burst
    assert limit.backoff(limit.generation) and limit.limit == 4
    for _ in range(4):
        limit.answered()
    assert limit.limit == 5
    for _ in range(20):
        limit.answered(slowing=True)
    assert limit.limit == 5


def test_a_waiter_gets_its_turn_when_the_limit_grows():
    async def run():
        limit = AdaptiveLimit(2)
        limit.backoff(limit.generation)  # 1 at a time
        await limit.acquire()
        waiter = asyncio.ensure_future(limit.acquire())
        await asyncio.sleep(0)
        assert not waiter.done()
        limit.answered()  # one answer at limit 1: the limit is 2 again
        await asyncio.sleep(0)
        assert waiter.done() and limit.in_flight == 2
    asyncio.run(run())


def _completion(content: str, finish: str = "stop", usage: bool = True) -> dict:
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": None}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
            if usage else None}


@settings(max_examples=60)
@given(st.text(min_size=1, max_size=200), st.booleans(), st.sampled_from(["stop", "length"]))
def test_streamed_chunks_join_into_the_reply_sent(content, usage, finish):
    got = Assembled()
    for chunk in chunks_of(_completion(content, finish, usage), include_usage=True):
        got.add(ChatCompletionChunk.model_validate(chunk))
    completion = got.completion()
    choice = completion.choices[0]
    assert choice.message.content == content and choice.finish_reason == finish
    assert (completion.usage is not None) == usage


@given(st.text(max_size=100))
def test_a_stream_cut_before_its_finish_reason_is_not_a_reply(content):
    got = Assembled()
    for chunk in chunks_of(_completion(content), include_usage=True)[:-2]:
        got.add(ChatCompletionChunk.model_validate(chunk))
    with pytest.raises(NotACompletion, match="without a finish reason"):
        got.completion()


@pytest.mark.parametrize(("status", "message"), [
    (400, "Unsupported value: 'stream' does not support true with this model."),
    (400, "Unrecognized request argument supplied: stream_options"),
    (422, "stream_options.include_usage: Extra inputs are not permitted")])
def test_an_endpoint_that_refuses_streaming_fields_is_read_whole(status, message):
    caps, change = corrected(Capabilities(), status, message)
    assert not caps.stream and "read whole" in change
    assert corrected(caps, status, message) is None  # nothing more to learn from it
    # The text form keeps it for the workers; the prompt hash's form does not carry it.
    assert Capabilities.decode(caps.encode()) == caps
    assert caps.encode(transport=False) == Capabilities().encode(transport=False)
    assert Capabilities().encode() == Capabilities().encode(transport=False)


def _chunk(content: str | None, refusal: str | None = None) -> ChatCompletionChunk:
    return ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": content, "refusal": refusal},
                     "finish_reason": None}]})


@given(st.text(alphabet=" \t\n\r\u00a0\u2003\u3000", max_size=20))
def test_whitespace_only_chunks_and_empty_ones_are_not_progress(blank):
    piece = Assembled().add(_chunk(blank))
    assert not piece.progress
    assert piece.tokens == int(bool(blank)) and piece.size == len(blank.encode())
    keep_alive = Assembled().add(ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": []}))
    assert keep_alive == Piece()


@given(st.text(min_size=1, max_size=40).filter(lambda t: t.strip()), st.booleans())
def test_a_chunk_with_any_visible_text_or_refusal_is_progress(text, as_refusal):
    piece = Assembled().add(_chunk(None, text) if as_refusal else _chunk(text))
    assert piece.progress and piece.tokens == 1 and piece.size == len(text.encode())


@given(st.integers(1, 8192), st.integers(1, 4096))
def test_a_reply_within_its_output_limit_never_reaches_its_cap(max_tokens, max_output_tokens):
    cap = reply_cap(max_tokens, max_output_tokens)
    limit = max(max_tokens, max_output_tokens)
    assert not cap.exceeded(limit, limit * 4)  # a reply the limit allows, at 4 bytes a token
    assert cap.exceeded(cap.tokens + 1, 0) and cap.exceeded(0, cap.bytes + 1)
    assert reply_cap(max_tokens + 1, max_output_tokens).tokens >= cap.tokens


@given(st.integers(1, 20_000), st.integers(1, 4096), st.floats(0.1, 120), st.floats(0.1, 60),
       st.one_of(st.none(), st.floats(0.1, 5000)))
def test_a_replys_deadline_allows_its_first_wait_its_idle_wait_and_its_limit(
        prompt, limit, floor, idle, output_tps):
    speed = EndpointSpeed(Speed(prompt_tps=500, output_tps=output_tps))
    deadline = speed.reply_s(prompt, limit, floor, idle)
    assert deadline >= speed.first_token_s(prompt, floor) + speed.idle_s(idle)
    per_token = 1 / output_tps if output_tps else 1.0
    assert deadline >= limit * per_token  # the whole limit at the mean speed, at least
    assert speed.reply_s(prompt, limit + 100, floor, idle) >= deadline
    bounded = call_deadline_s(speed, floor, idle, limit)
    assert bounded <= CALL_DEADLINE_MAX_S


def test_a_reply_cut_at_its_deadline_lengthens_the_next_one():
    speed = EndpointSpeed(Speed(prompt_tps=1000, output_tps=100))
    before = speed.reply_s(500, 256, 1.0, 1.0)
    speed.overdue(tokens=50, first_s=1.0, last_s=26.0)  # 0.5 s a token, not 0.01
    assert speed.reply_s(500, 256, 1.0, 1.0) > before
    # Whitespace that came while the first token did not: the prompt was read; no sample.
    wait = speed.first_token_s(500, 1.0)
    speed.stalled(500, waited_s=60.0, tokens=0, blank=12)
    assert speed.first_token_s(500, 1.0) == wait
