"""The simulated provider of the throughput benchmark: limits, 429 headers, caching, latency."""

from __future__ import annotations

import json
import math
import statistics
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sim_provider import (  # noqa: E402
    LatencyModel,
    PrefixCache,
    SimConfig,
    SimCore,
    SimProvider,
    count_tokens,
    format_duration,
    max_in_window,
)

from rt4chart.transforms.judges.openai.limits.rate import (  # noqa: E402
    exhausted_for,
    parse_duration,
    retry_after_seconds,
)

INSTANT = LatencyModel.instant()


def body(user: str = "hello", *, system: str = "sys", max_tokens: int = 100, **extra) -> dict:
    return {"model": "gpt-4o-mini", "max_completion_tokens": max_tokens,
            "messages": [{"role": "system", "content": system},
                         {"role": "user", "content": user}],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "verify", "strict": True, "schema": {}}}, **extra}


def post(sim: SimProvider, payload: dict) -> tuple[int, dict, dict[str, str]]:
    req = urllib.request.Request(f"{sim.base_url}/chat/completions",
                                 data=json.dumps(payload).encode(),
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read()), _lower(resp.headers)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), _lower(err.headers)


def _lower(headers) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def verify_prompt(claim: str, passage: str) -> str:
    return f"<passage>\n{passage}\n</passage>\n\n<claim>\n{claim}\n</claim>"


def test_rpm_enforced_with_openai_headers():
    with SimProvider(rpm=5, tpm=1_000_000, latency=INSTANT, cache=False) as sim:
        answers = [post(sim, body(verify_prompt("Paris is in France.", "Paris is in France.")))
                   for _ in range(7)]
        stats = sim.stats(timeline=True)
    arrival = [row[0] for row in stats["timeline"]]
    statuses = [s for s, _, _ in answers]
    assert statuses == [200] * 5 + [429] * 2
    remaining = [int(h["x-ratelimit-remaining-requests"]) for _, _, h in answers[:5]]
    assert remaining == [4, 3, 2, 1, 0]
    for _, _, h in answers:
        assert h["x-ratelimit-limit-requests"] == "5"
        assert h["x-ratelimit-limit-tokens"] == "1000000"
    status, error, headers = answers[5]
    assert error["error"]["code"] == "rate_limit_exceeded" and error["error"]["type"] == "requests"
    # The window frees its first slot 60 s after the first request, and is empty again 60 s
    # after the last admitted one: the provider says so, counted from the rejected arrival.
    assert retry_after_seconds(headers) == pytest.approx(60 - (arrival[5] - arrival[0]),
                                                         abs=0.002)
    assert int(headers["retry-after"]) == math.ceil(60 - (arrival[5] - arrival[0]))
    reset = 60 - (arrival[5] - arrival[4])
    assert parse_duration(headers["x-ratelimit-reset-requests"]) == pytest.approx(reset,
                                                                                  abs=0.002)
    # The judge reads "budget used up" as: pause until a small share of it is back.
    assert exhausted_for(headers) == pytest.approx(reset * 0.02, abs=0.001)
    # the answer itself is the lexical model's, with usage
    content = json.loads(answers[0][1]["choices"][0]["message"]["content"])
    assert content["label"] == "ENT"
    assert stats["ok"] == 5 and stats["rejected_429"] == 2
    assert stats["rejected_429_by_kind"] == {"requests": 2}
    assert stats["max_60s_admitted_requests"] == 5
    assert stats["max_60s_attempted_requests"] == 7


def test_window_frees_again_after_retry_after():
    # 2 per 3 s window: 3 s only guard against a stalled machine for the first four requests.
    with SimProvider(rpm=40, tpm=10_000_000, latency=INSTANT, window_s=3.0) as sim:
        statuses = [post(sim, body())[0] for _ in range(3)]
        assert statuses == [200, 200, 429]
        _, _, headers = post(sim, body())
        time.sleep(retry_after_seconds(headers) + 0.05)
        assert post(sim, body())[0] == 200


