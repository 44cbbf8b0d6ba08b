"""The one assertion classifier: what a sentence is about decides, not how it is phrased.

Cases written for this test (none from the benchmark data): each rule with forms the rule was
not written from, and the same form carrying a fact, which must stay checkable.
"""

from __future__ import annotations

import pytest

from rt4chart.transforms.text.assertion import ABSENCE, FACT, NONE, SOURCE, classify


@pytest.mark.parametrize("sentence", [
    # about the answer's own form, lead-ins and headings
    "To wrap up, that is my final answer.",
    "In conclusion, the response above covers every point you raised:",
    "The following list outlines the key details:",
    "Below are the main points drawn from the documents.",
    "Summary of findings:",
    "## Overview",
    # about the sources
    "Both documents agree on this point.",
    "The third excerpt repeats what the first one says.",
    "The context provided is detailed enough to answer fully.",
    "Neither passage addresses this directly, so I relied on the others.",
    "(See documents 1, 3 and 4.)",
    # to the reader and the conversation
    "You might want to double-check this with a qualified professional.",
    "Please reach out if anything is unclear.",
    "I would advise seeking expert guidance before deciding.",
    "Hope that clears things up!",
    "Would you like me to go into more detail?",
    "Dear reader,",
    # refusals and impossibility
    "Had the context included that detail, I would have stated it.",
    "Sadly, this cannot be determined from what was provided.",
    "It is not possible to give a definitive answer with the information available.",
    "I'm afraid I can't tell from these passages.",
])
def test_sentences_that_assert_nothing_checkable(sentence):
    found = classify(sentence)
    assert not found.checkable, found


@pytest.mark.parametrize(("sentence", "kind"), [
    # plain-word facts, no numbers or names: the hard ones
    ("The soup is served cold.", FACT),
    ("Pets are welcome on the patio.", FACT),
    ("The bridge was rebuilt after the flood.", FACT),
    # the same frames as above, now carrying a fact
    ("To wrap up, the ferry leaves every hour.", FACT),
    ("In conclusion, the vaccine reduced hospital stays.", FACT),
    ("Please note that the pool closes at 8 pm.", FACT),
    ("You might want to book early, as tours sell out by March.", FACT),
    ("Hope that helps: the fee is $25.", FACT),
    ("Would you believe it opened in 1887?", FACT),
    ("Dear reader, the castle is closed in winter.", FACT),
    # about the sources, with content
    ("The second document says the mayor resigned in May.", SOURCE),
    ("According to passage 2, the ferry is free for children.", SOURCE),
    ("The passages do not mention whether parking is free.", ABSENCE),
    ("There are no details about the refund policy.", ABSENCE),
    # negation is content
    ("The museum does not open on holidays.", FACT),
    # a heading's title and a remark with a word outside the discourse vocabulary (issue 46)
    ("Step 4: Preparing The Sauce", FACT),
    ("Documents 2 and 5 cover the same ground.", SOURCE),
])
def test_sentences_that_assert_something(sentence, kind):
    found = classify(sentence)
    assert found.checkable, found
    assert found.kind == kind


def test_labels_are_not_numbers_and_names_are_specifics():
    assert classify("Option 1 or Option 2.").kind == NONE
    assert classify("See passages 1 and 3.").kind == NONE
    assert classify("The second passage repeats the same information.").kind == NONE
    found = classify("Option 1 costs $40 more than Option 2.")
    assert found.checkable and "$40" in found.specifics
    found = classify("The report was written by Maria Lopez.")
    assert "Maria Lopez" in found.specifics


def test_an_unknown_word_counts_as_content():
    # A word no vocabulary lists is about the world: an unseen form is checked, not dropped.
    assert classify("Zorbling is uncommon.").checkable
    assert classify("It is frobnicated.").checkable


def test_a_sentence_that_only_names_what_the_sources_lack_is_an_absence_without_content():
    found = classify("None mentioned in the passages.")
    assert found.kind == ABSENCE and not found.checkable
    # A conditional or a first-person refusal is not a claim about the sources.
    assert classify("If the passages did not say, I would have replied so.").kind == NONE
    assert classify("I cannot answer based on the passages.").kind == NONE
