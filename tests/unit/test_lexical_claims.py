"""The offline judge's decomposition: claim splitting, kinds and fragments, the absence check."""

from __future__ import annotations

import pytest

from rt4chart.transforms.judges.offline import claims as lexical_claims


def test_decompose_keeps_negation_numbers_and_modals() -> None:
    sentence = "The clinic did not open until 9 a.m. on 3 March 2021."
    assert lexical_claims.decompose_sentence(sentence) == [sentence]
    (claim,) = lexical_claims.decompose_sentence("Patients may never be charged more than $40.")
    assert "may" in claim and "never" in claim and "40" in claim


def test_decompose_splits_coordinated_clauses() -> None:
    assert lexical_claims.decompose_sentence("X is A and Y is B.") == ["X is A", "Y is B."]
    sentence = "The food is cheap, but the staff are rude; parking is free."
    assert lexical_claims.decompose_sentence(sentence) == [
        "The food is cheap",
        "the staff are rude",
        "parking is free.",
    ]


def test_decompose_is_conservative_without_a_second_clause() -> None:
    sentence = "She bought a visa and flew to Turkey with her brother."
    assert lexical_claims.decompose_sentence(sentence) == [sentence]
    assert lexical_claims.decompose_sentence("Salt and pepper are served.") == [
        "Salt and pepper are served."
    ]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("1. The dog barked.", ["The dog barked."]),
        ("- The dog barked.", ["The dog barked."]),
        ("  * The dog barked.  ", ["The dog barked."]),
        ("(a) The dog barked.", ["The dog barked."]),
        ("   The dog barked.\n", ["The dog barked."]),
    ],
)
def test_decompose_strips_bullets_and_whitespace(sentence: str, expected: list[str]) -> None:
    assert lexical_claims.decompose_sentence(sentence) == expected


@pytest.mark.parametrize("sentence", ["  ...  ", "", "   ", "- ", "1. ", "?!", "— ; —",
                                      "and and and"])
def test_decompose_returns_nothing_without_alphanumeric_content(sentence: str) -> None:
    assert lexical_claims.decompose_sentence(sentence) == []


@pytest.mark.parametrize(
    "sentence",
    ["Yes.", "; X is A ;", "3", "A and B and C is D", "東京は首都です。"],
)
def test_decompose_never_returns_empty_strings(sentence: str) -> None:
    claims = lexical_claims.decompose_sentence(sentence)
    assert claims
    assert all(c and c == c.strip() for c in claims)


@pytest.mark.parametrize(
    "sentence",
    [
        # greetings
        "Hello!", "Hi there,", "Good morning!", "Dear customer,",
        # offers
        "Let me know if you have any further questions.", "I hope this helps!",
        "Feel free to ask if anything is unclear.", "If you have any other questions, ask me.",
        # refusals without content
        "Unable to answer based on given passages.",
        "Unable to answer based on the given passages.",
        "I'm sorry, but I cannot answer that question.",
        "Therefore, I cannot provide a more detailed answer based solely on the given passages.",
        # statements about the answer's own form
        "Sure!", "Here's the summary within 200 words:",
        "Here is a summary of the news in 38 words",
        "Therefore, the answer is:", "The answer is as follows.",
        # headings
        "Similarities:", "Key points:", "## Overview", "Passage 2:",
        # bare citations
        "(Passage 1)", "[1]", "[1][2]", "(Passage 3:1)", "Source: passage 2",
        "Passages 1 and 3.", "This is mentioned in passage 3.",
    ],
)
def test_a_sentence_that_asserts_nothing_has_no_claims(sentence: str) -> None:
    assert lexical_claims.decompose_claims(sentence) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "The passages do not provide specific instructions on how to create a schedule.",
        "Passage 2 does not mention the opening hours.",
        "There is no information about the price of the tour.",
        "The exact price is not specified in the passages.",
        "None mentioned in the passages.",
        "Unable to answer based on given passages: the passage does not say when it opened.",
    ],
)
def test_a_sentence_about_what_the_sources_lack_is_one_absence_claim(sentence: str) -> None:
    (claim,) = lexical_claims.decompose_claims(sentence)
    # A refusal of discourse words only that opens the sentence is split off (issue 46).
    said = sentence.split(": ", 1)[-1]
    assert (claim.text, claim.kind, claim.fragments) == (said, "absence", (said,))
    # Judges with the plain contract see factual claims only.
    assert lexical_claims.decompose_sentence(sentence) == []


@pytest.mark.parametrize("sentence", ["These raffles are not included in the ticket price.",
                                      "3", "Passage 3 says the museum opened in 1990.",
                                      "Hey Jude was released in 1968."])
def test_claims_about_the_world_that_look_like_non_claims_stay_factual(sentence: str) -> None:
    (claim,) = lexical_claims.decompose_claims(sentence)
    assert (claim.text, claim.kind) == (sentence, "fact")


def test_factual_claims_are_their_own_fragments_verbatim_in_the_sentence() -> None:
    sentence = "1. The food is cheap, but the staff are rude; parking is free."
    claims = lexical_claims.decompose_claims(sentence)
    assert [c.kind for c in claims] == ["fact"] * 3
    for claim in claims:
        assert claim.fragments == (claim.text,) and claim.text in sentence


def test_decompose_keeps_a_negated_claim_about_the_world() -> None:
    sentence = "The museum does not open on Sunday."
    assert lexical_claims.decompose_sentence(sentence) == [sentence]


PRICE = "The price of the guided tour is $50 per person. The tour starts at 9 a.m."


def test_an_absence_claim_is_ent_without_a_quote_when_the_text_lacks_it() -> None:
    label, quotes, p = lexical_claims.verify_absence_scored(
        "The passages do not mention how long the tour lasts.", PRICE)
    assert (label, quotes) == ("ENT", [])
    assert 0 <= p < lexical_claims.P_THRESHOLD


def test_an_absence_claim_is_con_quoting_the_sentence_that_says_it() -> None:
    label, quotes, p = lexical_claims.verify_absence_scored(
        "The passages do not mention the price of the guided tour.", PRICE)
    assert label == "CON"
    assert quotes == ["The price of the guided tour is $50 per person."]
    assert p >= lexical_claims.PRESENT_COVER


def test_an_absence_claim_naming_nothing_is_checked_against_the_question() -> None:
    claim = "None mentioned in the passages."
    assert lexical_claims.verify_absence_scored(claim, PRICE, "What is the tour price?")[0] == "CON"
    assert lexical_claims.verify_absence_scored(claim, PRICE, "Is parking free nearby?")[:2] == (
        "ENT", [])
    assert lexical_claims.verify_absence_scored(claim, "", "")[:2] == ("ENT", [])