def test_tpm_counts_prompt_plus_max_completion_tokens():
    user = "x" * 400  # 100 tokens; + 3 per message + 3 priming + "sys" (1)
    prompt = 100 + 1 + 3 * 2 + 3
    cost = prompt + 500
    with SimProvider(rpm=1000, tpm=3 * cost + 10, latency=INSTANT, cache=False) as sim:
        answers = [post(sim, body(user, max_tokens=500)) for _ in range(4)]
        stats = sim.stats(timeline=True)
    arrival = [row[0] for row in stats["timeline"]]
    assert [s for s, _, _ in answers] == [200, 200, 200, 429]
    assert answers[0][1]["usage"]["prompt_tokens"] == prompt
    assert int(answers[2][2]["x-ratelimit-remaining-tokens"]) == 10
    assert answers[3][1]["error"]["type"] == "tokens"
    # the first request's tokens leave the window 60 s after it: then the fourth fits
    assert retry_after_seconds(answers[3][2]) == pytest.approx(60 - (arrival[3] - arrival[0]),
                                                               abs=0.002)
    assert stats["admitted_tokens"] == 3 * cost
    assert stats["rejected_429_by_kind"] == {"tokens": 1}
    # a smaller request still fits the remaining tokens
    with SimProvider(rpm=1000, tpm=cost + 200, latency=INSTANT) as sim:
        assert post(sim, body(user, max_tokens=500))[0] == 200
        assert post(sim, body("y", max_tokens=50))[0] == 200


def test_no_enforce_counts_but_admits():
    with SimProvider(rpm=2, tpm=1_000_000, latency=INSTANT, enforce=False) as sim:
        assert [post(sim, body())[0] for _ in range(4)] == [200] * 4
        stats = sim.stats()
    assert stats["max_60s_admitted_requests"] == 4 and stats["rejected_429"] == 0


def test_cached_tokens_for_shared_prefix():
    context = " ".join(f"Sentence {i} says that item {i} is worth {i * 7}." for i in range(400))
    assert count_tokens(context, "chars4") > 2000
    with SimProvider(rpm=1000, tpm=10_000_000, latency=INSTANT) as sim:
        first = post(sim, body(verify_prompt("Item 3 is 21.", context)))[1]["usage"]
        second = post(sim, body(verify_prompt("Item 4 is 99.", context)))[1]["usage"]
        short = post(sim, body("short prompt"))[1]["usage"]
        short_again = post(sim, body("short prompt"))[1]["usage"]
        other_key = post(sim, body(verify_prompt("Item 4 is 99.", context),
                                   prompt_cache_key="tenant-b"))[1]["usage"]
        same_key = post(sim, body(verify_prompt("Item 5 is 35.", context),
                                  prompt_cache_key="tenant-b"))[1]["usage"]
        stats = sim.stats()
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    cached = second["prompt_tokens_details"]["cached_tokens"]
    shared = len("<|system|>sys<|end|><|user|><passage>\n" + context) // 4
    assert 1024 <= cached <= shared and cached % 128 == 0 and shared - cached < 128
    assert short_again["prompt_tokens_details"]["cached_tokens"] == 0  # under 1024 tokens
    assert short["prompt_tokens_details"]["cached_tokens"] == 0
    assert other_key["prompt_tokens_details"]["cached_tokens"] == 0  # its key had no prompt yet
    assert same_key["prompt_tokens_details"]["cached_tokens"] == cached
    assert stats["cached_tokens"] == 2 * cached
    with SimProvider(rpm=1000, tpm=10_000_000, latency=INSTANT, cache=False) as sim:
        post(sim, body(verify_prompt("a", context)))
        again = post(sim, body(verify_prompt("a", context)))[1]["usage"]
    assert again["prompt_tokens_details"]["cached_tokens"] == 0


