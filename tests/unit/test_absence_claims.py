"""An `absence` label is accepted only when the claim's own text says the sources lack
something, whatever the judge said; otherwise the claim is a fact. Absence claims do not cover
a sentence about the world (issue 21, defect 2)."""

from __future__ import annotations

import pytest

from rt4chart.schemas.records import PlacedClaim
from rt4chart.transforms.checks.coverage import check_coverage
from rt4chart.transforms.decompose import MISLABELLED_NOTE, checked_kind, covering
from rt4chart.transforms.judges.offline.claims import decompose_claims
from rt4chart.transforms.text.absence import accepted_absence, states_absence

# Sentences written for this test, not taken from any corpus.
ABSENCES = [
    "The passages do not say when the bakery was founded.",
    "Neither document mentions the ferry's departure time.",
    "There is no information about the warranty period.",
    "The context does not specify which platform the train leaves from.",
    "No opening date for the library is given in the sources.",
    "Unfortunately, the articles do not mention the author's age.",
    "The text provides no details on the parking fees.",
]
FACTS = [
    "The free trial lasts 3 days.",
    "The bakery was founded in 1921.",
    "The ferry leaves at 7 a.m.",
    "Refunds are not available.",  # a negated fact is still a fact
    "The mayor did not mention the budget.",  # a person's silence is a fact about the world
    "The warranty covers two years.",
    "The passages do not say when it opened, but it is in Paris.",  # an absence and a fact
    "The documents do not mention the fee; the tour starts at 9.",
]


@pytest.mark.parametrize("text", ABSENCES)
def test_statements_about_what_the_sources_lack_are_absences(text):
    assert states_absence(text) and accepted_absence(text)


@pytest.mark.parametrize("text", FACTS)
def test_statements_about_the_world_are_not(text):
    assert not states_absence(text) and not accepted_absence(text)


def test_a_claim_that_names_nothing_may_stay_an_absence():
    assert accepted_absence("None mentioned.") and not states_absence("None mentioned.")


def test_a_mislabelled_fact_is_verified_as_a_fact_with_a_note():
    claim, note = checked_kind(PlacedClaim("The free trial lasts 3 days.", "absence"))
    assert (claim.kind, claim.text, note) == ("fact", "The free trial lasts 3 days.",
                                              MISLABELLED_NOTE)
    true = PlacedClaim(ABSENCES[0], "absence")
    assert checked_kind(true) == (true, None)
    fact = PlacedClaim("The ferry leaves at 7 a.m.", "fact")
    assert checked_kind(fact) == (fact, None)  # only the absence label is checked


def test_an_absence_claim_does_not_cover_a_sentence_about_the_world():
    sentence = "The free trial lasts 3 days."
    hidden = PlacedClaim("The passages do not say that the free trial lasts 3 days.", "absence")
    assert covering(sentence, [hidden]) == []
    extra = check_coverage(sentence, covering(sentence, [hidden]))
    assert (extra.extra_claim, extra.kind) == (sentence, "fact")
    # For a sentence that is itself an absence statement, its absence claim covers it.
    absent = ABSENCES[0]
    assert covering(absent, [PlacedClaim(absent, "absence")]) == [absent]
    assert check_coverage(absent, [absent]).extra_claim is None


def test_a_mixed_sentence_re_added_by_coverage_is_a_fact():
    sentence = "The passages do not say when it opened, but it is in Paris."
    extra = check_coverage(sentence, [])
    assert (extra.extra_claim, extra.kind) == (sentence, "fact")


def test_the_offline_decomposer_splits_an_absence_from_a_fact():
    got = [(c.text, c.kind) for c in decompose_claims(
        "The passages do not say when it opened, but it is in Paris.")]
    assert got == [("The passages do not say when it opened", "absence"),
                   ("it is in Paris.", "fact")]
