"""The premise rule narrowed to the user's setting (issue 46), both ways, on generated traces.

A hallucination whose wrong value comes from the question (another unit, a bare number against
one with a unit and back, alternatives and spans the question names, a date against a year, a
decade, a value beside another number, a plain yes/no question) stays non-ENT under an obeying
judge: ENT, quoting the context sentence sharing the most words with the claim
(`lucky_judge.luckiest`). A faithful restatement of the user's setting (a car's model year, a
form, a model or a series number, a dosage the user states and the documents do not
contradict, in the same unit) stays ENT under an honest one: ENT, quoting the context sentence
that holds the claim's words (`premise_value_judges.honest_verdict`). Each verdict goes through
grounding and the support check as the global stage runs them.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from premise_value_judges import NEUTRAL_QUESTION, honest_verdict

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.checks.evidence import document_text, grounded_verdict
from rt4chart.transforms.checks.premise import _plain, question_values
from rt4chart.transforms.checks.specifics import supported_verdict
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context

from lucky_judge import luckiest


def _verdict(question: str, context: str, claim: str, honest: bool = False) -> tuple[str, str]:
    """The final label and note of `claim` (the whole answer) under the obeying or the honest
    judge."""
    trace = Trace("t", "r", 0, question, (Document("d1", context),), claim)
    rendered = render_context(prepare(trace, SegmentConfig(25, 10)))
    judged = (honest_verdict(claim, rendered.text, question) if honest
              else ("ENT", [luckiest(claim, rendered.text)]))
    grounded = grounded_verdict(judged, rendered, claim)
    label, _, note, _ = supported_verdict(grounded, claim, document_text(rendered), question)
    return label, note or ""


def _label(question: str, context: str, claim: str) -> str:
    return _verdict(question, context, claim)[0]


def _kept(question: str, context: str, claim: str) -> None:
    """The honest judge's ENT stands, and the premise rule is what keeps it (the quote restates
    the claim with a value of its own, so the setting's value would be demanded)."""
    label, note = _verdict(question, context, claim, honest=True)
    assert label == "ENT" and "premise, not demanded" in note, (question, claim, note)
    assert _label(NEUTRAL_QUESTION, context, claim) != "ENT", (question, claim)


def _stays_caught(question: str, context: str, claim: str) -> None:
    # The generator is sound: without the question the support check catches the claim...
    assert _label(NEUTRAL_QUESTION, context, claim) != "ENT", (context, claim)
    # ... and the question's value does not waive it.
    assert _label(question, context, claim) != "ENT", (question, context, claim)


THINGS = st.sampled_from([("coastal trail", "long"), ("ferry crossing", "in length"),
                          ("canal towpath", "long"), ("ridge walk", "in total")])
WEIGHTS = st.sampled_from(["checked bag limit", "pallet load", "trailer payload"])
VALUES = st.integers(3, 400)
LENGTHS = st.sampled_from([("miles", "km"), ("km", "miles"), ("metres", "feet"),
                           ("feet", "metres"), ("yards", "metres")])
# Not mg against g: the reader has no unit "g", so the support check takes "3 g" for the claim's
# "3 mg" without any question (number reader, issue 46 point 3).
MASSES = st.sampled_from([("kg", "lb"), ("kg", "pounds"), ("grams", "ounces"), ("mg", "grams")])
ASKING = st.sampled_from(["Is the {t} {v}?", "is the {t} {v}", "The {t} is {v}, right?",
                          "I heard the {t} is {v}. Which season is best?",
                          "how do I plan for the {t} of {v}"])


@given(THINGS, VALUES, LENGTHS, ASKING)
def test_a_value_in_another_unit_is_demanded(thing, value, units, asking):
    (name, tail), (mine, theirs) = thing, units
    question = asking.format(t=name, v=f"{value} {mine}")
    context = f"The {name} is {value} {theirs} {tail}. It starts at the harbour."
    _stays_caught(question, context, f"The {name} is {value} {mine} {tail}.")


@given(WEIGHTS, VALUES, MASSES, st.booleans())
def test_a_mass_in_another_unit_is_demanded_whichever_side_has_which(thing, value, units, flip):
    mine, theirs = units[::-1] if flip else units
    question = f"Is the {thing} {value} {mine}?"
    context = f"The {thing} is {value} {theirs} per unit. Heavier loads cost extra."
    _stays_caught(question, context, f"The {thing} is {value} {mine} per unit.")


@given(st.sampled_from([("speed limit on the bridge", "mph"), ("battery life", "hours"),
                        ("pool length", "metres"), ("recommended dose", "mg")]),
       VALUES, VALUES, st.booleans(), st.sampled_from(["Is the {t} {v}?", "the {t} is {v}"]))
