"""Non-claims from a judge (issue 32): a claim whose text asserts nothing checkable is a
`no_claim` row, outside the answer's label; the classifier that decides it never calls a
checkable fact `none`. Fresh sentences written for these tests (none from RAGTruth)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.pipeline.annotate.verdicts import TraceVerdict
from rt4chart.pipeline.report.trace_view import answer_marks, claim_label
from rt4chart.schemas.records import (
    NO_CLAIM,
    ClaimVerdict,
    DecomposeResult,
    Document,
    PlacedClaim,
    RunInfo,
    Trace,
)
from rt4chart.transforms.aggregate import answer_rows
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.decompose import limit_claims, no_claim_note, number_claims
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.text.assertion import classify

HELD_OUT = Path(__file__).parents[1] / "data" / "claimlike" / "heldout_facts_32.jsonl"
FACTS = [json.loads(line)["text"] for line in HELD_OUT.read_text().splitlines() if line.strip()]

# The issue's examples, then fresh variants of each form.
NON_CLAIMS = [
    "Passage 1 and Passage 2",
    "Based on the given passages, the lyrics are:",
    "Passage 3 provides the necessary information to answer the question.",
    "Therefore, these steps are based on the information provided in passages 1-2.",
    "Documents 2 and 4",
    "According to the provided passages, the main points are:",
    "Thus, it is recommended to speak with your pharmacist for more specific advice.",
    "Passage 2 contains the relevant information to answer this question.",
    "Hence, these tips are based on the details given in passages 3 and 4.",
]
# Lead-ins that name an action or a thing of the world, and referrals to a trade the
# vocabulary does not list, are verified (issue 46): a lead-in can carry a fact ("here is how
# amoxicillin cures cancer:"), and only discourse vocabulary proves there is nothing to check.
CHECKED_NOW = [
    "Based on the given passages, here is how to repot an orchid:",
    "Based on the passages provided, here's a short guide on how to descale a kettle:",
    "Therefore, it's recommended to consult further resources or seek guidance from an "
    "experienced sewer for more detailed instructions.",
    "So, it's advisable to consult a qualified electrician for further guidance.",
]


def test_the_issue_s_non_claims_and_fresh_variants_assert_nothing():
    for text in NON_CLAIMS:
        assert not classify(text).checkable, text
        assert no_claim_note(PlacedClaim(text)) is not None, text
    for text in CHECKED_NOW:
        assert classify(text).checkable, text
        assert no_claim_note(PlacedClaim(text)) is None, text


def test_no_held_out_checkable_fact_is_called_none():
    assert len(FACTS) >= 70
    called_none = [t for t in FACTS if not classify(t).checkable]
    assert called_none == []
    assert all(no_claim_note(PlacedClaim(t)) is None for t in FACTS)


LEAD_INS = ["Based on the passages, ", "According to the given passages, ", "Therefore, ",
            "Based on the information provided, ", "In summary, ", "So, ",
            "From the passages provided, ", "Overall, "]


def _led(lead_ins: list[str], fact: str) -> str:
    body = fact[2:] if fact[:2] in ("- ", "* ") else fact
    return "".join(lead_ins) + body[0].lower() + body[1:]


def test_a_lead_in_cannot_hide_a_fact():
    # A compromised decomposer phrasing a fact as "Based on the passages, ..." keeps it checked.
    hidden = [_led([lead], f) for f in FACTS for lead in LEAD_INS
              if not classify(_led([lead], f)).checkable]
    assert hidden == []


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(FACTS), st.lists(st.sampled_from(LEAD_INS), min_size=2, max_size=3))
def test_stacked_lead_ins_cannot_hide_a_fact(fact, lead_ins):
    assert classify(_led(lead_ins, fact)).checkable, _led(lead_ins, fact)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_the_classifier_never_raises(text):
    found = classify(text)
    assert found.kind in ("none", "fact", "source", "absence")


def test_an_absence_claim_is_checked_not_set_aside():
    assert no_claim_note(PlacedClaim("None mentioned in the passages.", kind="absence")) is None


# --- numbering, coverage and the answer -------------------------------------------------------

CONTEXT = "The kettle has a removable limescale filter. The warranty covers the heating element."
ANSWER = "Passage 1 and Passage 2. The warranty lasts 5 years."
TRACE = Trace("t", "r", 0, "What does the warranty cover?", (Document("d", CONTEXT),), ANSWER)
PREPARED = prepare(TRACE, SegmentConfig(25, 10))


def _numbered(second: tuple[PlacedClaim, ...]):
    return number_claims(PREPARED, [
        DecomposeResult("t", 0, (PlacedClaim("Passage 1 and Passage 2"),), "ok"),
        DecomposeResult("t", 1, second, "ok")])


def test_a_non_claim_is_numbered_apart_and_covers_nothing():
    # The judge hides the false sentence behind a non-claim: the sentence is re-added whole.
    hidden = _numbered((PlacedClaim("Passage 2 provides the information to answer this."),))
    assert [(c.claim_index, c.text) for c in hidden.no_claims] == [
        (0, "Passage 1 and Passage 2"), (1, "Passage 2 provides the information to answer this.")]
    assert [(c.claim_index, c.text) for c in hidden.claims] == [
        (2, "The warranty lasts 5 years.")]
    assert all(c.kind_note.startswith("no_claim: the claim asserts nothing checkable")
               for c in hidden.no_claims)


def test_non_claims_count_towards_the_claim_limit():
    claim_set = _numbered((PlacedClaim("The warranty lasts 5 years."),))
    cut = limit_claims(claim_set, LimitsConfig(max_claims_per_answer=1, oversize="truncate"))
    assert ([c.text for c in cut.no_claims], cut.claims) == (["Passage 1 and Passage 2"], ())


def _verdict(claim, label: str) -> ClaimVerdict:
    return ClaimVerdict(claim, ("NIC",), "NIC", None, label, "ok", (), None,
                        p_unsupported=0.0 if label == "ENT" else 0.9)


def test_a_non_claim_has_a_row_but_no_part_in_the_label_or_the_spans():
    claim_set = _numbered((PlacedClaim("The warranty lasts 5 years."),))
    (fact,) = claim_set.claims
    run = RunInfo("m", "h")
    at = datetime(2026, 1, 1, tzinfo=UTC)
    for label, hallucinated in (("ENT", False), ("NIC", True)):
        answer, rows = answer_rows(claim_set, [_verdict(fact, label)], run, at)
        assert (answer.label, answer.status, answer.hallucinated) == (label, "ok", hallucinated)
        assert answer.n_claims == 2 and answer.reason is None
        empty = next(r for r in rows if r.status == NO_CLAIM)
        assert (empty.label, empty.p_unsupported, empty.claim) == (
            None, None, "Passage 1 and Passage 2")
        assert all(s.char_start >= len("Passage 1 and Passage 2.")
                   for s in answer.hallucinated_spans)
    # Only non-claims: the answer asserts nothing unsupported.
    only = number_claims(PREPARED, [DecomposeResult("t", 0, (PlacedClaim("Passage 1 and 2"),),
                                                    "ok")
                                    ] + [DecomposeResult("t", 1, (PlacedClaim(
                                        "The warranty lasts 5 years."),), "ok")])
    answer, _ = answer_rows(only, [_verdict(only.claims[0], "ENT")], run, at)
    assert answer.label == "ENT"


def test_the_report_and_annotations_show_a_non_claim_apart():
    empty = {"claim_index": 0, "sentence_index": 0, "answer_start": 0, "answer_end": 24,
             "label": None, "status": NO_CLAIM, "spans": []}
    failed = {**empty, "claim_index": 1, "status": "judge_error"}
    wrong = {**empty, "claim_index": 2, "label": "NIC", "status": "ok"}
    assert [claim_label(c) for c in (empty, failed, wrong)] == ["NO_CLAIM", "ERR", "NIC"]
    # Where a non-claim and a NIC claim cover the same words, the NIC marks them.
    assert answer_marks([empty, wrong]) == [(0, 24, 0, "NIC")]
    assert answer_marks([empty]) == [(0, 24, 0, "NO_CLAIM")]
    verdict = TraceVerdict({"trace_id": "t"}, (empty, failed, wrong))
    assert [c["claim_index"] for c in verdict.flagged] == [1, 2]
