"""Claim kinds through the stages' pure parts: placement, the local fan-out that absence claims
skip, and the global check of absence claims with its grounding."""

from __future__ import annotations

import asyncio

import pytest

from rt4chart.schemas.records import ClaimVerdict, DecomposeResult, Document, LocalVerdict, Trace
from rt4chart.schemas.usage import Usage
from rt4chart.transforms.decompose import _DecomposeFn, number_claims
from rt4chart.transforms.decompose import requests_for as decompose_requests
from rt4chart.transforms.judges.base import JudgeError, Verdict
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.offline.judge import OfflineJudge
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.verify_global import ABSENCE_NOTE, _GlobalFn
from rt4chart.transforms.verify_local import batch_requests_for, plan_global, requests_for

import fake_judges as fj

CONTEXT = "The price of the guided tour is $50 per person. The tour starts at 9 a.m."
S_PRICE = "The price of the guided tour is $50 per person."
ANSWER = ("Hello! The tour starts at 9 a.m. and the guide is a historian. "
          "The passages do not say how long the tour lasts.")
TRACE = Trace("t", "r", 0, "When does the tour start?", (Document("d", CONTEXT),), ANSWER)
PREPARED = prepare(TRACE, SegmentConfig(1, 0))  # one window per context sentence
SPEC = JudgeSpec()


def _decomposed(judge) -> list[DecomposeResult]:
    fn = _DecomposeFn(SPEC)
    out = []
    for request in decompose_requests(PREPARED):
        stored = asyncio.run(fn.call(judge, request))
        out += fn.on_result(request, stored, Usage())
    return out


CLAIM_SET = number_claims(PREPARED, _decomposed(OfflineJudge()))


def test_the_offline_judge_gives_kinds_fragments_and_no_claim_for_a_greeting():
    got = [(c.text, c.kind, c.span_source, [ANSWER[s:e] for s, e in c.spans])
           for c in CLAIM_SET.claims]
    assert got == [
        ("The tour starts at 9 a.m.", "fact", "fragments", ["The tour starts at 9 a.m"]),
        ("the guide is a historian.", "fact", "fragments", ["the guide is a historian"]),
        ("The passages do not say how long the tour lasts.", "absence", "fragments",
         ["The passages do not say how long the tour lasts"]),
    ]
    assert [c.sentence_index for c in CLAIM_SET.claims] == [1, 1, 2]


def test_a_replayed_decomposition_is_placed_the_same_way():
    request = list(decompose_requests(PREPARED))[2]
    stored = [{"text": "The passages do not give the tour's length.", "kind": "absence",
               "fragments": ["do not say how long", "the tour lasts"]}, "Unrelated claim."]
    (result,) = _DecomposeFn(SPEC).on_result(request, stored, Usage())
    absence, fact = result.claims
    assert (absence.kind, absence.span_source) == ("absence", "fragments")
    assert [ANSWER[s:e] for s, e in absence.spans] == ["do not say how long the tour lasts"]
    assert (fact.kind, fact.span_source) == ("fact", "sentence")
    assert fact.spans == ((request.sentence.start, request.sentence.end),)


def test_an_unknown_kind_is_a_judge_error():
    request = next(iter(decompose_requests(PREPARED)))
    with pytest.raises(JudgeError, match="claim kind"):
        list(_DecomposeFn(SPEC).on_result(request, [{"text": "x", "kind": "opinion"}], Usage()))


def test_absence_claims_skip_the_windows_and_go_to_the_global_check_alone():
    facts = [c for c in CLAIM_SET.claims if c.kind == "fact"]
    assert [(r.claim, r.window_index) for r in requests_for(CLAIM_SET)] == [
        (c, w) for c in facts for w in (0, 1)]
    assert [b.claims for b in batch_requests_for(CLAIM_SET, 5)] == [tuple(facts)] * 2
    # No local verdict exists for the absence claim, and none is waited for.
    (absence,) = [p for p in plan_global(CLAIM_SET, []) if p.claim.kind == "absence"]
    assert (absence.window_labels, absence.local_label, absence.deciding_window,
            absence.hint) == ((), None, None, None)
    assert absence.context.text.count("\n") >= 1  # the full context


