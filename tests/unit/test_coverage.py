"""Decomposition coverage: no false sentence vanishes behind no claims or substituted claims,
and sentences that claim nothing need no claim."""

from __future__ import annotations

import pytest

from rt4chart.transforms.checks.coverage import Coverage, check_coverage, is_non_claim


@pytest.mark.parametrize("sentence", [
    # greetings and courtesy
    "Hello!",
    "Hi there,",
    "Thank you for your question!",
    "Great question!",
    "I hope this helps!",
    "Sure, I'll do my best to help you!",
    # offers
    "Let me know if you have any further questions.",
    "Feel free to ask if you need more help.",
    "If you have any other questions, please don't hesitate to ask.",
    "Is there anything else I can help you with?",
    # refusals without content
    "Unable to answer based on the given passages.",
    "I'm sorry, but I cannot answer this question based on the provided passages.",
    "There is no information in the given passages.",
    # statements about the answer's own form
    "Therefore, the answer is:",
    "The answer is:",
    "Here is a summary of the article in 80 words:",
    "Sure! Here's the answer:",
    # headings of discourse words only
    "## Details",
    "**Pros:**",
    "Summary:",
    # bare citations
    "This is mentioned in passage 3.",
    "(Passage 2)",
    "[2]",
    "Source: passage 1",
    "As stated in the article.",
    # no words at all
    "***",
])
def test_sentences_that_claim_nothing(sentence):
    assert is_non_claim(sentence)
    assert check_coverage(sentence, []) == Coverage()


@pytest.mark.parametrize("sentence", [
    "The free trial lasts 30 days.",
    "Based on the given passages, the trial lasts 30 days.",
    "Great question! The trial lasts 30 days.",
    "The passages do not say when Acme opened.",
    "Hours: Monday to Friday",
    "- Free WiFi",
    "It is cheap.",
    # headings with a word about the world are verified, whatever their form (issue 46)
    "Key features:",
    "Passage 3: Attaching Frames Together",
    "Step 2: Prepare The Dough",
    "## Amoxicillin cures cancer in 90% of patients",
])
def test_sentences_that_claim_something(sentence):
    assert not is_non_claim(sentence)
    assert check_coverage(sentence, []).extra_claim is not None


def test_an_offer_or_a_question_is_exempt_only_when_it_names_nothing_of_the_world():
    # Advice and questions are exempt only when every word is discourse vocabulary: the trial
    # is a word about the world, so a judge could hide a fact behind it (issue 46).
    assert check_coverage("Let me know if you want more details.", []) == Coverage()
    assert check_coverage("Would you like me to go into more detail?", []) == Coverage()
    for sentence in ("Let me know if you want the trial.",
                     "Would you like to know more about the trial?",
                     "Let me know if you want the 30-day trial."):
        assert not is_non_claim(sentence)
        assert check_coverage(sentence, []).extra_claim == sentence


def test_no_claims_or_substituted_claims_cannot_make_a_sentence_vanish():
    for claims in ([], ["Plans renew monthly."], ["The free trial is free."]):
        result = check_coverage("The free trial lasts 30 days.", claims)
        assert result.extra_claim == "The free trial lasts 30 days."
        assert "number 30 days" in result.uncovered


def test_claims_that_restate_the_sentence_cover_it():
    sentence = "The free trial lasts 30 days."
    assert check_coverage(sentence, ["The free trial lasts 30 days."]) == Coverage()
    assert check_coverage(sentence, ["The trial is free.", "The trial lasts thirty days."]) == (
        Coverage())
    # Inflections and derivations: "renews" / "renewal".
    assert check_coverage("Plans renew monthly.", ["The plan's renewal is monthly."]) == (
        Coverage())


def test_a_dropped_number_name_or_negation_is_never_tolerated():
    dropped_number = check_coverage("It has 120 rooms and a pool.", ["It has a pool.",
                                                                     "It has rooms."])
    assert dropped_number.extra_claim and dropped_number.uncovered == ("number 120",)
    dropped_name = check_coverage("The hotel near Acme Park has a pool.", ["The hotel has a pool."])
    assert dropped_name.extra_claim and "entity Acme Park" in dropped_name.uncovered
    dropped_negation = check_coverage("The hotel has no pool.", ["The hotel has a pool."])
    assert dropped_negation.extra_claim == "The hotel has no pool."
    assert dropped_negation.uncovered == ("negation",)


def test_a_stray_word_or_two_is_tolerated_but_not_more_or_half_the_sentence():
    one_stray = check_coverage("Overall, the staff are very friendly and attentive.",
                               ["The staff are friendly."])
    assert one_stray == Coverage(("attentive",), None)
    many = check_coverage("The staff are friendly, attentive, patient and knowledgeable.",
                          ["The staff are friendly."])
    assert many.extra_claim and set(many.uncovered) == {"attentive", "patient", "knowledgeable"}
    half = check_coverage("It is cheap.", ["The food is good."])
    assert half == Coverage(("cheap",), "It is cheap.")


def test_list_markers_and_source_references_are_not_content():
    assert check_coverage("2. Rinse the hair well (Passage 3).", ["Rinse the hair well."]) == (
        Coverage())
    extra = check_coverage("- The trial lasts 30 days.", []).extra_claim
    assert extra == "The trial lasts 30 days."


def test_no_sentence_is_waived_for_its_length_its_topic_or_an_exclamation_mark():
    # A short remark, an off-topic sentence and an exclamation are re-added when they hold a
    # word outside the discourse vocabulary, in every language (issue 46).
    for sentence in ("Fun topic, this.", "It is delicious.", "Der Eintritt ist frei!",
                     "Viel Spaß beim Zelten!", "The medication can cause hair loss."):
        assert check_coverage(sentence, []).extra_claim == sentence, sentence


def test_a_greeting_or_thanks_before_a_fact_is_split_off_the_added_claim():
    assert check_coverage("Thank you, amoxicillin is safe with alcohol.", []).extra_claim == (
        "amoxicillin is safe with alcohol.")
    assert check_coverage("Vielen Dank! Das Medikament heilt Krebs.", []).extra_claim == (
        "Das Medikament heilt Krebs.")
