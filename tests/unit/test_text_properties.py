"""Properties of the text package's readers (Hypothesis): the number, date and quantity reader,
the tokeniser and stemmer, and the assertion classifier never raise on any text and keep their
invariants. The budget is the profile of tests/conftest.py; each input a search once found
wrong is kept as an @example."""

from __future__ import annotations

import math
import re

from hypothesis import example, given
from hypothesis import strategies as st

from rt4chart.transforms.text import assertion, quantities, words
from rt4chart.transforms.text.language import has_cjk
from rt4chart.transforms.text.normalize import normalize

from text_strategies import DIGIT_ZEROS, any_or_structured, in_script
from text_strategies import quantities as phrases

KINDS = {assertion.NONE, assertion.FACT, assertion.SOURCE, assertion.ABSENCE}


# --- numbers, dates, quantities ------------------------------------------------------------


def _well_formed(q: quantities.Quantity) -> None:
    assert isinstance(q.value, float) and not math.isnan(q.value)
    low, high = q.interval()
    assert low <= high
    assert q.unit is None or q.unit in set(quantities.UNITS.values())


@given(any_or_structured)
@example("He treated hundreds of troops.")  # issue 32: int.is_integer (Python 3.12 only)
@example("a few thousand dollars and tens of millions of users")
@example("It costs \u00a31,200 or 3.5 thousand euros")
@example("OVER 0")  # found: 0 * inf made the upper end nan
def test_the_reader_reads_any_text_into_well_formed_specifics(text):
    found = quantities.read(text)
    for q in (*found.quantities, *found.ranges):
        _well_formed(q)
    for r in found.ranges:
        assert r.low is not None and r.high is not None and r.low < r.high
    for when in found.whens:
        assert when.kind in ("date", "weekday", "time")
        if when.kind == "time":
            assert 0 <= when.value[0] < 1440
        if when.kind == "date":
            year, month, day = when.value
            assert 1 <= month <= 12 and (day is None or 1 <= day <= 31)
    terms = quantities.number_terms(text)
    assert all(isinstance(t, str) and t for t in terms)
    assert quantities.number_terms(text) == terms  # no state carried between readings


@given(phrases())
@example("hundreds of troops")
@example("about 30 days")
@example("$1.2 million")
@example("$0.100")  # found: a thousands group never starts with 0
@example("$1.100")  # found: a full stop after the last group ends the sentence
def test_reading_a_quantity_twice_gives_the_same_terms(phrase):
    """A quantity stated twice states nothing the single statement does not."""
    once = quantities.number_terms(phrase)
    assert quantities.number_terms(f"{phrase}. Then {phrase}.") == once
    assert quantities.number_terms(phrase) == once


@given(phrases(), st.sampled_from(sorted(DIGIT_ZEROS.values())))
@example("May 1, 2024", "\u0660")
@example("about 30 days", "\u0966")
@example("$1,200", "\uff10")
def test_every_digit_script_reads_as_ascii_digits(phrase, zero):
    ascii_phrase = in_script(phrase, "0") if zero != "0" else phrase
    assert quantities.number_terms(in_script(ascii_phrase, zero)) == (
        quantities.number_terms(ascii_phrase))


@given(phrases(), phrases())
@example("a few thousand", "over 0")  # found: nan ends compare unequal to themselves
@example("under 0 km", "more than 0%")
def test_a_quantity_is_the_same_value_as_itself(a, b):
    for q in (*quantities.read(a).quantities, *quantities.read(b).quantities):
        assert quantities.same_value(q, q)
        assert quantities.overlaps(q, q)


@given(st.text(max_size=60))
@example("a five-star")
@example("one hundred and five")
def test_word_numbers_never_raise_and_are_not_negative(text):
    value = quantities.word_number(text)
    assert value is None or value >= 0


# --- tokeniser and stemmer -----------------------------------------------------------------


@given(any_or_structured)
@example("\u0130stanbul")  # dotted capital I lower-cases to two characters
@example("RestaurantsTakeOut review_text walk-in 24hours")
@example("U.S. John's caf\u00e9")
@example("the the \u212a24hours")  # found: a Kelvin sign lower-cases to an ASCII k
def test_folding_is_deterministic_idempotent_and_single_spaced(text):
    folded = words.fold(text)
    assert words.fold(text) == folded
    assert words.fold(folded) == folded
    assert folded == " ".join(folded.split()) and "  " not in folded
    assert folded == folded.lower() or not folded.isascii()


@given(any_or_structured)
@example("RestaurantsTakeOut")
@example("HTTPServer WiFi 5pm COVID19")
@example("\uff10")  # found: a full-width digit is read as its ASCII form
def test_splitting_only_ever_adds_word_forms(text):
    forms = words.word_forms(text)
    assert words.word_forms(text) == forms
    for compound in normalize(text).split():  # as every check reads it (NFKC: ASCII forms)
        for run in re.findall(r"[^\W_]+", compound):
            assert "".join(words.split_run(run)) == run
            if not has_cjk(run):  # Han, Kana and Hangul runs are read as character pairs
                assert run.lower() in forms
    assert words.content_words(text) <= forms


@given(any_or_structured)
def test_content_terms_are_stems_of_folded_words(text):
    terms = words.content_terms(text)
    stems = {words.stem(w) for w in words.fold(text).split()}
    assert terms <= stems
    assert not terms & {"the", "and", "of"}


@given(st.text(max_size=30).map(str.lower))
@example("cries")
@example("running")
@example("needed")
def test_a_stem_is_a_non_empty_prefix_like_shortening(word):
    stemmed = words.stem(word)
    assert words.stem(word) == stemmed
    assert len(stemmed) <= len(word)
    assert bool(stemmed) == bool(word) or len(word) <= 1
    assert words.same_stem(word, word)


@given(st.lists(any_or_structured, max_size=8))
def test_json_key_paths_give_one_path_per_line(lines):
    assert len(words.json_key_paths(lines)) == len(lines)


# --- the assertion classifier --------------------------------------------------------------


@given(any_or_structured)
@example("Passage 1 and Passage 2")
@example("Based on the given passages, the lyrics are:")
@example("He treated hundreds of troops.")
@example("\u2026")
def test_the_classifier_reads_any_text_and_says_why(text):
    found = assertion.classify(text)
    assert found.kind in KINDS and found.reason
    assert found.checkable == (found.kind != assertion.NONE
                               and bool(found.world or found.specifics))
    assert assertion.asserts(text) == found.checkable
    assert assertion.classify(text) == found


@given(any_or_structured)
@example("- 2. Rinse well")
def test_surrounding_whitespace_does_not_change_the_reading(text):
    assert assertion.classify(f"  {text}\t") == assertion.classify(text.strip())


@given(st.sampled_from(("The museum", "Acme Corp", "The free trial", "Our clinic")),
       st.sampled_from(("opens at", "costs", "lasts", "employs", "was founded in")), phrases())
@example("The museum", "opens at", "9 am")
@example("The free trial", "lasts", "hundreds of days")
def test_a_statement_with_a_specific_is_always_checkable(subject, verb, phrase):
    """The conservative side: a sentence about the world that states a specific is checked,
    whatever the specific looks like (a compromised decomposer must not hide it)."""
    sentence = f"{subject} {verb} {phrase}."
    if quantities.read(phrase).quantities or quantities.read(phrase).whens:
        assert assertion.asserts(sentence), assertion.classify(sentence)
