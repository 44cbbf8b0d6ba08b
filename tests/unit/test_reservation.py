"""Output reservations that follow each stage's replies, and never a silently cut reply."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from rt4chart import prompts
from rt4chart.transforms.judges.openai.judge import OpenAIJudge
from rt4chart.transforms.judges.openai.reply_size import likely_quote_tokens
from rt4chart.transforms.judges.openai.reservation import (
    OutputReservation,
    ReservationConfig,
    after_cut_off,
    quantile,
    stage_of,
)
from rt4chart.transforms.judges.prompt_tokens import PromptTokens

from fake_openai_server import FakeOpenAI, tag
from prompt_facts import _stage, reply_size, subject_tokens


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
    config = ReservationConfig(quantile=1.0, margin=0.0, slack=0, warmup=2, class_warmup=2)
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


def _verify_reply(evidence_words: int, quotes: int = 1) -> dict:
    """A verification reply of `quotes` quotes of `evidence_words` words each (within the
    schema's bounds: at most 4 quotes of 400 characters)."""
    return {"reasoning": "r", "evidence": ["word " * evidence_words] * quotes, "label": "ENT"}


def test_judge_reserves_what_replies_use_and_retries_a_cut_off_reply(monkeypatch):
    """After warm-up the judge reserves about what its replies use; a reply longer than that is
    cut off by the provider and retried with twice the reservation, never taken cut."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def responder(body: dict) -> dict:
        long = tag(body["messages"][-1]["content"], "claim") == "claim 10"
        return _verify_reply(60, 4) if long else _verify_reply(2)

    async def run(judge: OpenAIJudge) -> list:
        return [await judge.verify_local(f"claim {i}", "chunk", "q") for i in range(14)]

    with FakeOpenAI(responder) as server:
        judge = OpenAIJudge({"base_url": server.base_url, "output_warmup": "8",
                             "backoff_initial_s": "0.01", "backoff_max_s": "0.05"})
        verdicts = asyncio.run(run(judge))
        budgets = [r["max_completion_tokens"] for r in server.requests]
    assert [v.quotes[0].count("word") for v in verdicts] == [2] * 10 + [60] + [2] * 3
    used = len(json.dumps(_verify_reply(2))) // 4 + 1
    assert budgets[:8] == [256] * 8  # warm-up: the configured reservation
    small = budgets[8]
    assert used < small <= int(used * 1.1) + 8 + 1  # p99 of what replies use + a margin
    # The long reply: cut off at the small reservation, then retried with the configured
    # reservation, then twice as much until it fits: every verdict comes from a whole reply.
    long_attempts = budgets[10:-3]
    assert long_attempts[:3] == [small, 256, 512] and len(long_attempts) == 3
    figures = judge.throughput.reservation.figures()["verify@passage"]
    assert figures["cut_off"] == len(long_attempts) - 1


def _local_prompt(claim: str, chunk: str) -> str:
    return prompts.render("verify_local_user.txt", chunk=chunk, question="q?", claim=claim)


PASSAGE = ("The bakery opens at 7 am on weekdays. Its owner, Maria Lopez, founded it in 1998. "
           "Parking is available behind the building.\nReviews praise the sourdough bread.")


def test_reply_size_is_the_likely_quote_of_a_verification():
    owner = "Maria Lopez founded it in 1998."
    sentence = "Its owner, Maria Lopez, founded it in 1998."
    # The claim's sentence is what a judge would quote; nothing for an unrelated claim.
    assert reply_size("verify", _local_prompt(owner, PASSAGE)) == math.ceil(len(sentence) / 4)
    assert likely_quote_tokens("The museum exhibits Roman coins.", PASSAGE) == 0
    assert reply_size("verify", _local_prompt("The museum exhibits Roman coins.", PASSAGE)) == 0
    # A claim sharing less than a fifth of its words with a sentence is not quoted from it.
    assert likely_quote_tokens("Parking fines are high in downtown Boston streets.", PASSAGE) == 0
    # At most the two sentences that share most.
    both = "The bakery of Maria Lopez serves sourdough bread since 1998."
    assert likely_quote_tokens(both, PASSAGE) == (math.ceil(len(sentence) / 4)
                                                  + math.ceil(len(PASSAGE.split("\n")[1]) / 4))
    # Several claims in one call: the sum of their likely quotes.
    many = prompts.render("verify_local_many_user.txt", chunk=PASSAGE, question="q?",
                          claims=f"[1] {owner}\n[2] The museum exhibits Roman coins.\n"
                                 "[3] Reviews praise the sourdough bread.")
    assert reply_size("verify_many", many) == (math.ceil(len(sentence) / 4)
                                               + math.ceil(len(PASSAGE.split("\n")[1]) / 4))
    # The full context of the global pass is read like a window.
    glob = prompts.render("verify_global_user.txt", context=PASSAGE, question="q?", claim=owner)
    assert reply_size("verify", glob) == math.ceil(len(sentence) / 4)
    # A decomposition's size is its sentence's.
    decompose = prompts.render("decompose_user.txt", question="q?", answer="A. B.",
                               sentence="x" * 80)
    assert reply_size("decompose", decompose) == subject_tokens(decompose) == (11 + 80 + 1) // 4


def test_judge_reserves_less_for_claims_the_window_does_not_mention(monkeypatch):
    """Replies about a claim the window does not mention (NIC, no quote) and about one it
    quotes are learned apart: after warm-up the first reserve what a short reply uses."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    def responder(body: dict) -> dict:
        about = "Lopez" in tag(body["messages"][-1]["content"], "claim")
        return _verify_reply(60) if about else {"reasoning": "r", "evidence": [], "label": "NIC"}

    claims = [f"Maria Lopez founded the bakery in {1990 + i}." if i % 2 else
              f"The museum exhibits {i} Roman coins." for i in range(24)]

    async def run(judge: OpenAIJudge) -> list:
        return [await judge.verify_local(c, PASSAGE, "q?") for c in claims]

    with FakeOpenAI(responder) as server:
        judge = OpenAIJudge({"base_url": server.base_url, "output_warmup": "4",
                             "output_class_warmup": "4"})
        verdicts = asyncio.run(run(judge))
        budgets = [r["max_completion_tokens"] for r in server.requests]
    assert [v.label for v in verdicts] == ["NIC", "ENT"] * 12
    assert len(budgets) == 24  # nothing was cut off
    short, long = budgets[-2], budgets[-1]
    nic = len(json.dumps({"reasoning": "r", "evidence": [], "label": "NIC"})) // 4 + 1
    assert short <= int(nic * 1.1) + 8 + 1 < long


def test_a_warming_stage_sends_few_calls_until_its_reservation_is_learned():
    """A fan-out's first burst does not all go with the large reservation: while a stage warms
    up, at most `probes` of its calls are in flight; once it has its reservation, all go."""
    config = ReservationConfig(warmup=4, probes=2)
    r = OutputReservation(256, 2048, config)
    inside: list[int] = []
    budgets: list[int] = []
    peak = {"warming": 0, "after": 0}

    async def call(i: int) -> None:
        async with r.warming("verify"):
            inside.append(i)
            phase = "warming" if r._stage("verify").budget is None else "after"
            peak[phase] = max(peak[phase], len(inside))
            budgets.append(r.budget("verify"))
            await asyncio.sleep(0.01)
            inside.remove(i)
            r.observe("verify", 20, budgets[-1])

    async def run() -> None:
        await asyncio.gather(*(call(i) for i in range(12)), r_other())

    async def r_other() -> None:  # another stage is not held by this one's warm-up
        async with r.warming("decompose"), r.warming("decompose"):
            peak["other"] = 1

    asyncio.run(run())
    assert peak["warming"] == 2 and peak["other"] == 1
    assert budgets[:4] == [256] * 4
    assert set(budgets[4:]) == {math.ceil(20 * (1 + config.margin)) + config.slack}
    assert peak["after"] > 2  # once learned, the stage's calls are no longer held
    # A call that fails still frees its probe: the next one goes.
    r2 = OutputReservation(256, 2048, ReservationConfig(warmup=4, probes=1))

    async def failing() -> None:
        with pytest.raises(RuntimeError):
            async with r2.warming("verify"):
                raise RuntimeError("judge failed")
        async with r2.warming("verify"):
            pass

    asyncio.run(asyncio.wait_for(failing(), 5))


def test_a_decomposition_reserves_a_multiple_of_its_sentence():
    """Replies that restate their subject keep the ratio reply / subject: a sentence twice as
    long reserves about twice as much, from the first reservation learned."""
    config = ReservationConfig(quantile=1.0, margin=0.0, slack=0, warmup=3)
    r = OutputReservation(256, 2048, config)
    for size in (12, 40, 92):  # replies of 2 x (size + 8) tokens
        r.observe("decompose", 2 * (size + 8), 256, size, proportional=True)
    assert r.budget("decompose", 20, proportional=True) == 2 * (20 + 8)
    assert r.budget("decompose", 200, proportional=True) == 2 * (200 + 8)
    # Without the flag the stage's quantile (the longest reply) is reserved whatever the size.
    assert r.budget("decompose", 20) == 2 * (92 + 8)


def test_local_global_and_hinted_calls_are_learned_apart():
    local = prompts.render("verify_local_user.txt", chunk=PASSAGE, question="q?", claim="c")
    plain = prompts.render("verify_global_user.txt", context=PASSAGE, question="q?", claim="c")
    hinted = prompts.render("verify_global_hint_user.txt", context=PASSAGE, question="q?",
                            claim="c", local_label="ENT", hint="Parking is available.")
    stages = {_stage("verify", None, u) for u in (local, plain, hinted)}
    assert stages == {"verify@passage", "verify@context", "verify@context+hint"}
    assert _stage("verify_many", 3, local) == "verify_many/3@passage"
    assert _stage("decompose", None, "no tags") == "decompose"


def test_prompt_tokens_follow_what_the_provider_counts():
    estimator = PromptTokens(warmup=2)
    contents = ["s" * 400, "u" * 800]  # 1,200 characters in two messages
    assert estimator.estimate(contents) == 300 + 2 * 3 + 3  # chars / 4 until calibrated
    # The provider counts these prompts as 1 token per 3 characters (plus the chat overhead).
    for _ in range(2):
        estimator.observe(contents, 400 + 2 * 3 + 3)
    assert estimator.estimate(contents) == 400 + 9
    assert estimator.estimate(["x" * 3000]) == 1000 + 3 + 3
    estimator.observe(contents, None)  # a reply without usage changes nothing
    assert estimator.estimate(contents) == 409