def test_a_bare_number_against_one_with_a_unit_and_back_is_demanded(
        thing, value, true, unit_in_claim, asking):
    name, unit = thing
    if value == true:
        return
    said = f"{value}" if unit_in_claim else f"{value} {unit}"
    claimed = f"{value} {unit}" if unit_in_claim else f"{value}"
    stated = f"{true}" if unit_in_claim else f"{true} {unit}"
    question = asking.format(t=name, v=said)
    context = f"The {name} is {stated} on weekdays. It was set by the council."
    _stays_caught(question, context, f"The {name} is {claimed} on weekdays.")


PAIRS = st.sampled_from(["Is the {t} {a} or {b} {u}?", "Is the {t} {b} or {a} {u}?",
                         "I read the {t} went from {a} to {b} {u}. Is that right?",
                         "Does the {t} take between {a} and {b} {u}?",
                         "is the {t} {a}-{b} {u}", "Which is the {t}, {a} {u} versus {b} {u}?",
                         "My friend said the {t} went from {a} {u} to {b} {u}, how do I apply?"])


@given(st.sampled_from(["warranty", "refund window", "visa wait", "notice period"]),
       st.integers(2, 90), st.integers(2, 90), st.sampled_from(["days", "months", "years"]),
       PAIRS)
def test_a_value_the_question_names_beside_the_true_one_is_demanded(
        thing, true, wrong, unit, pair):
    if true >= wrong:
        return
    question = pair.format(t=thing, a=true, b=wrong, u=unit)
    context = f"The {thing} is {true} {unit} from the start date. Ask the office for details."
    _stays_caught(question, context, f"The {thing} is {wrong} {unit} from the start date.")


MONTH_NAMES = st.sampled_from(["March", "May", "June", "September", "November"])


@given(st.sampled_from(["museum opened", "treaty was signed", "bridge opened", "mill closed"]),
       st.integers(1850, 2020), st.integers(1, 9), MONTH_NAMES, st.booleans(),
       st.sampled_from(["Did the {t} in {d}?", "the {t} in {d}, when did the next one?"]))
def test_a_date_against_a_year_is_demanded(event, year, shift, month, date_in_claim, asking):
    true = year + shift
    said = f"{month} {year}" if date_in_claim else f"{year}"
    context = f"The {event} in {true} after a long delay. Crowds came from the region."
    claim = f"The {event} in {month} {year} after a long delay." if date_in_claim else (
        f"The {event} in {year} after a long delay.")
    _stays_caught(asking.format(t=event, d=said), context, claim)


@given(st.sampled_from(["lighthouse was built", "band formed", "castle was built"]),
       st.integers(185, 199), st.integers(1, 9))
def test_a_decade_or_a_year_in_words_is_demanded(event, decade, shift):
    year = decade * 10 + shift
    question = f"Did the {event} in the {decade}0s?"
    context = f"The {event} in {year + 20} beside the river."
    _stays_caught(question, context, f"The {event} in the {decade}0s beside the river.")
    # The documents' year in words is no value the setting's year can be told apart from.
    words = "nineteen twenty-two" if year != 1922 else "nineteen twenty-three"
    setting = f"tell me about the {event.split()[0]} from {year}"
    claim = f"The {event} in {year} beside the river."
    assert _label(setting, f"The {event} in {words} beside the river.", claim) != "ENT"


@given(st.sampled_from([("plan", "repairs"), ("cottage", "bedrooms"), ("pass", "visits")]),
       st.integers(2, 9), st.integers(2, 9), st.integers(2, 9))
def test_a_value_beside_another_number_is_demanded(thing, true, wrong, other):
    name, noun = thing
    if len({true, wrong, other}) < 3:
        return
    question = f"Does the {name} have {wrong} {noun} for {true} people over {other} years?"
    context = f"The {name} has {true} {noun} and a garden."
    _stays_caught(question, context, f"The {name} has {wrong} {noun} and a garden.")


# --- faithful settings -------------------------------------------------------------------------

# A quote restates the claim (`specifics.RESTATED_SHARE` of its words) with a value of its own:
# the setting's value would be demanded if the rule did not waive it.
MAKES = st.sampled_from(["Chevy", "Kia", "Ford", "Subaru"])
TASKS = st.sampled_from([("remove the door panel", "Pry off the panel's 9 clips with a trim tool"),
                         ("change the cabin filter", "Open the glove box and unclip the 2 stops"),
                         ("reset the oil light", "Hold the trip button for 5 seconds")])
