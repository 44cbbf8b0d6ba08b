"""Support, not just presence: where the final label is set, a grounded ENT must state the
claim's specifics."""

from __future__ import annotations

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.checks.evidence import grounded_verdict
from rt4chart.transforms.checks.specifics import supported_verdict, unsupported_specifics
from rt4chart.transforms.judges.base import Verdict
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context

CONTEXT = "The free trial lasts 14 days. Acme Corp sells plans. Plans renew monthly."
TRACE = Trace("t", "r", 0, "How long is the trial?", (Document("d", CONTEXT),), "x")
RENDERED = render_context(prepare(TRACE, SegmentConfig(5, 0)))
WHOLE = f"{TRACE.question}\n{RENDERED.text}"


def _final(claim: str, verdict: Verdict):
    return supported_verdict(grounded_verdict(verdict, RENDERED, claim), claim, WHOLE)


def test_an_ent_whose_quote_states_another_number_is_nic_naming_the_number():
    label, evidence, note, p = _final("The free trial lasts 30 days.",
                                      Verdict("ENT", ("The free trial lasts 14 days.",), 0.1))
    # The judge's own score is kept; the probability rule (transforms/common/probability.py) moves
    # it
    # to the NIC side of the run's threshold when the claim row is written.
    assert (label, evidence, p) == ("NIC", (), 0.1)
    assert note.startswith("ENT overturned: evidence lacks") and "30 days" in note


def test_an_ent_whose_quote_states_the_specifics_stands():
    label, evidence, note, p = _final("The trial lasts fourteen days.",
                                      Verdict("ENT", ("The free trial lasts 14 days.",), 0.1))
    assert (label, note, p) == ("ENT", None, 0.1)
    assert [e.text for e in evidence] == ["The free trial lasts 14 days"]


def test_a_number_the_quote_does_not_restate_stands_where_the_context_states_it():
    # The quote is about the trial; the claim's 14 is in the context: not a swapped number.
    label, _, note, _ = _final("The free trial lasts 14 days and plans renew monthly.",
                               Verdict("ENT", ("Plans renew monthly.",)))
    assert (label, note) == ("ENT", None)


def test_a_conversion_in_parentheses_is_not_a_specific_of_its_own():
    assert unsupported_specifics("The trail is 5 miles (8 km) long.", ["The trail is 5 miles "
                                 "long."], "The trail is 5 miles long.") == ()
    assert unsupported_specifics("The trail is 6 miles long.", ["The trail is 5 miles long."],
                                 "The trail is 5 miles long.") == ("number 6 miles",)
    assert unsupported_specifics("It is 79 degrees Fahrenheit (26 degrees Celsius) today.",
                                 ["It is 79 degrees today."], "It is 79 degrees today.") == ()


def test_only_specifics_overturn_a_name_the_quote_lacks_is_left_to_the_judge():
    # Names are where human labels accept world knowledge ("the Holocaust", "Great Britain").
    label, _, _, _ = _final("The company Globex sells plans.",
                            Verdict("ENT", ("Acme Corp sells plans.",)))
    assert label == "ENT"


def test_other_labels_pass_unchanged():
    grounded = grounded_verdict(Verdict("CON", ("The free trial lasts 14 days.",)), RENDERED,
                                "The free trial lasts 30 days.")
    assert supported_verdict(grounded, "The free trial lasts 30 days.", WHOLE) == grounded
    nic = ("NIC", (), None, 1.0)
    assert supported_verdict(nic, "The free trial lasts 30 days.", WHOLE) == nic


def test_a_number_the_quotes_add_up_to_is_not_a_swapped_number():
    # The paper's running example: 21 days = the trial's 14 + the extension's 7; the quote that
    # restates the claim (the eligibility rule) states no number of its own.
    rule = "Only new users who have verified their identity are eligible for the free trial."
    quotes = [rule, "The free trial lasts 14 days.", "can extend the trial once by 7 days"]
    claim = "A new identity-verified user can use the free trial for up to 21 days."
    assert unsupported_specifics(claim, quotes, " ".join(quotes)) == ()


def test_an_amount_percentage_weekday_or_time_found_nowhere_in_the_context_is_nic():
    # No quote restates the claim, but nothing in the context states these specifics at all.
    context = "Plans renew monthly. The office is open Monday to Friday from 9 am to 5 pm."
    for claim, lacking in (("Plans renew monthly at $49.", "amount $49"),
                           ("Plans renew monthly with a 15% discount.", "percentage 15%"),
                           ("The office is open on Sunday.", "weekday Sunday"),
                           ("The office is open until 8 pm.", "time 8 pm")):
        assert unsupported_specifics(claim, ["Plans renew monthly."], context) == (lacking,)
    # Stated elsewhere in the context: the pipeline's own evidence supports them.
    assert unsupported_specifics("The office opens at 9 am on Monday.",
                                 ["Plans renew monthly."], context) == ()


def test_a_bare_number_or_date_found_nowhere_needs_a_restating_quote():
    # Counts, ranges and world knowledge (accepted by human labels) are left to the judge.
    context = ("Albert and Bernard talk. It may take up to 45 minutes for cloves to soften. "
               "Store roasted garlic cloves in the refrigerator.")
    assert unsupported_specifics("The puzzle involves two boys.", ["Albert and Bernard talk."],
                                 context) == ()
    quote = ["Store roasted garlic cloves in the refrigerator."]
    assert unsupported_specifics("Roast the garlic cloves for 30-45 minutes.", quote,
                                 context) == ()
    assert unsupported_specifics("The Stamp Act was repealed on March 18, 1766.",
                                 ["The colonists protested the Stamp Act."], context) == ()
    # A quote restating the claim with a number of its own swaps it: NIC.
    assert unsupported_specifics("Cloves may take up to 30 minutes to soften.", [
        "It may take up to 45 minutes for cloves to soften."], context) == ("number 30 minutes",)
