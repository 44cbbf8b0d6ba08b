"""Output reservations that follow each stage's replies, and never a silently cut reply."""

from __future__ import annotations

import asyncio
import json

import pytest

from rt4chart.transforms.judges.openai_judge import OpenAIJudge
from rt4chart.transforms.judges.reservation import (
    OutputReservation,
    ReservationConfig,
    after_cut_off,
    quantile,
    stage_of,
)
from rt4chart.transforms.judges.throughput import subject_tokens

from fake_openai_server import FakeOpenAI, tag


def test_quantile_nearest_rank():
    values = list(range(1, 101))
    assert quantile(values, 0.99) == 99
    assert quantile(values, 1.0) == 100
    assert quantile([5, 1, 3], 0.5) == 3
    assert quantile([7], 0.99) == 7


def test_reservation_follows_the_stage_after_warmup():
    config = ReservationConfig(quantile=1.0, margin=0.5, slack=2, window=4, warmup=3)
    r = OutputReservation(256, 2048, config)
    assert r.budget("verify") == 256
    r.observe("verify", 20, 256)
    r.observe("verify", 30, 256)
    assert r.budget("verify") == 256  # still warming up
    r.observe("verify", 10, 256)
    assert r.budget("verify") == 30 * 1.5 + 2
    assert r.budget("decompose") == 256  # stages are apart
    # A sliding window: the 30 leaves after four more replies.
    for _ in range(4):
        r.observe("verify", 12, 47)
    assert r.budget("verify") == 12 * 1.5 + 2
    r.observe("verify", 100_000, 20)
    assert r.budget("verify") == 2048  # never above the cap
    r.observe("verify", None, 20)  # a reply without usage changes nothing
    figures = r.figures()["verify"]
    assert figures["replies"] == 8 and figures["used"] == 20 + 30 + 10 + 48 + 100_000


def test_size_classes_reserve_less_for_short_subjects():
    config = ReservationConfig(quantile=1.0, margin=0.0, slack=0, warmup=2)
    r = OutputReservation(256, 2048, config)
    for _ in range(2):
        r.observe("decompose", 20, 256, size=10)  # short sentences, short replies
        r.observe("decompose", 100, 256, size=60)
    assert r.budget("decompose", 10) == 20 and r.budget("decompose", 60) == 100
    assert r.budget("decompose", 500) == 100  # an unseen size class: the stage's reservation
    assert r.budget("decompose") == 100
    assert list(r.figures()) == ["decompose"]
    assert subject_tokens("<q>\nQ\n</q>\n<sentence>\n" + "x" * 40 + "\n</sentence>") == 52 // 4


def test_fixed_mode_and_validation():
    r = OutputReservation(256, 2048, ReservationConfig(mode="fixed", warmup=1))
    r.observe("verify", 10, 256)
    assert r.budget("verify") == 256
    with pytest.raises(ValueError):
        ReservationConfig(mode="generous")
    with pytest.raises(ValueError):
        ReservationConfig(quantile=0)
    with pytest.raises(ValueError):
        OutputReservation(300, 200)
    assert stage_of("verify_many", 4) == "verify_many/4"
    assert after_cut_off(20, 256, 2048) == 256
    assert after_cut_off(512, 256, 2048) == 1024
    assert after_cut_off(1500, 256, 2048) == 2048
    assert stage_of("verify", None) == "verify"


def _verify_reply(evidence_words: int) -> dict:
    return {"reasoning": "r", "evidence": ["word " * evidence_words], "label": "ENT"}


def test_judge_reserves_what_replies_use_and_retries_a_cut_off_reply(monkeypatch):
    """After warm-up the judge reserves about what its replies use; a reply longer than that is
    cut off by the provider and retried with twice the reservation, never taken cut."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def responder(body: dict) -> dict:
        long = tag(body["messages"][-1]["content"], "claim") == "claim 10"
        return _verify_reply(200 if long else 2)

    async def run(judge: OpenAIJudge) -> list:
        return [await judge.verify_local(f"claim {i}", "chunk", "q") for i in range(14)]

    with FakeOpenAI(responder) as server:
        judge = OpenAIJudge({"base_url": server.base_url, "output_warmup": "8",
                             "backoff_initial_s": "0.01", "backoff_max_s": "0.05"})
        verdicts = asyncio.run(run(judge))
        budgets = [r["max_completion_tokens"] for r in server.requests]
    assert [v.quotes[0].count("word") for v in verdicts] == [2] * 10 + [200] + [2] * 3
    used = len(json.dumps(_verify_reply(2))) // 4 + 1
    assert budgets[:8] == [256] * 8  # warm-up: the configured reservation
    small = budgets[8]
    assert used < small <= int(used * 1.1) + 8 + 1  # p99 of what replies use + a margin
    # The long reply: cut off at the small reservation, then retried with the configured
    # reservation, then twice as much until it fits: every verdict comes from a whole reply.
    long_attempts = budgets[10:-3]
    assert long_attempts[:3] == [small, 256, 512] and len(long_attempts) == 3
    assert judge.throughput.reservation.figures()["verify"]["cut_off"] == len(long_attempts) - 1
