"""The judge methods' call facts give the stage and reply size that their prompts show.

The reservation used to read a call's stage and size back out of the rendered prompt; the
judge methods now pass them down (`CallFacts`). For the same calls, the facts must give the
same figures as that parse (`prompt_facts`, kept for the bench's replay of recorded prompts).
"""

from __future__ import annotations

import asyncio

import pytest

from rt4chart.transforms.judges.openai.call_facts import CallFacts
from rt4chart.transforms.judges.openai.judge import OpenAIJudge

from prompt_facts import _restates, _stage, reply_size

PASSAGE = ("The bakery opens at 7 am on weekdays. Its owner, Maria Lopez, founded it in 1998. "
           "Parking is available behind the building.\nReviews praise the sourdough bread.")
TRICKY = ("  Leading spaces. A </passage> and <claim> in the text!  \n\n"
          "Maria Lopez, 1998.\r\nTrailing  ")
CLAIMS = ("Maria Lopez founded it in 1998.", "The museum exhibits Roman coins.",
          "Reviews praise the sourdough bread.", "", "see [a] b </claims> 7 am")
REPLIES = {"decompose": {"claims": []}, "verify": {"label": "NIC", "evidence": []},
           "verify_absence": {"label": "NIC", "evidence": []}}


def _calls(monkeypatch) -> tuple[OpenAIJudge, list[tuple[str, CallFacts]]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    judge = OpenAIJudge({})
    seen: list[tuple[str, CallFacts]] = []

    async def fake_call(system, user, call, logprobs=False, shared=None):
        seen.append((user, call))
        if call.numbered is not None:
            return {"verdicts": [{"claim": i + 1, "label": "NIC", "evidence": []}
                                 for i in range(call.numbered)]}
        return REPLIES[call.schema]

    monkeypatch.setattr(judge, "_call", fake_call)
    return judge, seen


async def _every_method(judge: OpenAIJudge) -> None:
    for passage in (PASSAGE, TRICKY, "", "one line"):
        for claim in CLAIMS:
            await judge.verify_local(claim, passage, "q <question>?")
            await judge.verify_global(claim, passage, "q?", "ENT", None)
            await judge.verify_global(claim, passage, "q?", "CON", "Its <hint> owner.")
            await judge.verify_absence(claim, passage, "q?")
            await judge.decompose(claim + " " + passage, "An <answer>.", "q?")
        await judge.verify_local_many(list(CLAIMS), passage, "q?")
        await judge.verify_local_many(list(CLAIMS[:2]), passage, "q?")


def test_facts_give_the_stage_and_size_the_prompt_shows(monkeypatch):
    judge, seen = _calls(monkeypatch)
    asyncio.run(_every_method(judge))
    assert len(seen) == 4 * (5 * len(CLAIMS) + 2)
    for user, call in seen:
        assert call.stage == _stage(call.schema, call.numbered, user), user
        assert call.size == reply_size(call.schema, user), user
        assert call.restates == _restates(call.schema)
    stages = {call.stage for _, call in seen}
    assert stages == {"verify@passage", "verify@context", "verify@context+hint",
                      "verify_absence@context", "decompose@question", "verify_many/5@passage",
                      "verify_many/2@passage"}
    assert any(call.size for _, call in seen)  # not all zero: the quotes are counted


def test_facts_are_frozen_values():
    call = CallFacts("verify", "passage", ("c",), PASSAGE)
    with pytest.raises(AttributeError):
        call.schema = "decompose"  # type: ignore[misc]
    assert call == CallFacts("verify", "passage", ("c",), PASSAGE)
    assert call.size == call.size == 0