def test_only_prefixes_of_answered_prompts_are_cached():
    """Like the provider, a prompt's prefix is cached once the prompt has been processed: a
    request sent while the first one of its prefix is in flight finds nothing."""
    context = " ".join(f"Sentence {i} says that item {i} is worth {i * 7}." for i in range(400))
    core = SimCore(SimConfig(rpm=1000, tpm=10_000_000, latency=INSTANT))

    def start(claim: str) -> tuple[dict, list]:
        payload = body(verify_prompt(claim, context))
        n, prompt, _, error, row = core.admit(payload)
        assert error is None
        usage = core.complete(n, payload, prompt, row)[0]["usage"]
        return usage, row

    first, first_row = start("Item 3 is 21.")
    during, during_row = start("Item 4 is 28.")  # sent before the first was answered
    core.done(first_row)
    after, after_row = start("Item 5 is 35.")
    core.done(during_row)
    core.done(after_row)
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert during["prompt_tokens_details"]["cached_tokens"] == 0
    assert after["prompt_tokens_details"]["cached_tokens"] >= 1024
    stats = core.stats(timeline=True)
    assert [r[10] for r in stats["timeline"]] == ["verify_local"] * 3
    assert stats["timeline_columns"][10] == "stage"


def test_cache_expires_after_ttl():
    # The clock is an argument of the cache: expiry is checked at exact instants, no sleep.
    context = "word " * 6000
    cache = PrefixCache(ttl_s=300.0, tokenizer="chars4")
    assert cache.lookup_and_store(1000.0, context, None) == 0
    hit = cache.lookup_and_store(1300.0, context, None)  # exactly the TTL later: still cached
    assert hit >= 1024 and hit % 128 == 0
    assert cache.lookup_and_store(1600.001, context, None) == 0  # just past the TTL: expired
    assert cache.lookup_and_store(1600.002, context, None) == hit  # stored again at 1600.001
    # The server builds its cache with the configured TTL: 0 s expires before the next request.
    with SimProvider(rpm=1000, tpm=10_000_000, latency=INSTANT, cache_ttl_s=0.0) as sim:
        post(sim, body(context))
        assert post(sim, body(context))[1]["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    with SimProvider(rpm=1000, tpm=10_000_000, latency=INSTANT, cache_ttl_s=600.0) as sim:
        post(sim, body(context))
        assert post(sim, body(context))[1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0


def test_latency_model_distribution_and_seed():
    model = LatencyModel(median_s=0.2, p95_s=0.5, seed=7)
    draws = sorted(model.base(n) for n in range(20_000))
    assert statistics.median(draws) == pytest.approx(0.2, rel=0.05)
    assert draws[int(0.95 * len(draws))] == pytest.approx(0.5, rel=0.08)
    assert [model.base(n) for n in range(5)] == [model.base(n) for n in range(5)]
    assert [LatencyModel(0.2, 0.5, seed=8).base(n) for n in range(5)] != [
        model.base(n) for n in range(5)]
    assert LatencyModel(0.2, 0.5, per_output_token_s=0.01).total(3, 10) == pytest.approx(
        LatencyModel(0.2, 0.5).base(3) + 0.1)
    with pytest.raises(ValueError):
        LatencyModel(median_s=1.0, p95_s=0.5)


def test_server_honours_latency_concurrently():
    latency = LatencyModel(median_s=0.3, p95_s=0.3)  # every answer takes 0.3 s
    with SimProvider(rpm=1000, tpm=10_000_000, latency=latency) as sim:
        started = time.monotonic()
        post(sim, body())
        one = time.monotonic() - started
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: post(sim, body())[0], range(8)))
        stats = sim.stats(timeline=True)
    assert one >= 0.3
    assert statuses == [200] * 8
    # In parallel, not one after another: requests were served while others were in flight.
    assert stats["max_in_flight"] >= 4
    served = [row[1] - row[0] for row in stats["timeline"]]
    assert min(served) >= 0.3


def test_real_client_with_logprobs_in_a_child_process():
    import openai  # a dependency of the project
    with SimProvider(rpm=1000, tpm=10_000_000, latency=INSTANT, process=True) as sim:
        client = openai.OpenAI(api_key="sim", base_url=sim.base_url, max_retries=0)
        raw = client.chat.completions.with_raw_response.create(
            **{k: v for k, v in body(verify_prompt("Paris is in Spain.", "Paris is in France."))
               .items()}, logprobs=True, top_logprobs=5)
        completion = raw.parse()
        stats = sim.stats()
    assert raw.headers["x-ratelimit-remaining-requests"] == "999"
    tokens = completion.choices[0].logprobs.content
    assert any(t.token in ("ENT", "CON", "NIC") and len(t.top_logprobs) == 3 for t in tokens)
    assert stats["ok"] == 1 and stats["server_cpu_s"] >= 0


