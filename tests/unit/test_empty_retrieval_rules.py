"""An empty retrieval's rules without a pipeline: `contexts: []` is valid (nothing was
retrieved), anything that is not a list is not; a claim with nothing retrieved is NIC unless it
says the sources lack something (ENT), and a trace with documents is never taken for one."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.schemas.records import ABSENCE, FACT, SOURCE, Claim, PreparedTrace, TraceKey
from rt4chart.schemas.requests import GlobalRequest
from rt4chart.transforms.common.fields import InvalidTrace, parse_contexts
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context
from rt4chart.transforms.validate import parse_trace
from rt4chart.transforms.verify_global import (
    NOTHING_RETRIEVED,
    nothing_retrieved,
    unretrieved_verdict,
)

NOT_A_LIST = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                       st.text(), st.dictionaries(st.text(max_size=5), st.text(max_size=5)))
DOC_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                   min_size=1, max_size=60).filter(lambda t: any(c.isalnum() for c in t))


@given(st.sampled_from([[], ()]))
def test_an_empty_list_is_an_empty_retrieval(value):
    assert parse_contexts(value) == ()


@given(NOT_A_LIST)
def test_anything_but_a_list_is_refused_with_the_reason(value):
    with pytest.raises(InvalidTrace, match="'contexts' must be a list"):
        parse_contexts(value)


def test_a_record_without_contexts_is_refused_and_one_with_an_empty_list_is_a_trace():
    with pytest.raises(InvalidTrace, match="'contexts' must be a list"):
        parse_trace({"trace_id": "t", "answer": "The museum opened in 1990."})
    trace = parse_trace({"trace_id": "t", "answer": "The museum opened in 1990.",
                         "contexts": []})
    assert trace.contexts == ()


def _request(prepared: PreparedTrace, kind: str) -> GlobalRequest:
    claim = Claim("t", 0, "The museum opened in 1990.", 0, 0, 26, kind=kind)
    return GlobalRequest(TraceKey("t", "r", "2024-06-01"), claim, (), "NIC", None,
                         render_context(prepared), None, "When?")


def _prepared(contexts: list) -> PreparedTrace:
    trace = parse_trace({"trace_id": "t", "answer": "The museum opened in 1990.",
                         "contexts": contexts})
    return prepare(trace, SegmentConfig())


@given(st.sampled_from([FACT, SOURCE]))
def test_a_checkable_claim_with_nothing_retrieved_is_nic_with_the_reason(kind):
    request = _request(_prepared([]), kind)
    assert nothing_retrieved(request)
    verdict = unretrieved_verdict(request)
    assert (verdict.label, verdict.status, verdict.note) == ("NIC", "ok", NOTHING_RETRIEVED)
    assert verdict.evidence == () and verdict.p_unsupported == 1.0


def test_an_absence_claim_with_nothing_retrieved_is_ent():
    verdict = unretrieved_verdict(_request(_prepared([]), ABSENCE))
    assert verdict.label == "ENT" and verdict.note == NOTHING_RETRIEVED


@given(st.lists(DOC_TEXT, min_size=1, max_size=3))
def test_a_trace_with_documents_is_never_taken_for_an_empty_retrieval(texts):
    prepared = _prepared(texts)
    if prepared.sentences:  # one without sentences is a dead letter of segment
        assert not nothing_retrieved(_request(prepared, FACT))


@pytest.mark.parametrize("kind", [FACT, ABSENCE])
def test_a_fault_deciding_an_empty_retrievals_claim_leaves_it_without_a_verdict(kind):
    """The graph's NothingRetrieved step is guarded: a fault on one claim (injected as the
    guard does) is that claim's judge_error, so its answer ends incomplete, never ENT."""
    from rt4chart.transforms.common import guard
    from rt4chart.transforms.verify_global import _UnretrievedFn

    fn, request = _UnretrievedFn(keyed=False), _request(_prepared([]), kind)
    hook = guard.fault_hook
    try:
        guard.fault_hook = lambda step, element: (_ for _ in ()).throw(RuntimeError("boom"))
        (verdict,) = list(fn.process(request))
    finally:
        guard.fault_hook = hook
    assert (verdict.label, verdict.status) == (None, "judge_error")
    assert "verify_global" in verdict.note and "boom" in verdict.note
    (plain,) = list(fn.process(request))  # without the fault: the rule's verdict
    assert plain.status == "ok" and plain.label == ("ENT" if kind == ABSENCE else "NIC")
