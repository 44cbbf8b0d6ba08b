"""The pure parts of the decomposition and local-verification stages."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from rt4chart.schemas.records import DecomposeResult, Document, LocalVerdict, PlacedClaim, Trace
from rt4chart.schemas.requests import LocalBatchRequest
from rt4chart.schemas.usage import Usage
from rt4chart.transforms.decompose import _DecomposeFn, number_claims, requests_for
from rt4chart.transforms.judges.base import JudgeError
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.offline.judge import OfflineJudge
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.verify_local import _LocalBatchFn, _LocalFn, plan_global
from rt4chart.transforms.verify_local import requests_for as local_requests

TRACE = Trace("t", "r", 0, "q", (Document("d", "A one. B two. C three."),),
              "Rome is a city. Paris is a city. Oslo is a city.")
PREPARED = prepare(TRACE, SegmentConfig(2, 1))  # windows [0,1], [1,2]


def _placed(*texts: str) -> tuple[PlacedClaim, ...]:
    return tuple(PlacedClaim(t) for t in texts)


def test_one_decomposition_request_per_answer_sentence():
    assert [r.sentence.text for r in requests_for(PREPARED)] == [
        "Rome is a city.", "Paris is a city.", "Oslo is a city."]


def test_claims_are_numbered_in_answer_order_and_failures_kept():
    results = [
        DecomposeResult("t", 2, _placed("Oslo is a city."), "ok"),
        DecomposeResult("t", 0, _placed("Rome is a city.", "A Rome is a city."), "ok"),
        DecomposeResult("t", 1, (), "judge_error", "boom"),
    ]
    claim_set = number_claims(PREPARED, results)
    assert [(c.claim_index, c.text, c.sentence_index) for c in claim_set.claims] == [
        (0, "Rome is a city.", 0), (1, "A Rome is a city.", 0), (3, "Oslo is a city.", 2)]
    (failed,) = claim_set.failed
    assert (failed.claim.claim_index, failed.claim.text, failed.reason) == (
        2, "Paris is a city.", "boom")
    assert (failed.claim.answer_start, failed.claim.answer_end) == (16, 32)


def test_missing_decomposition_result_is_a_failure_not_a_skip():
    claim_set = number_claims(PREPARED, [DecomposeResult("t", 0, _placed("c1"), "ok")])
    assert [f.claim.sentence_index for f in claim_set.failed] == [1, 2]
    assert claim_set.failed[0].reason == "decomposition result missing"


def test_local_fan_out_and_or_join_plan():
    claim_set = number_claims(PREPARED, [
        DecomposeResult("t", i, _placed(PREPARED.answer_sentences[i].text), "ok")
        for i in range(3)])
    requests = list(local_requests(claim_set))
    assert len(requests) == 3 * 2
    verdicts = [
        LocalVerdict("t", 0, 0, "NIC", "ok"), LocalVerdict("t", 0, 1, "ENT", "ok"),
        LocalVerdict("t", 1, 0, "CON", "ok"), LocalVerdict("t", 1, 1, "ENT", "ok"),
        LocalVerdict("t", 2, 0, "NIC", "ok"), LocalVerdict("t", 2, 1, None, "judge_error",
                                                           note="timeout"),
    ]
    planned = {p.claim.claim_index: p for p in plan_global(claim_set, verdicts)}
    assert (planned[0].local_label, planned[0].deciding_window, planned[0].hint) == (
        "ENT", 1, "B two.\nC three.")
    assert (planned[1].local_label, planned[1].window_labels) == ("CON", ("CON", "ENT"))
    assert planned[1].hint == "A one.\nB two."
    failed = planned[2]
    assert failed.stage == "verify_local" and "1 of 2 windows failed: timeout" in failed.reason


class _PlainJudge:
    """A custom judge answering in the plain forms: lists of strings and (label, quotes)."""

    async def decompose(self, sentence, answer, question):
        return [f" {sentence} ", ""]

    async def verify_local(self, claim, chunk, question):
        return ("ENT", [claim]) if claim in chunk else ("NIC", [])

    async def verify_global(self, claim, context, question, local_label, hint):
        return "CON", [claim], 0.5


def test_stages_store_answers_in_the_judge_cache_format_of_before():
    spec = JudgeSpec()
    sentence = next(iter(requests_for(PREPARED)))
    stored = asyncio.run(_DecomposeFn(spec).call(_PlainJudge(), sentence))
    assert orjson.dumps(stored) == b'["Rome is a city."]'
    # A claim with a kind or fragments is stored with them (the offline judge gives fragments).
    stored = asyncio.run(_DecomposeFn(spec).call(OfflineJudge(), sentence))
    assert stored == [{"text": "Rome is a city.", "kind": "fact",
                       "fragments": ["Rome is a city."]}]
    claim_set = number_claims(PREPARED, [DecomposeResult("t", 0, _placed("B two."), "ok")])
    request = next(r for r in local_requests(claim_set) if r.claim.text == "B two.")
    assert orjson.dumps(asyncio.run(_LocalFn(spec).call(_PlainJudge(), request))) == (
        b'["ENT",["B two."],null]')
    label, quotes, p = asyncio.run(_LocalFn(spec).call(OfflineJudge(), request))
    assert (label, quotes) == ("ENT", ["B two."]) and 0 <= p <= 1
    batch = asyncio.run(_LocalBatchFn(spec).call(_PlainJudge(), _batch_of(request)))
    assert batch == [["ENT", ["B two."], None]]


def _batch_of(request):
    return LocalBatchRequest(request.key, (request.claim,), request.window_index, request.chunk,
                             request.question)


def test_stored_answers_old_and_new_replay_through_the_same_conversion():
    spec = JudgeSpec()
    sentence = next(iter(requests_for(PREPARED)))
    (result,) = _DecomposeFn(spec).on_result(sentence, [" c1 ", "", {"text": "c2"}], Usage())
    assert [c.text for c in result.claims] == ["c1", "c2"] and result.status == "ok"
    claim_set = number_claims(PREPARED, [DecomposeResult("t", 0, _placed("B two."), "ok")])
    request = next(r for r in local_requests(claim_set) if r.claim.text == "B two.")
    for stored in (["ENT", ["B two."]], ["ENT", ["B two."], None], ["ENT", ["B two."], 0.1]):
        (verdict,) = _LocalFn(spec).on_result(request, stored, Usage())
        assert (verdict.label, verdict.evidence[0].text) == ("ENT", "B two")
    with pytest.raises(JudgeError, match="invalid label"):
        list(_LocalFn(spec).on_result(request, ["SURE", ["B two."]], Usage()))
    with pytest.raises(JudgeError, match="verdicts for 1 claims"):
        list(_LocalBatchFn(spec).on_result(_batch_of(request), [], Usage()))
