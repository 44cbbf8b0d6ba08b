"""`rt4chart.testing`'s assertions on answers built here (issue 47, defect 2): any iterable is
read once, and an answer passes only when it was checked and found grounded (incomplete,
partial and no_claim-only answers fail unless a flag allows them)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.schemas.results import Answer, Claim
from rt4chart.testing import assert_no_hallucination, hallucination_report


def claim(index: int, label: str | None, status: str = "ok") -> Claim:
    text = f"Claim {index}."
    return Claim(index, text, label, "fact", status,
                 "no_claim: asserts nothing checkable" if status == "no_claim" else None,
                 None, 0, text, 0, len(text), ())


def answer(tid: str, label: str | None = "ENT", *, status: str = "ok", partial: bool = False,
           claims: tuple[Claim, ...] | None = None) -> Answer:
    if claims is None:
        claims = (claim(0, label if status == "ok" else None,
                        "ok" if status == "ok" else "judge_error"),)
    reason = "1 claim(s) without verdict: judge_error: timeout" if status != "ok" else None
    return Answer(tid, "faq", label, status, None, (), claims, reason, "m", 1, 0, 0, None,
                  False, partial)


GROUNDED = answer("ok")
NIC = answer("nic", "NIC")
INCOMPLETE = answer("lost", None, status="incomplete")
PARTIAL = answer("cut", partial=True)
NO_CLAIM = answer("empty", claims=(claim(0, None, "no_claim"), claim(1, None, "no_claim")))
NO_CLAIM_AT_ALL = answer("none", claims=())

WRAPPERS = {
    "list": list,
    "tuple": tuple,
    "generator": lambda answers: (a for a in answers),
    "iter": iter,
    "filter": lambda answers: filter(lambda a: True, answers),
    "map": lambda answers: map(lambda a: a, answers),
}


class Result:
    """An AuditResult's two attributes the helpers read."""

    def __init__(self, answers, dead_letters=()):
        self.answers, self.dead_letters = answers, dead_letters


def _passes(answers, **flags) -> bool:
    try:
        assert_no_hallucination(answers, **flags)
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize("wrap", list(WRAPPERS))
def test_a_nic_among_grounded_answers_fails_however_the_answers_are_given(wrap):
    with pytest.raises(AssertionError, match="1 of 3 answers are not grounded") as caught:
        assert_no_hallucination(WRAPPERS[wrap]([GROUNDED, NIC, answer("ok2")]))
    assert "- trace 'nic' (route 'faq'): NIC" in str(caught.value)
    report = hallucination_report(WRAPPERS[wrap]([GROUNDED, NIC]))
    assert report.startswith("1 of 2 answers are not grounded")


answers_strategy = st.lists(st.sampled_from(
    [GROUNDED, NIC, INCOMPLETE, PARTIAL, NO_CLAIM, NO_CLAIM_AT_ALL]), max_size=8)


@given(answers_strategy, st.sampled_from(list(WRAPPERS)), st.booleans(), st.booleans(),
       st.booleans())
def test_any_iterable_gives_the_verdict_of_its_list(answers, wrap, incomplete, partial,
                                                    no_claim):
    flags = {"allow_incomplete": incomplete, "allow_partial": partial,
             "allow_no_claim": no_claim}
    assert _passes(WRAPPERS[wrap](answers), **flags) == _passes(list(answers), **flags)
    assert hallucination_report(WRAPPERS[wrap](answers), **flags) == hallucination_report(
        answers, **flags)
    # And the list's verdict is the rule: every answer checked and grounded (or allowed).
    allowed = {INCOMPLETE: incomplete, PARTIAL: partial, NO_CLAIM: no_claim,
               NO_CLAIM_AT_ALL: no_claim, GROUNDED: True, NIC: False}
    checked = [a for a in answers if a is not INCOMPLETE]
    assert _passes(answers, **flags) == (bool(checked) and all(allowed[a] for a in answers))


@pytest.mark.parametrize("unchecked, flag, said", [
    (INCOMPLETE, "allow_incomplete", "incomplete, not judged: 1 claim(s) without verdict"),
    (PARTIAL, "allow_partial", "ENT on part of the answer only: partial"),
    (NO_CLAIM, "allow_no_claim", "ENT with no claim checked: its 2 claims assert nothing "
                                 "checkable (no_claim)"),
    (NO_CLAIM_AT_ALL, "allow_no_claim", "ENT with no claim checked: its 0 claims"),
])
def test_an_unchecked_answer_fails_by_default_and_passes_when_allowed(unchecked, flag, said):
    with pytest.raises(AssertionError) as caught:
        assert_no_hallucination(Result((GROUNDED, unchecked)))
    message = str(caught.value)
    assert message.startswith("1 of 2 answers are not grounded:")
    assert said in message and f"({flag}=True" in message
    assert f"trace {unchecked.trace_id!r}" in message and "trace 'ok'" not in message
    assert_no_hallucination(Result((GROUNDED, unchecked)), **{flag: True})
    # A flag allows its own kind only.
    others = {"allow_incomplete", "allow_partial", "allow_no_claim"} - {flag}
    assert not _passes([GROUNDED, unchecked], **dict.fromkeys(others, True))


def test_no_claim_claims_are_listed_with_their_note():
    report = hallucination_report([NO_CLAIM])
    assert "claim 0 [not judged (no_claim), fact]: 'Claim 0.'" in report
    assert "note: no_claim: asserts nothing checkable" in report


def test_answers_all_left_out_say_nothing_is_grounded():
    with pytest.raises(AssertionError, match="none of the 2 answers was checked"):
        assert_no_hallucination(iter([INCOMPLETE, INCOMPLETE]), allow_incomplete=True)
    with pytest.raises(AssertionError, match="no answer was audited"):
        assert_no_hallucination(a for a in ())
    assert_no_hallucination(iter([GROUNDED, INCOMPLETE]), allow_incomplete=True)