def test_helpers():
    assert format_duration(0.25) == "250ms"
    assert format_duration(1.2) == "1.2s"
    assert format_duration(60.0) == "1m0s"
    for s in (0.0123, 0.5, 1.25, 8.64, 59.9, 61.5, 360.0):
        assert parse_duration(format_duration(s)) == pytest.approx(s, abs=0.002)
    assert max_in_window([0, 10, 59.9, 60, 61], 60) == 4
    assert max_in_window([0, 30, 70], 60, [5, 6, 7]) == 13
    assert count_tokens('{"a": 12345}', "pretok") > count_tokens('{"a": 12345}', "chars4")


def test_a_reply_longer_than_its_reservation_is_cut_off_like_the_provider_cuts_it():
    passage = "The bakery opens at 7 am on weekdays and bakes sourdough bread every morning."
    user = verify_prompt("The bakery opens at 7 am on weekdays.", passage)
    with SimProvider(rpm=1000, tpm=1_000_000, latency=INSTANT, cache=False) as sim:
        status, whole, _ = post(sim, body(user, max_tokens=500))
        used = whole["usage"]["completion_tokens"]
        status_cut, cut, _ = post(sim, body(user, max_tokens=used - 3))
        status_exact, exact, _ = post(sim, body(user, max_tokens=used))
        timeline = sim.stats(timeline=True)["timeline"]
    assert status == status_cut == status_exact == 200
    assert whole["choices"][0]["finish_reason"] == "stop" and used > 3
    text = whole["choices"][0]["message"]["content"]
    assert cut["choices"][0]["finish_reason"] == "length"
    assert cut["usage"]["completion_tokens"] == used - 3
    assert cut["choices"][0]["message"]["content"] == text[: (used - 3) * 4]
    # A reply that fills its reservation exactly is reported cut off, as OpenAI reports it.
    assert exact["choices"][0]["finish_reason"] == "length"
    # The benchmark counts the cut-off attempts as waste: neither calls nor tokens used.
    import throughput_figures as tf

    figures = tf.ceilings([r for r in timeline if r[2] == 200], 1, 1000, 1_000_000, 1.0)
    assert figures["cut_off_calls"] == 2
    prompt = whole["usage"]["prompt_tokens"]
    assert figures["used_tokens_per_trace"] == prompt + used
    assert figures["admitted_over_used_tokens"] == round(
        (3 * prompt + 500 + (used - 3) + used) / (prompt + used), 3)


def test_recorded_replies_replay_through_the_reservation(tmp_path):
    """The simulator records what it answered; the replay charges a cut-off its whole attempt."""
    import replay_reservation as rr

    passage = "The bakery opens at 7 am on weekdays and bakes sourdough bread every morning."
    with SimProvider(rpm=1000, tpm=1_000_000, latency=INSTANT, cache=False,
                     record_replies=True) as sim:
        post(sim, body(verify_prompt("The bakery opens at 7 am.", passage), max_tokens=2))
        recorded = sim.stats(replies=True)["replies"]
    assert len(recorded) == 1 and recorded[0][0] == "verify" and "<claim>" in recorded[0][1]
    assert recorded[0][2] > 2  # the whole reply's tokens, not the cut-off attempt's
    # Two replies of one stage: 10 tokens, then 300 (over the initial 256: cut off once).
    calls = [("verify@passage", 0, 10, 500, False), ("verify@passage", 0, 300, 500, False)]
    figures = rr.replay(calls, rr.ReservationConfig())
    waste = (256 - 10) + (500 + 256) + (512 - 300)
    assert figures == {"waste_per_call": round(waste / 2, 1), "cut_off_share": 0.5,
                       "admitted_over_used": round((1310 + waste) / 1310, 4), "calls": 2}
    path = tmp_path / "replies.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recorded))
    assert rr.calls(path)[0][0] == "verify@passage"