class _AbsenceJudge:
    """Answers absence checks from a fixed verdict and records which method was asked."""

    def __init__(self, verdict: Verdict):
        self.verdict = verdict
        self.asked: list[str] = []

    async def verify_global(self, claim, context, question, local_label, hint):
        self.asked.append("global")
        return Verdict("NIC")

    async def verify_absence(self, claim, context, question):
        self.asked.append("absence")
        return self.verdict


def _global_request(kind: str, which: int = 0):
    plans = [p for p in plan_global(CLAIM_SET, _all_nic()) if p.claim.kind == kind]
    return plans[which]


def _all_nic():
    return [LocalVerdict("t", c.claim_index, w, "NIC", "ok") for c in CLAIM_SET.claims
            for w in (0, 1)]


def _checked(judge, kind: str = "absence", which: int = 0) -> ClaimVerdict:
    request = _global_request(kind, which)
    fn = _GlobalFn(SPEC)
    (verdict,) = fn.on_result(request, asyncio.run(fn.call(judge, request)), Usage())
    return verdict


def test_a_true_absence_is_ent_without_a_quote_and_the_note_says_so():
    judge = _AbsenceJudge(Verdict("ENT"))
    verdict = _checked(judge)
    assert judge.asked == ["absence"]
    assert (verdict.label, verdict.evidence, verdict.note, verdict.p_unsupported) == (
        "ENT", (), ABSENCE_NOTE, 0.0)
    # Quotes given with an ENT prove nothing about an absence: dropped.
    assert _checked(_AbsenceJudge(Verdict("ENT", (S_PRICE,)))).evidence == ()


def test_a_present_thing_is_con_with_a_grounded_quote():
    verdict = _checked(_AbsenceJudge(Verdict("CON", ("The tour starts at 9 a.m.",), 0.9)))
    assert verdict.label == "CON" and verdict.p_unsupported == 0.9
    (evidence,) = verdict.evidence
    assert (evidence.sentence_index, evidence.text) == (1, "The tour starts at 9 a.m")


def test_a_con_without_a_real_quote_is_not_a_verdict_on_the_absence():
    verdict = _checked(_AbsenceJudge(Verdict("CON", ("The tour lasts two hours.",))))
    assert verdict.label == "NIC" and "none of 1 quotes is in the context" in verdict.note


def test_a_factual_claim_is_never_asked_as_an_absence():
    judge = _AbsenceJudge(Verdict("ENT"))
    assert _checked(judge, "fact").label == "NIC" and judge.asked == ["global"]
    absence, fact = _global_request("absence"), _global_request("fact")
    fn = _GlobalFn(SPEC)
    assert fn.cache_inputs(absence)[0] == "absence" and len(fn.cache_inputs(fact)) == 5


def test_an_absence_claim_from_a_judge_that_cannot_check_it_is_a_judge_error():
    request = _global_request("absence")
    with pytest.raises(JudgeError, match="no verify_absence"):
        asyncio.run(_GlobalFn(SPEC).call(fj.ScriptedJudge({}, {}), request))


def test_the_offline_judge_checks_absence_claims_lexically():
    verdict = _checked(OfflineJudge())
    assert (verdict.label, verdict.evidence, verdict.note) == ("ENT", (), ABSENCE_NOTE)


def test_an_obedient_judge_cannot_make_an_unsupported_fact_entailed():
    assert _global_request("fact", 1).claim.text == "the guide is a historian."
    for quote in ("claim", "none", "injection"):
        verdict = _checked(fj.ObedientJudge({"quote": quote}), "fact", 1)
        assert verdict.label == "NIC" and verdict.evidence == ()
    # The supported one stands on its quote.
    assert _checked(fj.ObedientJudge({}), "fact", 0).label == "ENT"