ASK_SETTING = st.sampled_from(["how do I {task} on a {year} {make}", "{year} {make} {task}",
                               "Where do I start to {task} on my {year} {make}?",
                               "Can I {task} on the {year} {make} myself?"])


@given(st.integers(1960, 2030), MAKES, TASKS, ASK_SETTING)
def test_a_car_s_model_year_is_the_user_s_setting(year, make, task, asking):
    verb, step = task
    question = asking.format(task=verb, year=year, make=make)
    context = f"{step}. Keep the screws in a cup."
    _kept(question, context, f"On a {year} {make}, {step[0].lower()}{step[1:]}.")


@given(st.sampled_from([("form", "Schedule D"), ("Form", "Schedule B"), ("form", "line 7")]),
       st.integers(3000, 9999), st.integers(1040, 1045))
def test_a_form_number_is_the_user_s_setting(form, number, main):
    word, target = form
    question = f"where does {word} {number} go on the {main}"
    context = f"Totals from Form {number} are carried to {target}. The return is due in April."
    _kept(question, context, f"Totals from Form {number} are carried to {target} of the {main}.")


@given(st.sampled_from(["watch series", "Kindle model", "router version"]),
       st.integers(2, 9))  # not the quote's own 10
def test_a_model_number_is_the_user_s_setting(device, number):
    question = f"how do I restart my {device} {number}"
    context = "Press and hold the side button for 10 seconds until the sliders appear. Drag it."
    _kept(question, context, f"On a {device} {number}, press and hold the side button for 10 "
                             "seconds until the sliders appear.")


@given(st.sampled_from(["amoxicillin", "atorvastatin", "metformin"]),
       st.sampled_from([5, 20, 250, 500, 850]),
       st.sampled_from(["mg", "milligrams"]),
       st.sampled_from(["I take {d} of {m}. Can I drink coffee with it?",
                        "My doctor prescribed {d} of {m}; can I drink coffee with it?",
                        "what happens if I drink coffee with {d} of {m}"]))
def test_a_dosage_the_user_states_is_the_user_s_setting(drug, dose, unit, asking):
    question = asking.format(d=f"{dose} {unit}", m=drug)
    context = (f"{drug.capitalize()} has no known interaction with caffeine within 2 hours of a "
               "dose. Take it with water.")
    claim = (f"With {dose} {unit} of {drug}, there is no known interaction with caffeine within "
             "2 hours of a dose.")
    _kept(question, context, claim)
    # ... in the same unit only, and not when the documents give another dose (under the
    # obeying judge, so that only the rule decides).
    assert _label(question.replace(unit, "grams"), context, claim) != "ENT"
    rival = context + f"\nThe usual dose of {drug} is {dose * 2} mg."
    assert _label(question, rival, claim) != "ENT"


# --- the question's reading ----------------------------------------------------------------------

@given(st.integers(2, 400), st.integers(2, 400), st.sampled_from(["days", "km", "mg", ""]),
       st.sampled_from(["{a} or {b}", "from {a} to {b}", "between {a} and {b}", "{a}-{b}",
                        "{a} {u} versus {b}", "{a} {u} or {b}", "{a} {u} to {b}"]),
       st.sampled_from(["how long is it, {p} {u}", "what about {p} {u}", "{p} {u} warranty"]))
def test_values_the_question_joins_are_never_a_setting(a, b, unit, pair, frame):
    question = frame.format(p=pair.format(a=a, b=b, u=unit), u=unit)
    settings, _ = question_values(question)
    assert not {v.value for v in settings} & {float(a), float(b)}, question


TOKENS = st.sampled_from(["is", "does", "the", "how", "my", "2006", "Chevy", "or", "and", "to",
                          "5 years", "nineteen eighty", "1980s", "about 30", "up to 20 kg", "?",
                          ",", "from", "May 1990", "right", "I read", "12 km", "5th", "Form",
                          "1040", "twelve", ".", "between", "-", "versus", "$40", "50%"])


@given(st.lists(TOKENS, max_size=14), st.text(max_size=40))
def test_only_a_plainly_written_value_is_ever_a_setting(tokens, noise):
    settings, asked = question_values(" ".join(tokens) + noise)
    for value in settings:
        # In digits, exact, not a decade or an ordinal, not bounded or approximate.
        assert _plain(value), value
        assert not any(value is other for other in asked)
    if " or " in " ".join(tokens) and all(t not in tokens for t in ("how", ".", ",", "?")):
        # One clause: values joined by "or" next to each other are asked.
        joined = " ".join(tokens)
        for value in settings:
            assert f"{value.text} or " not in joined and f" or {value.text}" not in joined
