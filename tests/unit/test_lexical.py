"""Tests for the offline judge's lexical heuristics (rt4chart.transforms.judges.offline.lexical)."""

import pytest

from rt4chart.transforms.judges.offline import lexical

CONTEXT = (
    "Keonna Thomas purchased an electronic visa to Turkey in March. "
    "Thomas could be sentenced to 15 years in prison. "
    "The museum is open on Sunday from 9 to 5.\n"
    "Ticket prices increased in 2020."
)


def _assert_quotes_in(text: str, quotes: list[str]) -> None:
    for quote in quotes:
        assert quote, "a quote must not be empty"
        assert quote in text, f"quote {quote!r} is not a substring of the text"


def test_exactly_supported_claim_is_ent_with_a_substring_quote() -> None:
    label, quotes = lexical.verify("Thomas could be sentenced to 15 years in prison.", CONTEXT)
    assert label == "ENT"
    assert quotes == ["Thomas could be sentenced to 15 years in prison."]
    _assert_quotes_in(CONTEXT, quotes)


def test_inflected_and_number_word_claim_is_still_ent() -> None:
    text = "The company hired three engineers in 2021."
    label, quotes = lexical.verify("The company hires 3 engineers in 2021", text)
    assert label == "ENT"
    assert quotes == [text]


def test_number_mismatch_is_con_and_quotes_the_conflicting_sentence() -> None:
    label, quotes = lexical.verify("Thomas could be sentenced to 20 years in prison.", CONTEXT)
    assert label == "CON"
    assert quotes == ["Thomas could be sentenced to 15 years in prison."]


def test_number_formats_are_normalised() -> None:
    text = "The fee is $3.50 and the limit is 3,500 visitors."
    assert lexical.verify("The fee is 3.5 dollars.", text)[0] == "ENT"
    assert lexical.verify("The limit is 3500 visitors.", text)[0] == "ENT"
    assert lexical.verify("The limit is 4500 visitors.", text)[0] == "CON"


def test_negation_flip_is_con() -> None:
    label, quotes = lexical.verify("The museum is not open on Sunday.", CONTEXT)
    assert label == "CON"
    assert quotes == ["The museum is open on Sunday from 9 to 5."]


def test_negation_flip_the_other_way_is_con() -> None:
    text = "The bridge was not damaged by the storm."
    assert lexical.verify("The bridge was damaged by the storm.", text)[0] == "CON"
    assert lexical.verify("The bridge wasn't damaged by the storm.", text)[0] == "ENT"


def test_antonym_is_con() -> None:
    label, quotes = lexical.verify("Ticket prices decreased in 2020.", CONTEXT)
    assert label == "CON"
    assert quotes == ["Ticket prices increased in 2020."]


def test_weekday_and_month_mismatch_are_con() -> None:
    assert lexical.verify("The museum is open on Monday from 9 to 5.", CONTEXT)[0] == "CON"
    label, quotes = lexical.verify(
        "Keonna Thomas purchased an electronic visa to Turkey in April.", CONTEXT
    )
    assert label == "CON"
    assert quotes == ["Keonna Thomas purchased an electronic visa to Turkey in March."]


def test_modal_may_is_not_a_month() -> None:
    text = "Visitors may bring food into the park."
    assert lexical.verify("Visitors may bring food into the park in June.", text)[0] != "CON"


def test_unrelated_claim_is_nic_without_quotes() -> None:
    assert lexical.verify("Penguins live mostly in the southern hemisphere.", CONTEXT) == (
        "NIC",
        [],
    )


def test_claim_without_content_words_is_nic() -> None:
    assert lexical.verify("It is what it is.", CONTEXT) == ("NIC", [])
    assert lexical.verify("", CONTEXT) == ("NIC", [])


def test_evidence_spread_over_two_sentences() -> None:
    claim = "Marta Rossi founded Lumina Robotics and the company employs 240 engineers."
    first = "Marta Rossi founded Lumina Robotics in Turin."
    second = "Today the company employs 240 engineers."
    label, quotes = lexical.verify(claim, f"{first} The weather was mild. {second}")
    assert label == "ENT"
    assert quotes == [first, second]
    assert lexical.verify(claim, f"{first} The weather was mild.")[0] != "ENT"
    # Half of the claim (its names) found nowhere: a much higher p than with both sentences.
    both = lexical.verify_scored(claim, f"{first} The weather was mild. {second}")[2]
    half = lexical.verify_scored(claim, f"The weather was mild. {second}")[2]
    assert half > 2 * both


def test_hint_is_used_and_a_foreign_hint_is_ignored() -> None:
    claim = "Ticket prices increased in 2020."
    assert lexical.verify(claim, CONTEXT, hint="Ticket prices increased in 2020.")[0] == "ENT"
    assert lexical.verify(claim, CONTEXT, hint="The museum is open on Sunday")[0] == "ENT"
    assert lexical.verify(claim, CONTEXT, hint="not in the text at all")[0] == "ENT"


def test_long_json_sentence_is_quoted_as_an_exact_part() -> None:
    record = (
        '{"name": "Finch & Fork", "address": "31 W Carrillo St", "city": "Santa Barbara", '
        + ", ".join(f'"field{i}": "value {i}"' for i in range(40))
        + ', "business_stars": 4.0}'
    )
    label, quotes = lexical.verify("Finch & Fork is located in Santa Barbara.", record)
    assert label == "ENT"
    _assert_quotes_in(record, quotes)
    assert len(quotes[0]) < len(record)
    assert "Santa Barbara" in quotes[0]


