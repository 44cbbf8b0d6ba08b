"""Numbers, money, percentages, dates and times found in text, in one canonical form.

What a claim states precisely is what a judge that was talked into "supported" gets wrong: the
free trial lasts 30 days, not 14. This module reads those specifics however they are written
("30 days" / "thirty days" / "30-day", "$1.2 million" / "1,200,000 dollars", "5 pm" / "17:00" /
"17:0", "May 1, 2024" / "2024-05-01" / "1 May 2024", "50%" / "fifty percent") so that the
support check (`support.py`) and the decomposition coverage check (`coverage.py`) compare
values, not spellings. Digits of other scripts, framed and Roman numeral characters, numbers
in English words and bidi controls are said in ASCII digits first (`numerals.py`, with
`text2num` for the words); a number that could only be guessed ("5O", digits under a bidi
override) is set apart as unreadable (`Specifics.unreadable`), never read as a value. Dates
and times are read by `dates.py`. A pure
function of the text keeps verdicts reproducible.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace

from rt4chart.transforms.text import cjk_numbers, numerals
from rt4chart.transforms.text.dates import When, read_dates, read_times
from rt4chart.transforms.text.language import detect, has_cjk, normalize_width
from rt4chart.transforms.text.locale_numbers import locale_numbers

# Canonical unit for each unit word; a number followed by another word has no unit.
_UNIT_GROUPS = {
    "second": "second seconds sec secs", "minute": "minute minutes min mins",
    "hour": "hour hours hr hrs", "day": "day days", "week": "week weeks wk wks",
    "month": "month months", "year": "year years yr yrs", "decade": "decade decades",
    "century": "century centuries", "%": "percent per-cent percentage %",
    "usd": "dollar dollars usd buck bucks $", "eur": "euro euros eur €",
    "gbp": "pound pounds gbp £ lb lbs", "yen": "yen ¥", "cent": "cent cents",
    "mile": "mile miles mi", "km": "km kilometer kilometers kilometre kilometres",
    "meter": "meter meters metre metres", "foot": "foot feet ft", "inch": "inch inches",
    "kg": "kg kilogram kilograms kilo kilos", "gram": "gram grams", "ton": "ton tons tonne tonnes",
    "ounce": "ounce ounces oz", "liter": "liter liters litre litres", "gallon": "gallon gallons",
    "degree": "degree degrees ° °f °c fahrenheit celsius", "acre": "acre acres", "mph": "mph",
    "calorie": "calorie calories kcal", "cup": "cup cups",
    "tablespoon": "tablespoon tablespoons tbsp",
    "teaspoon": "teaspoon teaspoons tsp", "pint": "pint pints", "quart": "quart quarts",
    "ml": "ml milliliter milliliters millilitre millilitres", "mg": "mg milligram milligrams",
    "cm": "cm centimeter centimeters centimetre centimetres", "mm": "mm millimeter millimeters",
    "yard": "yard yards yd", "star": "star stars", "time": "times", "people": "people persons",
    "cny": "yuan rmb", "krw": "won",
}
UNITS = {word: unit for unit, words in _UNIT_GROUPS.items() for word in words.split()}
_SCALES = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12,
           "k": 1e3, "m": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9}
# Words that make "about 2,000" a round figure: the source may say 1,950.
_APPROX = re.compile(r"\b(?:about|around|approximately|roughly|nearly|almost|some|over|under"
                     r"|more than|less than|fewer than|at least|up to|close to|just)\s*$", re.I)

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_MONEY_RE = re.compile(r"(?:\b(?:US|A|C|AU|CA|NZ|HK)\$|\$|£|€|¥|\b(?:USD|EUR|GBP)\s?)\s?(?P<n>"
                       + _NUM + r")(?:\s*(?P<scale>hundred|thousand|million|billion|trillion"
                       r"|k|mn|m|bn|b)\b)?", re.I)
_DIGIT_RE = re.compile(r"(?<![\w.])(?P<n>" + _NUM + r")(?:st|nd|rd|th|s)?(?!\w)"
                       r"(?:\s*(?P<scale>hundred|thousand|million|billion|trillion)\b)?")
# "one" is a number only before a unit ("one hour"); "one reviewer" is a determiner.
_ONE_RE = re.compile(r"\b(?:a\s+)?one\b", re.I)
# A unit glued to its number: "160F", "10mph", "5kg", "30min".
_GLUED_UNIT_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([A-Za-z]{1,6})\b")
_UNIT_AFTER_RE = re.compile(
    r"\s*(?:-\s*)?(?P<u>%|[€£¥]|°\s?[FC]?\b|°|per[\s-]cent\b|[a-z]+\b)", re.I)


@dataclass(frozen=True)
class Quantity:
    """A number with its unit ("day", "usd", "%", or None) and the precision it was given with."""

    value: float
    unit: str | None
    step: float  # 1 for "30", 0.1e6 for "1.2 million": how finely the writer stated it
    approx: bool  # "about 2,000"
    text: str
    # The interval a vague or bounded quantity stands for ("a few thousand" 2,000-9,999,
    # "over a dozen" 12-inf, "nearly half" 42.5-50 %), or that a stated range spans ("$3,000 to
    # around $12,000"); None for a plain value.
    low: float | None = None
    high: float | None = None
    # False for an amount said only vaguely ("a few thousand", "hundreds of"): its value is
    # its low end, not a figure, so it is compared as an interval only.
    point: bool = True

    def __post_init__(self) -> None:
        # Readers build values from ints too ("hundreds of" is 200 to 999): keep every number a
        # float, so that float methods (is_integer) hold for any quantity on Python 3.11.
        for name in ("value", "step", "low", "high"):
            number = getattr(self, name)
            if number is not None and not isinstance(number, float):
                object.__setattr__(self, name, float(number))

    @property
    def vague(self) -> bool:
        return self.low is not None or self.high is not None

    def interval(self) -> tuple[float, float]:
        """The values this quantity admits: its range, else its value (±15% when "about")."""
        if self.vague:
            return (-math.inf if self.low is None else self.low,
                    math.inf if self.high is None else self.high)
        if self.approx:
            return self.value * 0.85, self.value * 1.15
        return self.value, self.value


@dataclass(frozen=True)
class Specifics:
    """Everything precise that `read` found, and the text with those parts blanked out."""

    quantities: tuple[Quantity, ...]
    whens: tuple[When, ...]
    rest: str
    # Ranges the text states ("3 to 5 days", "$3,000-$12,000"): evidence for a vague claim
    # inside them. Their ends are in `quantities` too, each with the range's unit.
    ranges: tuple[Quantity, ...] = ()
    # Numbers that could only be guessed ("5O", digits under a bidi override): not read, so
    # not evidence for any value (`numerals.py`).
    unreadable: tuple[numerals.Unreadable, ...] = ()


# Vague amounts read as ranges: "a few thousand dollars" is 2,000-9,999, "hundreds of" 200-999.
_VAGUE_MULTIPLIERS = {"a couple of": (2, 3), "a couple": (2, 3), "a few": (2, 9), "few": (2, 9),
                      "several": (3, 9), "many": (2, 99), "numerous": (2, 99),
                      "a number of": (2, 99)}
_VAGUE_SCALES = {"dozen": 12, "hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9,
                 "trillion": 1e12}
_VAGUE_RE = re.compile(
    r"\b(?P<q>" + "|".join(sorted(_VAGUE_MULTIPLIERS, key=len, reverse=True)) + r")\s+"
    r"(?P<scale>" + "|".join(_VAGUE_SCALES) + r")s?\b(?:\s+of\b)?", re.I)
# "hundreds of", "tens of thousands of", "dozens of": at least two of the unit, below the next.
_PLURAL_SCALE_RE = re.compile(
    r"\b(?:(?P<tens>tens|hundreds)\s+of\s+)?(?P<scale>dozens|hundreds|thousands|millions"
    r"|billions)\s+of\b", re.I)
# Fractions said in words: "half of", "a third", "two-thirds", as percentages.
_FRACTION_RE = re.compile(
    r"\b(?:(?:a|one)[\s-]+(?P<one>half|third|quarter|fifth)|(?P<n>two|three|four)[\s-]+"
    r"(?P<plural>thirds|quarters|fifths)|(?P<half>half))(?=\s+of\b)", re.I)
_FRACTIONS = {"half": 2, "third": 3, "thirds": 3, "quarter": 4, "quarters": 4, "fifth": 5,
              "fifths": 5}
# A bound before a number makes it an interval: "over 100" is 100-inf, "nearly 50%" 42.5-50.
_BOUNDS = (
    (re.compile(r"\b(?:over|more than|above|at least|upwards of|in excess of|exceeding"
                r"|just over)\s*$", re.I), (1.0, math.inf)),
    (re.compile(r"\b(?:under|less than|fewer than|below|up to|at most|no more than)\s*$", re.I),
     (-math.inf, 1.0)),
    (re.compile(r"\b(?:nearly|almost|close to|just under|approaching)\s*$", re.I), (0.85, 1.0)),
    (re.compile(r"\b(?:about|around|approximately|roughly|some|circa|an estimated|estimated"
                r"|~)\s*$", re.I), (0.85, 1.15)),
)
# Two quantities joined as a range: "3 to 5 days", "$3,000 to around $12,000", "10-15%".
_RANGE_END = (r"(?:[$£€¥]\s?)?\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?:[$£€¥]\s?)?\d+(?:\.\d+)?")
_RANGE_RE = re.compile(
    r"(?P<a>" + _RANGE_END + r")(?:\s*(?P<sa>k|thousand|million|billion)\b)?\s*%?\s*"
    r"(?:-|to|and|through|or)\s*(?:about|around|roughly|approximately|nearly|almost|up to)?\s*"
    r"(?P<b>" + _RANGE_END + r")(?:\s*(?P<sb>k|thousand|million|billion)\b)?", re.I)


def _bounded(q: Quantity, before: str) -> Quantity:
    """`q` as an interval when a bound ("over", "nearly", "about") comes right before it."""
    for pattern, (low, high) in _BOUNDS:
        if pattern.search(before):
            # An unbounded end stays unbounded: "over 0" is 0-inf, not 0 * inf = nan.
            return replace(q, low=low if math.isinf(low) else q.value * low,
                           high=high if math.isinf(high) else q.value * high)
    return q


def _read_vague(text: str) -> tuple[list[Quantity], str]:
    found = []
    for pattern in (_VAGUE_RE, _PLURAL_SCALE_RE):
        for match in pattern.finditer(text):
            scale = _VAGUE_SCALES[match.group("scale").lower().rstrip("s")]
            if pattern is _VAGUE_RE:
                few, many = _VAGUE_MULTIPLIERS[match.group("q").lower()]
                low, high = few * scale, (many + 1) * scale - 1
            else:
                tens = (match.group("tens") or "").lower()
                # "hundreds of": 200-999; "tens of thousands": 10,000-99,999; "dozens": 24-144.
                low, high = {"": (2 * scale, 1000 * scale - 1),
                             "tens": (10 * scale, 100 * scale - 1),
                             "hundreds": (100 * scale, 1000 * scale - 1)}[tens]
                if scale == 12:
                    low, high = 24, 144
                elif scale == 100 and not tens:
                    low, high = 200, 999
            low, high = float(low), float(high)  # a Quantity's value is a float (3.11)
            unit, end = _unit_after(text, match.end())
            found.append(Quantity(low, unit, scale, True, text[match.start():end].strip(),
                                  low=low, high=high, point=False))
            text = _blank(text, match.start(), end)
    for match in _FRACTION_RE.finditer(text):
        word = (match.group("one") or match.group("plural") or match.group("half")).lower()
        count = {"two": 2, "three": 3, "four": 4}.get((match.group("n") or "").lower(), 1)
        value = 100.0 * count / _FRACTIONS[word]
        q = Quantity(value, "%", 10.0, True, match.group())
        found.append(_bounded(q, text[max(0, match.start() - 20):match.start()]))
        text = _blank(text, match.start(), match.end())
    return found, text


def _range_side(raw: str, scale: str | None) -> Quantity | None:
    found = read_plain(raw + (" " + scale if scale else ""))
    return found[0] if len(found) == 1 else None


def _ranges(text: str) -> list[tuple[int, Quantity]]:
    out = []
    for match in _RANGE_RE.finditer(text):
        a = _range_side(match.group("a"), match.group("sa"))
        b = _range_side(match.group("b"), match.group("sb"))
        if a is None or b is None or not a.value < b.value:
            continue
        unit = a.unit or b.unit or _unit_after(text, match.end())[0]
        if a.unit and b.unit and a.unit != b.unit:
            continue
        shown = " ".join(match.group().replace(numerals.PAD, " ").split())
        out.append((match.start(), Quantity(a.value, unit, b.step, False, shown,
                                            low=a.value, high=b.value)))
    return out


def stated_ranges(text: str) -> list[Quantity]:
    """The ranges `text` states, as quantities with low and high: "from $3,000 to around
    $12,000", "3 to 5 days", "10-15%", "2 and 3 years". A side without a unit takes the
    other's. Two numbers joined by "and" are a range here and two numbers in `read`, never
    their sum."""
    return [q for _, q in _ranges(text)]


def _range_units(text: str) -> dict[int, str]:
    """Where each range with a unit starts, and its unit: the first end of "2 and 3 years" is
    2 years, not a bare 2 that any unit fits."""
    return {start: q.unit for start, q in _ranges(text) if q.unit}


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _decimals(raw: str) -> int:
    return len(raw.split(".")[1]) if "." in raw else 0


def _unit_after(text: str, end: int) -> tuple[str | None, int]:
    match = _UNIT_AFTER_RE.match(text, end)
    if match:
        raw = re.sub(r"[\s-]+", "-", match.group("u").lower())
        unit = UNITS.get(raw) or UNITS.get(raw.replace("-", ""))
        if unit:
            return unit, match.end()
    return None, end


def _quantity(text: str, start: int, end: int, value: float, step: float,
              unit: str | None, units: dict[int, str], said: str) -> tuple[Quantity, int]:
    while text[end:end + 1] == numerals.PAD:  # the rest of the words the number was read from
        end += 1
    if unit is None:
        unit, end = _unit_after(text, end)
        unit = unit or units.get(start)
    before = text[max(0, start - 20):start]
    approx = bool(_APPROX.search(before))
    shown = " ".join(said[start:end].split())
    return _bounded(Quantity(value, unit, step, approx, shown), before), end


def _read_money(text: str, units: dict[int, str], said: str) -> tuple[list[Quantity], str]:
    found = []
    for match in _MONEY_RE.finditer(text):
        symbol = match.group()[: match.start("n") - match.start()].strip().upper()
        unit = UNITS.get(symbol[-1:].lower(), UNITS.get(symbol.lower(), "usd"))
        scale = _SCALES[(match.group("scale") or "").lower()] if match.group("scale") else 1
        raw = match.group("n").replace(",", "")
        found.append(_quantity(text, match.start(), match.end(), float(raw) * scale,
                               scale / 10 ** _decimals(raw), unit, units, said)[0])
        text = _blank(text, match.start(), match.end())
    return found, text


def _read_digits(text: str, units: dict[int, str], said: str) -> tuple[list[Quantity], str]:
    found = []
    for match in _DIGIT_RE.finditer(text):
        raw = match.group("n").replace(",", "")
        scale = _SCALES[match.group("scale").lower()] if match.group("scale") else 1
        quantity, end = _quantity(text, match.start(), match.end(), float(raw) * scale,
                                  scale / 10 ** _decimals(raw), None, units, said)
        found.append(quantity)
        text = _blank(text, match.start(), end)
    return found, text


word_number = numerals.word_number


def _ones(text: str) -> str:
    """"one hour" -> "1 hour"; "one reviewer" and "a one" stay words."""
    def one(match: re.Match) -> str:
        alone = " " not in match.group()
        return "1" + 2 * numerals.PAD if alone and _unit_after(text, match.end())[0] else (
            match.group())
    return _ONE_RE.sub(one, text)


def _unglue(match: re.Match) -> str:
    number, suffix = match.groups()
    if suffix in ("F", "C"):
        return f"{number}°{suffix}"
    return f"{number} {suffix}" if suffix.lower() in UNITS else match.group()


@functools.lru_cache(maxsize=16384)  # frozen: evidence is read once per claim it supports
def read(text: str) -> Specifics:
    """The quantities, dates, weekdays and times in `text`, and the numbers it holds that
    cannot be read without a guess (`numerals.py`).

    Vague amounts ("a few thousand") are read before number words become digits; dates and
    times before numbers, so that their digits are not also read as numbers; a year ("in
    2019") is a number.
    """
    text, reversed_digits = numerals.without_controls(normalize_width(text))
    if any(ch.isdigit() for ch in text) and detect(text) != "en":
        text = locale_numbers(text)
    text, unreadable = numerals.characters(text)
    cjk = has_cjk(text)
    if cjk:  # Chinese, Japanese and Korean forms said as the reader below reads them
        text = cjk_numbers.rewrite(text)
    text = text.replace("\u00a0", " ").replace("\u2013", "-").replace("\u2014", " - ")
    vague, text = _read_vague(text)
    said = _GLUED_UNIT_RE.sub(_unglue, text)
    text = _GLUED_UNIT_RE.sub(_unglue, _ones(numerals.words(text)))
    # Number words become digits of the same length: a quantity shows the words it was read
    # from ("two tablespoons"), in notes as in the evidence.
    said = said if len(said) == len(text) else text
    ranges, units = stated_ranges(text), _range_units(text)
    whens, text = read_dates(text)
    times, text = read_times(text)
    money, text = _read_money(text, units, said)
    digits, text = _read_digits(text, units, said)
    if cjk:
        text = cjk_numbers.INSERTED_WORDS_RE.sub(lambda m: " " * len(m.group()), text)
    return Specifics(tuple(vague + money + digits), tuple(whens + times), text,
                     tuple(ranges), reversed_digits + unreadable)


def read_plain(text: str) -> list[Quantity]:
    """The money and digit quantities of a short text (no dates, times or ranges; its words
    already as digits)."""
    money, text = _read_money(text, {}, text)
    digits, _ = _read_digits(text, {}, text)
    return money + digits


def same_value(claim: Quantity, other: Quantity) -> bool:
    """Whether `other` states the claim's value: equal, or equal at the precision the claim
    used (33% for 33.3%, "$1.2 million" for 1,234,567) when that is within 5%, or within 15%
    when the claim says "about"/"over"/"nearly"."""
    if not claim.point or not other.point:
        return overlaps(claim, other)  # "a few thousand", "hundreds of": only as ranges
    if abs(claim.value - other.value) <= 1e-9 * max(1.0, abs(claim.value)):
        return True
    if claim.vague and not other.vague and overlaps(claim, other):
        return True  # "over 100" / 120, "nearly half" / 48%; not "up to 30" / "up to 45"
    diff = abs(claim.value - other.value)
    limit = 0.15 if claim.approx else 0.05
    rounded = diff <= claim.step / 2 + 1e-9 or claim.approx
    return rounded and diff <= limit * abs(other.value)


def overlaps(claim: Quantity, other: Quantity) -> bool:
    """Whether the values `claim` admits meet those `other` admits ("a few thousand dollars"
    and "$3,000 to around $12,000"; not "a few hundred dollars")."""
    (a, b), (c, d) = claim.interval(), other.interval()
    return a <= d and c <= b


def number_terms(text: str) -> set[str]:
    """Canonical strings of the numbers, dates and times in `text` ("30 day", "date 2024-5-1",
    "time 17:00"), for set comparisons."""
    found = read(text)
    terms = {_number_term(q) for q in found.quantities}
    for when in found.whens:
        if when.kind == "time":
            terms.add(f"time {when.value[0] // 60}:{when.value[0] % 60:02d}")
        else:
            terms.add(f"{when.kind} " + "-".join(str(v) for v in when.value if v is not None))
    return terms


def _number_term(q: Quantity) -> str:
    value = int(q.value) if float(q.value).is_integer() else round(q.value, 6)
    return f"{value} {q.unit}" if q.unit else str(value)
