"""The typed judge contract: Verdict, DecomposedClaim, and the adapter that converts plain
answers (tuples, lists of strings) into them, in one place."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from rt4chart.transforms.judges.adapter import (
    TypedJudge,
    as_claims,
    as_verdict,
    as_verdicts,
    batches_claims,
)
from rt4chart.transforms.judges.base import DecomposedClaim, JudgeError, Verdict

QUOTE = "The free trial lasts 14 days."


def test_plain_tuples_and_lists_become_verdicts():
    assert as_verdict(("ENT", [QUOTE])) == Verdict("ENT", (QUOTE,), None)
    assert as_verdict(("CON", (QUOTE,), 0.9)) == Verdict("CON", (QUOTE,), 0.9)
    # The stored (JSON) forms: today's three elements, and the two of older judge_cache rows.
    assert as_verdict(["NIC", [], None]) == Verdict("NIC")
    assert as_verdict(["ENT", [QUOTE]]) == Verdict("ENT", (QUOTE,))
    assert as_verdict(("ENT", [QUOTE], 1)).p_unsupported == 1.0


def test_a_verdict_passes_unchanged_and_is_stored_as_a_list():
    verdict = Verdict("CON", [QUOTE], 0.25)
    assert as_verdict(verdict) is verdict
    assert verdict.quotes == (QUOTE,)
    stored = orjson.dumps(verdict.as_json())
    assert stored == b'["CON",["The free trial lasts 14 days."],0.25]'
    assert as_verdict(orjson.loads(stored)) == verdict
    assert orjson.dumps(Verdict("NIC").as_json()) == b'["NIC",[],null]'


@pytest.mark.parametrize("answer", [("MAYBE", []), ("ent", [QUOTE]), (None, []), ["", [], None]])
def test_an_invalid_label_is_a_judge_error_not_a_default(answer):
    with pytest.raises(JudgeError, match="invalid label"):
        as_verdict(answer)


@pytest.mark.parametrize("answer", [("ENT", QUOTE), ("ENT", [3]), ("ENT", None),
                                    ("ENT", [QUOTE, b"bytes"])])
def test_malformed_quotes_are_a_judge_error(answer):
    with pytest.raises(JudgeError, match="invalid evidence"):
        as_verdict(answer)


@pytest.mark.parametrize("answer", [None, "ENT", ("ENT",), ("ENT", [], 0.1, "extra"),
                                    {"label": "ENT", "quotes": []}])
def test_a_verdict_of_the_wrong_shape_is_a_judge_error(answer):
    with pytest.raises(JudgeError, match="instead of a Verdict"):
        as_verdict(answer)


@pytest.mark.parametrize("p", [1.5, -0.1, "0.2", True])
def test_a_probability_outside_zero_one_is_a_judge_error(p):
    with pytest.raises(JudgeError, match="p_unsupported"):
        as_verdict(("ENT", [QUOTE], p))
    with pytest.raises(JudgeError, match="p_unsupported"):
        Verdict("ENT", (QUOTE,), p)


def test_a_judge_cannot_build_an_invalid_verdict():
    with pytest.raises(JudgeError, match="invalid label"):
        Verdict("PROBABLY")
    with pytest.raises(JudgeError, match="invalid evidence"):
        Verdict("ENT", QUOTE)


def test_as_verdicts_needs_one_verdict_per_claim():
    assert as_verdicts([("ENT", [QUOTE]), Verdict("NIC")], 2) == [
        Verdict("ENT", (QUOTE,)), Verdict("NIC")]
    with pytest.raises(JudgeError, match="gave 1 verdicts for 2 claims"):
        as_verdicts([("ENT", [QUOTE])], 2)
    with pytest.raises(JudgeError, match="gave 0 verdicts for 1 claims"):
        as_verdicts(None, 1)
    with pytest.raises(JudgeError, match="invalid label"):
        as_verdicts([("ENT", [QUOTE]), ("YES", [])], 2)


def test_plain_strings_become_factual_claims_stripped_without_blanks():
    assert as_claims(["  The trial lasts 14 days. ", "", "   ", "It is free."]) == [
        DecomposedClaim("The trial lasts 14 days."), DecomposedClaim("It is free.")]
    assert as_claims(()) == []
    assert {c.kind for c in as_claims(("a", "b"))} == {"fact"}


def test_typed_claims_keep_their_kind_and_fragments_through_the_stored_form():
    claims = [DecomposedClaim("The trial lasts 14 days."),
              DecomposedClaim("The passages name no price.", "source", ["no price"])]
    stored = orjson.loads(orjson.dumps([c.as_json() for c in claims]))
    # A factual claim without fragments is stored as its text, as decompositions always were.
    assert stored[0] == "The trial lasts 14 days."
    assert stored[1] == {"text": "The passages name no price.", "kind": "source",
                         "fragments": ["no price"]}
    assert as_claims(stored) == claims
    assert as_claims(stored)[1].fragments == ("no price",)


@pytest.mark.parametrize("answer", [None, "one claim", {"claims": []}, [3], ["ok", None],
                                    [{"text": "x", "label": "ENT"}], [{"kind": "fact"}]])
def test_malformed_decompositions_are_judge_errors(answer):
    with pytest.raises(JudgeError, match="invalid claim"):
        as_claims(answer)


@pytest.mark.parametrize("fields", [{"text": 3}, {"text": "x", "kind": None},
                                    {"text": "x", "kind": ""},
                                    {"text": "x", "fragments": "x"},
                                    {"text": "x", "fragments": [1]}])
def test_an_invalid_claim_is_a_judge_error(fields):
    with pytest.raises(JudgeError, match="claim"):
        DecomposedClaim(**fields)


class _OneByOne:
    """A judge without verify_local_many, answering with plain tuples."""

    def __init__(self):
        self.calls: list[str] = []

    async def decompose(self, sentence, answer, question):
        return [sentence]

    async def verify_local(self, claim, chunk, question):
        self.calls.append(claim)
        await asyncio.sleep(0.001 * len(claim))  # finish out of order
        return ("ENT", [claim]) if claim in chunk else ("NIC", [])

    async def verify_global(self, claim, context, question, local_label, hint):
        return "CON", [context], 0.75


class _Batching(_OneByOne):
    """A judge with verify_local_many: one call for all claims."""

    def __init__(self, answer=None):
        super().__init__()
        self.many_calls: list[list[str]] = []
        self.answer = answer

    async def verify_local_many(self, claims, chunk, question):
        self.many_calls.append(claims)
        if self.answer is not None:
            return self.answer
        return [Verdict("ENT", (c,)) if c in chunk else Verdict("NIC") for c in claims]


def test_batch_method_is_detected_once_explicitly():
    assert batches_claims(_Batching()) and not batches_claims(_OneByOne())
    odd = _OneByOne()
    odd.verify_local_many = "not a method"
    assert not batches_claims(odd)


def test_a_judge_with_the_batch_method_is_asked_once_for_all_claims():
    judge = _Batching()
    verdicts = asyncio.run(TypedJudge(judge).verify_local_many(["aa", "bbb", "c"], "aa c",
                                                               "q"))
    assert verdicts == [Verdict("ENT", ("aa",)), Verdict("NIC"), Verdict("ENT", ("c",))]
    assert judge.many_calls == [["aa", "bbb", "c"]] and judge.calls == []


def test_a_judge_without_the_batch_method_is_asked_claim_by_claim_in_order():
    judge = _OneByOne()
    verdicts = asyncio.run(TypedJudge(judge).verify_local_many(["aaaa", "b", "cc"], "aaaa b",
                                                               "q"))
    assert verdicts == [Verdict("ENT", ("aaaa",)), Verdict("ENT", ("b",)), Verdict("NIC")]
    assert sorted(judge.calls) == ["aaaa", "b", "cc"]


def test_a_batch_answer_is_converted_and_checked():
    plain = _Batching(answer=[("ENT", ["x"]), ("NIC", [])])
    assert asyncio.run(TypedJudge(plain).verify_local_many(["x", "y"], "x", "q")) == [
        Verdict("ENT", ("x",)), Verdict("NIC")]
    short = _Batching(answer=[("ENT", ["x"])])
    with pytest.raises(JudgeError, match="gave 1 verdicts for 2 claims"):
        asyncio.run(TypedJudge(short).verify_local_many(["x", "y"], "x", "q"))


def test_typed_judge_converts_every_method():
    typed = TypedJudge(_OneByOne())
    assert asyncio.run(typed.decompose(" A sentence. ", "a", "q")) == [
        DecomposedClaim("A sentence.")]
    assert asyncio.run(typed.verify_local("x", "x y", "q")) == Verdict("ENT", ("x",))
    assert asyncio.run(typed.verify_global("x", "ctx", "q", "NIC", None)) == Verdict(
        "CON", ("ctx",), 0.75)
