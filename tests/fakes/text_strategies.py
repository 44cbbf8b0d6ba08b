"""Hypothesis strategies for the text package's property tests: any text, and text built from
what the readers look for (numbers in any digit script, vague amounts, money, dates, times,
units, names, list markers, references to the sources) mixed with characters that trip up
regular expressions and case folding."""

from __future__ import annotations

from hypothesis import strategies as st

# The zero of each decimal digit script the tests translate ASCII digits into (Unicode Nd:
# Python's `\d`, `int` and `float` accept every one of them).
DIGIT_ZEROS = {
    "ascii": "0", "arabic-indic": "\u0660", "extended arabic-indic": "\u06f0",
    "devanagari": "\u0966", "bengali": "\u09e6", "thai": "\u0e50", "full-width": "\uff10",
    "mathematical bold": "\U0001d7ce", "nko": "\u07c0", "myanmar": "\u1040",
}


def in_script(text: str, zero: str) -> str:
    """`text` with its ASCII digits written in the digit script whose zero is `zero`."""
    return text.translate({ord("0") + i: chr(ord(zero) + i) for i in range(10)})


# Any text a trace may hold: every code point but the lone surrogates (not valid UTF-8).
any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=160)

# Characters that case folding, word boundaries or offsets get wrong: long s and the Kelvin
# sign match "s" and "k" under re.IGNORECASE, dotted capital I lower-cases to two characters,
# ligatures, combining marks, joiners, direction marks, no-break and odd spaces, dashes,
# ellipses, curly quotes, superscript and fraction digits (digits that are not decimal).
TRICKY = ("\u017f", "\u212a", "\u0130", "\u00df", "\ufb01", "\u0301", "\u200d", "\u200b",
          "\u200f", "\u00a0", "\u2009", "\u3000", "\u2013", "\u2014", "\u2026", "\u2019",
          "\u201c", "\u00b2", "\u00bd", "\u2167", "\t", "\r", "\u2028", "\u0085", "\ufeff")
WORDS = ("the", "trial", "lasts", "museum", "opens", "Acme", "Corp.", "Passage", "passage 2",
         "Dr.", "U.S.", "not", "no", "never", "if", "it", "is", "was", "Here", "are", "steps",
         "Contact", "please", "the", "sources", "say", "about", "over", "nearly", "up to",
         "RestaurantsTakeOut", "review_text", "walk-in", "Wi-Fi", "24hours", "COVID19",
         "John's", "caf\u00e9", "na\u00efve", "\u00c5ngstr\u00f6m",
         "\u0645\u0631\u062d\u0628\u0627", "\u0928\u092e\u0938\u094d\u0924\u0947",
         "\u4e2d\u6587", "\u0416\u0443\u043a",
         "to", "and", "or", "thousand", "million", "dozen", "percent", "a", "few")
UNIT_WORDS = ("", "days", "day", "%", "percent", "dollars", "euros", "km", "miles", "kg",
              "hours", "minutes", "years", "people", "times", "stars", "°F", "degrees", "mph",
              "lbs", "cups", "troops", "visitors")
SCALE_WORDS = ("", " thousand", " million", " billion", " hundred", "k", " bn", "m")
BOUND_WORDS = ("", "about ", "over ", "nearly ", "up to ", "at least ", "some ", "~",
               "more than ", "approximately ", "just under ")
VAGUE = ("a few thousand", "hundreds of", "tens of thousands of", "several hundred",
         "dozens of", "a couple of dozen", "half of", "two-thirds of", "many millions of",
         "a number of thousands", "numerous billions", "thousands of", "a quarter of",
         "over a dozen", "nearly half of", "hundreds of millions of")
WORD_NUMBERS = ("one", "two", "twelve", "twenty-five", "one hundred and five", "a million",
                "thirty", "a dozen", "ninety-nine thousand", "zero")
MONEY = ("$", "US$", "\u00a3", "\u20ac", "\u00a5", "EUR ", "A$")
DATES = ("May 1, 2024", "2024-05-01", "1 May 2024", "05/01/24", "in May", "Monday",
         "Sundays", "5 pm", "17:00", "9:30 a.m.", "noon", "midnight", "Sept. 3rd", "12/31/1999",
         "early March", "2024/13/45", "31.02.2020", "24:61", "Feb 30")
SEPARATORS = (" ", ", ", ". ", "\n", " - ", "; ", ": ", " (", ") ", " / ", "... ", "\u2026 ",
              "\n\n", "  ", "? ", "! ", "-", "")


@st.composite
def numbers(draw) -> str:
    """A number as a writer may give it: 30, 1,200,000, 3.25, 7th, 1990s, in any digit script."""
    value = draw(st.integers(0, 10**9))
    form = draw(st.sampled_from(("plain", "commas", "decimal", "ordinal", "decade", "word")))
    if form == "commas":
        text = f"{value:,}"
    elif form == "decimal":
        text = f"{value % 10**4}.{draw(st.integers(0, 999))}"
    elif form == "ordinal":
        text = f"{value % 100}{draw(st.sampled_from(('st', 'nd', 'rd', 'th')))}"
    elif form == "decade":
        text = f"{1900 + value % 100}s"
    elif form == "word":
        text = draw(st.sampled_from(WORD_NUMBERS))
    else:
        text = str(value)
    return in_script(text, draw(st.sampled_from(sorted(DIGIT_ZEROS.values()))))


@st.composite
def quantities(draw) -> str:
    """A quantity phrase: a bound, a number (or money), a scale and a unit, a vague amount, a
    range, a date or a time."""
    kind = draw(st.sampled_from(("number", "money", "vague", "range", "date", "glued")))
    if kind == "vague":
        return f"{draw(st.sampled_from(VAGUE))} {draw(st.sampled_from(UNIT_WORDS))}".strip()
    if kind == "date":
        return in_script(draw(st.sampled_from(DATES)),
                         draw(st.sampled_from(sorted(DIGIT_ZEROS.values()))))
    number = draw(numbers())
    if kind == "money":
        return f"{draw(st.sampled_from(MONEY))}{number}{draw(st.sampled_from(SCALE_WORDS))}"
    if kind == "range":
        joiner = draw(st.sampled_from(("-", " to ", " and ", "\u2013", " through ", " or ")))
        return f"{number}{joiner}{draw(numbers())} {draw(st.sampled_from(UNIT_WORDS))}"
    if kind == "glued":
        return f"{number}{draw(st.sampled_from(('F', 'C', 'mph', 'kg', 'min', 'pm', 'x')))}"
    bound = draw(st.sampled_from(BOUND_WORDS))
    scale = draw(st.sampled_from(SCALE_WORDS))
    return f"{bound}{number}{scale} {draw(st.sampled_from(UNIT_WORDS))}".rstrip()


# Pieces of a sentence: words, quantities, tricky characters and a little of anything.
pieces = st.one_of(
    st.sampled_from(WORDS), quantities(), st.sampled_from(TRICKY),
    st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6))


@st.composite
def texts(draw, max_pieces: int = 14) -> str:
    """Text made of `pieces` joined by separators, sometimes behind a list marker."""
    parts = draw(st.lists(pieces, min_size=1, max_size=max_pieces))
    out = parts[0]
    for part in parts[1:]:
        out += draw(st.sampled_from(SEPARATORS)) + part
    marker = draw(st.sampled_from(("", "- ", "2. ", "(b) ", "> ", "**", "* ", "1) ")))
    return marker + out


# Everything: structured text most of the time, any text the rest.
any_or_structured = st.one_of(texts(), any_text)
