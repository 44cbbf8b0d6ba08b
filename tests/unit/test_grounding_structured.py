"""Grounding on structured contexts: words of JSON keys, code-style names, numbers with units."""

from __future__ import annotations

import json

import pytest

from rt4chart.schemas.records import Document, Trace, Window
from rt4chart.transforms.checks.evidence import grounded_verdict, key_words
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context, render_window
from rt4chart.transforms.text.words import content_words, json_key_paths, split_run

RECORD = {
    "name": "Finch & Fork",
    "hours": {"Monday": "17:30-23:0", "Sunday": "9:0-14:0"},
    "attributes": {
        "BusinessParking": {"garage": True, "street": True, "lot": False},
        "RestaurantsReservations": True,
        "RestaurantsTakeOut": True,
        "RestaurantsGoodForGroups": True,
        "WiFi": "no",
        "NoiseLevel": "u'average'",
        "price_range": 2,
        "walk-in": True,
    },
    "review_info": [{"review_text": "Great brunch. Our server was awesome."}],
}
NOTES = "Open 24hours on weekends. The shuttle_stop is 5km away.\nparking-lot: none"


@pytest.fixture(scope="module")
def context():
    trace = Trace("t", "r", 0, "", (Document("record", json.dumps(RECORD, indent=2)),
                                    Document("notes", NOTES)), "")
    return prepare(trace, SegmentConfig(25, 10))


def verdict(context, label, quote, claim):
    return grounded_verdict((label, [quote]), render_context(context), claim)[:3]


@pytest.mark.parametrize("run, parts", [
    ("RestaurantsTakeOut", ["Restaurants", "Take", "Out"]),    # PascalCase
    ("reservationsAccepted", ["reservations", "Accepted"]),    # camelCase
    ("WiFi", ["Wi", "Fi"]),
    ("HTTPServer", ["HTTP", "Server"]),                         # an acronym, then a word
    ("5pm", ["5", "pm"]),                                       # digit/letter boundaries
    ("24hours", ["24", "hours"]),
    ("COVID19", ["COVID", "19"]),
    ("street", ["street"]),
])
def test_split_run(run, parts):
    assert split_run(run) == parts


@pytest.mark.parametrize("text, expected", [
    ("RestaurantsGoodForGroups", {"restaurants", "good", "groups", "goodfor", "forgroups",
                                  "restaurantsgood", "restaurantsgoodfor", "goodforgroups",
                                  "restaurantsgoodforgroups"}),
    ("RestaurantsTakeOut", {"restaurants", "take", "takeout", "restaurantstake",
                            "restaurantstakeout"}),
    ("review_text", {"review", "text", "reviewtext"}),          # snake_case
    ("walk-in", {"walk", "walkin"}),                            # kebab-case
    ("Wi-Fi", {"wifi"}),                                        # glued back: "WiFi" too
    ("WiFi", {"wifi"}),
    ("5pm", {"5", "5pm"}),
    ("24hours", {"24", "hours", "24hours"}),
    ("5 km", {"5"}),
])
def test_content_words_take_names_apart_and_keep_glued_forms(text, expected):
    assert content_words(text) == expected


def test_splitting_only_adds_words():
    text = "The FREE-trial (14 days) at café_Zürich, RestaurantsReservations: true"
    plain = {w.lower() for w in "The FREE trial 14 days at café Zürich "
             "RestaurantsReservations true".split()}
    kept = {w for w in plain if w.isdigit() or len(w) >= 3} - {"the"}
    assert kept <= content_words(text)


def test_json_key_paths_follow_nesting():
    lines = json.dumps(RECORD, indent=2).splitlines()
    paths = dict(zip(lines, json_key_paths(lines), strict=True))
    assert paths['      "street": true,'] == ("attributes", "BusinessParking", "street")
    assert paths['    "RestaurantsReservations": true,'] == ("attributes",
                                                             "RestaurantsReservations")
    assert paths['      "review_text": "Great brunch. Our server was awesome."'] == (
        "review_info", "review_text")
    assert paths['  "name": "Finch & Fork",'] == ("name",)
    assert paths["{"] == () and paths["  },"] == ()


def test_json_key_paths_survive_a_window_that_starts_inside_an_object():
    lines = ['"lot": false', "},", '"WiFi": "no",', "}", "}", '"name": "x"']
    assert json_key_paths(lines) == [("lot",), (), ("WiFi",), (), (), ("name",)]


