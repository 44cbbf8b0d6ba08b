from __future__ import annotations

import pytest

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.checks.evidence import align, fragments, ground, normalise
from rt4chart.transforms.judges.base import JudgeError
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context, render_window

DOC = ("Only new users who have verified their identity are eligible. The free trial lasts "
       "14 days. Eligible users can extend the trial once by 7 days.")


@pytest.fixture
def prepared():
    trace = Trace("t", "r", 0, "", (Document("policy", DOC), Document("faq", "Is it free? Yes.")),
                  "")
    return prepare(trace, SegmentConfig(2, 1))


def test_normalise_maps_back_to_source_offsets():
    n = normalise("  The  FREE-trial, (14 days)!")
    assert n.text == "the free trial 14 days"
    assert [n.origin[i] for i in (0, 4, 9)] == [2, 7, 12]


@pytest.mark.parametrize("quote", [
    "The free trial lasts 14 days.",
    "the FREE trial   lasts 14-days",
    "free trial lasts 14 days",
    "“The free trial lasts 14 days”",
])
def test_quotes_found_despite_case_whitespace_punctuation(prepared, quote):
    evidence, missing = align([quote], render_context(prepared))
    assert missing == 0
    (ev,) = evidence
    assert (ev.doc_id, ev.sentence_index) == ("policy", 1)
    assert DOC[ev.start:ev.end] == ev.text and "14 days" in ev.text


@pytest.mark.parametrize("quote", [
    "The free trial lasts 30 days.",      # changed number
    "The free trial lasts 14 weeks.",     # changed word
    "The trial lasts 14 days.",           # dropped word
    "ree trial lasts 14 day",             # not on word boundaries
    "the",                                # too unspecific
    "",
])
def test_invented_or_unspecific_quotes_are_not_evidence(prepared, quote):
    evidence, missing = align([quote], render_context(prepared))
    assert evidence == () and missing == 1


def test_quote_spanning_sentences_and_ellipsis(prepared):
    evidence, missing = align(["lasts 14 days. Eligible users", "Only new users ... are eligible"],
                              render_context(prepared))
    assert missing == 0
    assert sorted({e.sentence_index for e in evidence}) == [0, 1, 2]
    for e in evidence:
        assert DOC[e.start:e.end] == e.text


def test_local_evidence_must_lie_in_the_window(prepared):
    window = render_window(prepared, prepared.windows[0])  # sentences 0 and 1
    allowed = {s.index for _, s in window.segments}
    assert align(["extend the trial once by 7 days"], window, allowed) == ((), 1)
    (ev,), missing = align(["The free trial lasts 14 days"], window, allowed)
    assert ev.sentence_index == 1 and missing == 0


def test_fragments_drop_short_parts():
    assert fragments("the … free trial") == ["free trial"]


def test_ground_rules(prepared):
    evidence, _ = align(["The free trial lasts 14 days."], render_context(prepared))
    claim = "The free trial lasts 30 days."
    assert ground("CON", evidence, 0, 1, claim) == ("CON", evidence, None)
    assert ground("NIC", evidence, 0, 1, claim) == ("NIC", (), None)
    label, ev, note = ground("ENT", (), 2, 2, claim)
    assert (label, ev) == ("NIC", ()) and "none of 2 quotes" in note
    label, _, note = ground("ENT", (), 0, 0, claim)
    assert label == "NIC" and "no quote" in note
    label, ev, note = ground("ENT", evidence, 1, 2, claim)
    assert label == "ENT" and "1 of 2 quotes not found" in note
    # A real quote about something else is not evidence for this claim.
    label, _, note = ground("ENT", evidence, 0, 1, "Paris hosts the Olympic games.")
    assert label == "NIC" and "no content word" in note


@pytest.mark.parametrize("result", [None, "ENT", ("ENT",), ("MAYBE", []), ("ENT", "quote"),
                                    ("ENT", [3])])
def test_malformed_judge_results_are_judge_errors(prepared, result):
    from rt4chart.transforms.checks.evidence import grounded_verdict
    from rt4chart.transforms.judges.base import JudgeError

    with pytest.raises(JudgeError):
        grounded_verdict(result, render_context(prepared), "The free trial lasts 14 days.")


def test_grounded_verdict_keeps_real_support(prepared):
    from rt4chart.transforms.checks.evidence import grounded_verdict

    label, evidence, note, p = grounded_verdict(
        ("ENT", ["The free trial lasts 14 days."]), render_context(prepared),
        "The free trial lasts 14 days.")
    assert (label, note, p) == ("ENT", None, 0.0) and evidence[0].sentence_index == 1


def test_claim_probability_follows_the_judge_unless_grounding_overturns_it(prepared):
    from rt4chart.transforms.checks.evidence import grounded_verdict

    context = render_context(prepared)
    quote = ["The free trial lasts 14 days."]
    # The judge's own probability stands when its label stands.
    assert grounded_verdict(("ENT", quote, 0.12), context, quote[0])[3] == 0.12
    assert grounded_verdict(("CON", quote, 0.97), context, "The trial lasts 30 days.")[3] == 0.97
    # An ENT with an invented quote becomes NIC; the judge's score is kept, and the rule of
    # rt4chart.transforms.common.probability moves it to the NIC side of the threshold (not to 1).
    label, _, _, p = grounded_verdict(("ENT", ["Trials last forever."], 0.05), context,
                                      "Trials last forever.")
    assert (label, p) == ("NIC", 0.05)
    # No probability from the judge: 0 or 1 from the label.
    assert grounded_verdict(("NIC", []), context, "x")[3] == 1.0
    for bad in (("ENT", quote, 1.5), ("ENT", quote, "0.2"), ("ENT", quote, True)):
        with pytest.raises(JudgeError, match="p_unsupported"):
            grounded_verdict(bad, context, quote[0])


LETTER = ("The word appears in a letter of 1754. Serendipity was coined by Horace Walpole, who "
          "took it from a Persian fairy tale.")


@pytest.fixture
def letter():
    trace = Trace("t", "r", 0, "", (Document("letter", LETTER),), "")
    return render_context(prepare(trace, SegmentConfig(2, 1)))


@pytest.mark.parametrize("label", ["CON", "ENT"])
@pytest.mark.parametrize("quote", ["The word", "the WORD", "a letter", "Serendipity"])
def test_a_quote_of_one_content_word_is_not_evidence(letter, label, quote):
    claim = "The word serendipity was coined in a letter by Horace Walpole."
    evidence, missing = align([quote], letter)
    assert evidence and missing == 0  # found in the context...
    got, kept, note = ground(label, evidence, missing, 1, claim)
    assert (got, kept) == ("NIC", ())  # ...but too short to say anything about the claim
    assert "too short to be evidence" in note


def test_a_specific_quote_keeps_the_label_beside_a_one_word_one(letter):
    claim = "Serendipity was coined by Samuel Johnson."
    evidence, missing = align(["The word", "Serendipity was coined by Horace Walpole"], letter)
    got, kept, note = ground("CON", evidence, missing, 2, claim)
    assert got == "CON" and [e.text for e in kept] == ["Serendipity was coined by Horace Walpole"]


def test_a_claim_of_one_content_word_needs_no_more_in_its_quote(letter):
    evidence, missing = align(["Serendipity"], letter)
    assert ground("ENT", evidence, missing, 1, "Serendipity.")[0] == "ENT"