def test_verify_is_deterministic() -> None:
    claim = "Thomas could be sentenced to 20 years in prison."
    assert {tuple(lexical.verify(claim, CONTEXT)[1]) for _ in range(5)} == {
        ("Thomas could be sentenced to 15 years in prison.",)
    }


QUOTE_CASES = [
    ("Joe's has 4.5 stars.", '{"name": "Joe\'s", "stars": 4.5}'),
    ("Joe's has 3 stars.", '{"name": "Joe\'s", "stars": 4.5}'),
    ("The name is Joe's.", '{"name": "Joe\'s", "stars": 4.5, "open": true}'),
    ("Zürich hat 400000 Einwohner.", "Zürich hat 400.000 Einwohner.  Es liegt am See."),
    ("東京は日本の首都です。", "東京は日本の首都です。 大阪は大きい。"),
    ("Café Noël opens at 8.", "  Café Noël opens at 8 ☕.\n\n  It closes at 6!  "),
    ("Café Noël opens at 9.", "Café Noël opens at 8 ☕.\r\nIt closes at 6!"),
    ("Anything at all.", ""),
    ("Anything at all.", "   \n\t  "),
    ("", "Some context here."),
    ("1. The dog barked.", "1. The dog barked.\n2. The cat slept."),
    ("The cat did not sleep.", "1. The dog barked.\n2. The cat slept."),
    ('He said "yes."', 'He said "yes." Then he left.'),
    ("Prices rose 10% in May 2021.", "In May 2021 prices rose 12%. Wages fell."),
    ("Emoji 🎉 party tonight", "🎉🎉 party tonight at 9 🎉"),
]


@pytest.mark.parametrize(("claim", "text"), QUOTE_CASES)
def test_quotes_are_always_exact_substrings(claim: str, text: str) -> None:
    label, quotes = lexical.verify(claim, text)
    assert label in {"ENT", "CON", "NIC"}
    if label == "NIC":
        assert quotes == []
    else:
        assert 1 <= len(quotes) <= 3
        _assert_quotes_in(text, quotes)
    hinted = lexical.verify(claim, text, hint=text[: len(text) // 2])
    assert hinted[0] == "NIC" or 1 <= len(hinted[1]) <= 3
    _assert_quotes_in(text, hinted[1])


def test_empty_text_is_nic() -> None:
    assert lexical.verify("The sky is blue.", "") == ("NIC", [])


SCORED_CASES = [
    ("Thomas could be sentenced to 15 years in prison.", CONTEXT),
    ("Thomas could be sentenced to 20 years in prison.", CONTEXT),
    ("The museum is not open on Sunday.", CONTEXT),
    ("Penguins live mostly in the southern hemisphere.", CONTEXT),
    ("It is what it is.", CONTEXT),
    ("Anything at all.", ""),
]


@pytest.mark.parametrize(("claim", "text"), SCORED_CASES)
def test_score_is_a_probability_consistent_with_the_label(claim: str, text: str) -> None:
    label, quotes, p = lexical.verify_scored(claim, text)
    assert 0.0 <= p <= 1.0
    assert (label == "ENT") == (p < lexical.P_THRESHOLD)
    assert (label, quotes) == lexical.verify(claim, text)


def test_score_grows_with_unsupported_content() -> None:
    supported = lexical.verify_scored("Ticket prices increased in 2020.", CONTEXT)[2]
    baseless = lexical.verify_scored(
        "Ticket prices increased in 2020 after the Louvre Foundation bought Delphi Systems.",
        CONTEXT,
    )[2]
    unrelated = lexical.verify_scored("Penguins live mostly in the southern hemisphere.",
                                      CONTEXT)[2]
    assert supported < 0.05 < baseless < unrelated


def test_times_are_compared_on_a_24_hour_clock() -> None:
    record = '{\n  "hours": {\n    "Friday": "11:0-21:0"\n  }\n}'
    assert lexical.verify("It is open on Friday from 11:00 AM to 9:00 PM.", record)[0] == "ENT"
    assert lexical.verify("It is open on Friday from 11:00 AM to 10 p.m.", record)[0] == "CON"


def test_camel_case_record_keys_count_as_words_but_quotes_must_share_a_plain_word() -> None:
    record = '{\n  "OutdoorSeating": true,\n  "RestaurantsReservations": true\n}'
    label, quotes, _ = lexical.verify_scored("Outdoor seating is available.", record)
    assert (label, quotes) == ("ENT", ['"OutdoorSeating": true,'])
    # "reservations" only matches inside "RestaurantsReservations": no quotable evidence.
    assert lexical.verify("Reservations are accepted.", record) == ("NIC", [])


def test_a_negated_claim_against_its_positive_sentence_is_contradicted():
    context = "Tokyo is the capital of Japan. Kyoto was the capital until 1868."
    label, quotes, p = lexical.verify_scored("Tokyo is not the capital of Japan.", context)
    assert (label, quotes) == ("CON", ["Tokyo is the capital of Japan."]) and p >= 0.12


def test_a_different_time_of_day_is_a_conflict():
    label, quotes, _ = lexical.verify_scored("The shop opens at 11 am.", "The shop opens at 9 am.")
    assert (label, quotes) == ("CON", ["The shop opens at 9 am."])
    assert lexical.verify_scored("The shop opens at 9 am.",
                                 "The shop opens at 9 am. It closes at 5 pm.")[0] == "ENT"