def test_a_sentence_continuing_a_value_is_not_a_key_value_line():
    lines = ['"review_info": [', "{", '"review_text": "Great brunch.', 'Our server was awesome."',
             "}", "]", '"name": "x"']
    assert json_key_paths(lines) == [("review_info",), (), ("review_info", "review_text"), (),
                                     (), (), ("name",)]


def test_key_words_only_for_key_value_sentences(context):
    words = key_words(render_context(context))
    by_text = {s.text: s.index for s in context.sentences}
    assert words[by_text['"street": true,']] == {"attributes", "business", "parking",
                                                 "businessparking", "street"}
    assert by_text["{"] not in words and by_text["},"] not in words
    assert by_text["parking-lot: none"] not in words  # not JSON
    assert by_text["Open 24hours on weekends."] not in words


@pytest.mark.parametrize("quote, claim", [
    ('"RestaurantsReservations": true', "The restaurant takes reservations."),
    ('"RestaurantsGoodForGroups": true', "It is good for groups."),
    ('"RestaurantsTakeOut": true', "They offer takeout."),
    ('"RestaurantsTakeOut": true', "Take-out is available."),
    ('"WiFi": "no"', "The business does not offer WiFi."),
    ('"WiFi": "no"', "Guests can use the Wi-Fi."),                # kebab vs PascalCase
    ('"street": true', "There is street parking."),
    ('"street": true', "Parking is available."),                  # the parent key's word
    ('"garage": true', "Customers can park in a parking garage."),
    ('"Monday": "17:30-23:0"', "It opens in the evening for dinner hours."),  # parent "hours"
    ('"price_range": 2', "Its price range is moderate."),          # snake_case
    ('"walk-in": true', "Walk-ins are welcome."),                   # kebab-case
    ("Open 24hours on weekends.", "It is open 24 hours."),          # digits and letters
    ("The shuttle_stop is 5km away.", "It is 5 km from here."),      # a number with a unit
])
def test_key_value_quotes_support_claims_that_name_the_key(context, quote, claim):
    label, evidence, note = verdict(context, "ENT", quote, claim)
    assert (label, note) == ("ENT", None) and evidence


def test_a_contradicting_key_value_pair_stays_con(context):
    label, evidence, _ = verdict(context, "CON", '"WiFi": "no"', "It offers free WiFi.")
    assert label == "CON" and 'WiFi": "no' in evidence[0].text


def test_value_only_quote_counts_with_its_key(context):
    # The quote is the value of a key/value line: the line's key says what it is about.
    label, _, _ = verdict(context, "ENT", "17:30-23:0", "On Monday it opens at 5:30 pm.")
    assert label == "ENT"


@pytest.mark.parametrize("quote, claim", [
    ('"street": true', "It serves sushi."),                     # shares nothing
    ('"WiFi": "no"', "The noise level is average."),            # another key of the record
    ('"RestaurantsTakeOut": true', "It has a vegan menu."),
    ("Open 24hours on weekends.", "It was founded in 1998."),
])
def test_a_real_quote_sharing_nothing_with_the_claim_is_not_evidence(context, quote, claim):
    label, evidence, note = verdict(context, "ENT", quote, claim)
    assert (label, evidence) == ("NIC", ()) and "no content word" in note


@pytest.mark.parametrize("quote", [
    '"RestaurantsDelivery": true',     # an invented key
    '"WiFi": "free"',                  # an invented value
    '"street": false',
])
def test_an_invented_quote_is_never_evidence(context, quote):
    label, evidence, note = verdict(context, "ENT", quote, "It offers free WiFi and delivery.")
    assert (label, evidence) == ("NIC", ()) and "none of 1 quotes is in the context" in note


def test_local_window_without_the_opener_keeps_the_own_key(context):
    # A window that starts inside "BusinessParking" cannot know the parent key, but the
    # line's own key still counts.
    street = next(s.index for s in context.sentences if s.text == '"street": true,')
    rendered = render_window(context, Window(0, street, street + 3))
    allowed = {s.index for _, s in rendered.segments}
    quote = ['"street": true']
    label, _, _, _ = grounded_verdict(("ENT", quote), rendered, "There is street parking.",
                                      allowed)
    assert label == "ENT"
    label, _, note, _ = grounded_verdict(("ENT", quote), rendered, "Parking is available.",
                                         allowed)
    assert label == "NIC" and "no content word" in note
