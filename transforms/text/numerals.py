"""Numbers however they are written, said in ASCII digits before `quantities` reads them; and
the numbers that cannot be read without a guess, set apart as unreadable.

`quantities.read` compares values, so every way of writing a value has to come out as the same
digits, and nothing may come out as a value the writer did not write:

- digits of any script (Arabic-Indic "٥", Devanagari "५", full-width "５", Bengali, Thai ...)
  are their ASCII digits, by `unicodedata.decimal`;
- circled, parenthesised and "full stop" numbers ("⑤", "㉑", "⑴", "⒈", "❺") are their value
  (`unicodedata.numeric`), and so are Roman numeral characters ("Ⅴ", "Ⅻ", "ⅩⅣ") when they
  form a canonical Roman numeral; letters that look like Roman numerals ("V", "XII") are not
  read: "I" and "V" are words and names more often than numbers;
- numbers in English words are read by `text2num` (a maintained parser; it keeps "two and
  three" as two numbers, where adding them up made "between two and three years" 5 years):
  "twenty-five" 25, "one hundred and five" 105, "two point five" 2.5, "a million" 1000000, "a
  dozen" 12, and a year said in pairs, "nineteen eighty-five" 1985, "twenty twenty-four" 2024;
  "one" alone is a determiner unless a unit follows ("one reviewer" is no number);
- bidirectional controls (U+200E/F, U+061C, U+202A-E, U+2066-9) are removed before reading.

Unreadable (`Unreadable`): a value the reader could only guess. It is never read as a number,
so it cannot support or contradict one; a claim that states one is supported only by evidence
holding the same characters (`checks/support.py`). These are:

- digits under a bidi override (U+202D, U+202E up to U+202C or the line's end): they are shown
  reversed, so the value a reader sees ("25") is not the one written ("52");
- one digit run mixing scripts ("1٥"): each digit is readable, their sum is a look-alike;
- a digit run with the letters O, o or l inside or after it ("5O", "1O0", "3l"): a confusable
  for 50, 100, 31 to a reader, but the writer may have meant letters; 50 would be a guess;
- Roman numeral characters that are no canonical numeral ("ⅠⅠⅠⅠ").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from text_to_num import alpha2digit

_BIDI = "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_RE = re.compile(f"[{_BIDI}]")
# An override reverses the characters up to the pop (U+202C), the end of an isolate or the line.
_OVERRIDE_RE = re.compile("[\u202d\u202e][^\u202c\u2069\n]*")
_CONFUSABLE_RE = re.compile(r"(?<![\w.,])\d[\dOol.,]*[Ool][\dOol]*(?![\w.])")
_UNICODE_DIGITS_RE = re.compile(r"\d+")
_ROMAN_RE = re.compile("[\u2160-\u2188]+")
_ROMAN_VALUES = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                 (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))
# The names of the characters that are a whole number in a frame: "CIRCLED DIGIT FIVE",
# "PARENTHESIZED NUMBER TWELVE", "DIGIT ONE FULL STOP", "DINGBAT NEGATIVE CIRCLED DIGIT ONE".
_FRAMED_RE = re.compile(r"CIRCLED|PARENTHESIZED|FULL STOP")


@dataclass(frozen=True)
class Unreadable:
    """A number the reader will not guess at: its characters and why."""

    text: str
    why: str

    @property
    def note(self) -> str:
        return f"{self.text} ({self.why})"


def to_roman(value: int) -> str:
    """The canonical Roman numeral of 1 <= `value` <= 3999, in ASCII letters."""
    out = []
    for number, letters in _ROMAN_VALUES:
        count, value = divmod(value, number)
        out.append(letters * count)
    return "".join(out)


def _roman_value(chars: str) -> int | None:
    """The value of Roman numeral characters ("ⅩⅣ" 14, "Ⅻ" 12), None unless canonical."""
    if len(chars) == 1:
        return int(unicodedata.numeric(chars))
    letters = unicodedata.normalize("NFKC", chars).upper()
    values = [int(unicodedata.numeric(ch)) for ch in chars]
    total = sum(-v if i + 1 < len(values) and v < values[i + 1] else v
                for i, v in enumerate(values))
    return total if 0 < total < 4000 and to_roman(total) == letters else None


def _framed(ch: str) -> str:
    if unicodedata.category(ch) == "No" and _FRAMED_RE.search(unicodedata.name(ch, "")):
        value = unicodedata.numeric(ch, None)
        if value is not None and float(value).is_integer():
            return f" {int(value)} "
    return ch


def _unread(unreadable: list[Unreadable], why: str):
    def blank(match: re.Match) -> str:
        unreadable.append(Unreadable(_BIDI_RE.sub("", match.group()), why))
        return " " * len(match.group())
    return blank


def without_controls(text: str) -> tuple[str, tuple[Unreadable, ...]]:
    """`text` without bidi controls; the digits an override reversed blanked and returned."""
    unreadable: list[Unreadable] = []
    overridden = _unread(unreadable, "digits under a bidi override")
    text = _OVERRIDE_RE.sub(lambda m: re.sub(r"\d+(?:[.,]\d+)*", overridden, m.group()), text)
    return _BIDI_RE.sub("", text), tuple(unreadable)


def characters(text: str) -> tuple[str, tuple[Unreadable, ...]]:
    """`text` (without bidi controls) with every digit, framed number and Roman numeral
    character as ASCII digits, and with its unreadable numbers blanked out and returned."""
    unreadable: list[Unreadable] = []
    confusable = _unread(unreadable, "letters among digits")
    if text.isascii():
        text = _CONFUSABLE_RE.sub(confusable, text)
        return text, tuple(unreadable)

    def digits(match: re.Match) -> str:
        run = match.group()
        if len({ord(ch) - unicodedata.decimal(ch) for ch in run}) > 1:
            return _unread(unreadable, "digits of several scripts")(match)
        return "".join(str(unicodedata.decimal(ch)) for ch in run)

    def roman(match: re.Match) -> str:
        value = _roman_value(match.group())
        if value is None:
            return _unread(unreadable, "no canonical Roman numeral")(match)
        return f" {value} "

    text = _UNICODE_DIGITS_RE.sub(digits, text)
    text = _ROMAN_RE.sub(roman, text)
    text = "".join(_framed(ch) if not ch.isascii() else ch for ch in text)
    return _CONFUSABLE_RE.sub(confusable, text), tuple(unreadable)


# --- numbers in English words --------------------------------------------------------------

_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
          "fourteen fifteen sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_SCALES = {"hundred": 100, "thousand": 10**3, "million": 10**6, "billion": 10**9,
           "trillion": 10**12}
_ORDINALS = (r"first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh"
             r"|twelfth|\w+teenth|\w+tieth|hundredth|thousandth|millionth|billionth")
_NUMBER_WORD = "|".join(sorted(_UNITS + _TENS, key=len, reverse=True))
_RUN_WORD = f"{_NUMBER_WORD}|{'|'.join(_SCALES)}|oh"
# A run of number words: "twenty-five", "one hundred and five", "seven and eight", "two point
# five"; not the "twenty" of the ordinal "twenty-first".
_RUN_RE = re.compile(
    rf"\b(?:{_NUMBER_WORD}|a\s+(?:{'|'.join(_SCALES)}))(?:[\s-]+(?:(?:and|point)[\s-]+)?(?:{_RUN_WORD}))*\b"
    rf"(?!-(?:{_ORDINALS})\b)", re.I)
_DOZEN_RE = re.compile(rf"\b({_NUMBER_WORD}|\d+|a)[\s-]+dozen\b", re.I)
# A year said in two pairs: "nineteen eighty-five", "twenty twenty-four", "eighteen oh five".
_CENTURIES = "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
_YEAR_RE = re.compile(
    rf"^(?P<c>{'|'.join(_CENTURIES)})[\s-]+(?:(?P<oh>oh[\s-]+(?:{'|'.join(_UNITS[1:10])}))"
    rf"|(?P<y>(?:{'|'.join(_UNITS[10:])})|(?:{'|'.join(_TENS)})(?:[\s-]+(?:"
    rf"{'|'.join(_UNITS[1:10])}))?))$", re.I)
_DECIMAL_SCALE_RE = re.compile(r"(\d+\.\d+) (1000+)\b")
_SCALE_NAMES = {str(v): k for k, v in _SCALES.items()}
# What pads digits to the length of the words they were read from (a space to every regex):
# a reader extends a number over it to show the words.
PAD = "\u2007"


def _words_value(words: str) -> int:
    value = alpha2digit(words, "en", 0)
    return int(value) if value.isdigit() else -1


def _year(part: str) -> str | None:
    match = _YEAR_RE.match(part)
    if not match:
        return None
    century = _words_value(match.group("c"))
    rest = match.group("oh") or match.group("y")
    return str(century * 100 + _words_value(re.sub(r"^oh[\s-]+", "", rest, flags=re.I)))


def _single(words: str) -> bool:
    words = re.sub(r"^a\s+", "one ", words, flags=re.I)
    return bool(re.fullmatch(r"\d+(?:\.\d+)?", alpha2digit(words, "en", 0)))


def _part_digits(part: str) -> str:
    """One number's words as digits, padded with PAD to the words' length."""
    # "a hundred", "a million": "a" is one before a scale. "two hundred million" is "200
    # million", "a billion" "1 billion": the scale stays a word, so digits are never longer.
    words = re.sub(r"^a\s+", "one ", part, flags=re.I)
    scale = re.search(r"[\s-]+(million|billion|trillion)$", words, re.I)
    head = words[:scale.start()] if scale else words
    digits = _year(head) or alpha2digit(head, "en", 0)
    # "one point five million": a decimal before a scale is one number, "1.5 million".
    digits = _DECIMAL_SCALE_RE.sub(lambda m: f"{m.group(1)} {_SCALE_NAMES[m.group(2)]}", digits)
    digits = f"{digits} {scale.group(1).lower()}" if scale else digits
    return digits.ljust(len(part), PAD) if len(digits) <= len(part) else digits


def _run_digits(run: str) -> str:
    """A run of number words as digits: coordinated numbers stay apart ("7 and 8"); "and"
    joins only where the part before it ends with a scale and both read as one number
    ("one hundred and five")."""
    pieces = re.split(r"([\s-]+and[\s-]+)", run, flags=re.I)
    merged = [pieces[0]]
    for joiner, part in zip(pieces[1::2], pieces[2::2], strict=True):
        last = merged[-1]
        if last.split()[-1].lower() in _SCALES and _single(f"{last} and {part}"):
            merged[-1] = last + joiner + part
        else:
            merged += [joiner, part]
    return "".join(p if i % 2 else _part_digits(p) for i, p in enumerate(merged))


def _dozen(match: re.Match) -> str:
    count = match.group(1)
    number = int(count) if count.isdigit() else 1 if count.lower() == "a" else _words_value(count)
    return str(12 * number) if number >= 0 else match.group()  # never longer than the words


@functools.lru_cache(maxsize=16384)
def words(text: str) -> str:
    """`text` with its English number words as digits ("between two and three years" ->
    "between 2 and 3         years"), each padded with PAD to the length of its words
    so that a reader can show the words it read; a lone "one" stays a word (the caller
    decides: "one hour" is a number, "one reviewer" none)."""
    text = _DOZEN_RE.sub(lambda m: _dozen(m).ljust(len(m.group()), PAD), text)
    return _RUN_RE.sub(lambda m: m.group() if m.group().lower() == "one"
                       else _run_digits(m.group()), text)


def word_number(text: str) -> float | None:
    """The value of a number said in English words ("twenty-five" 25, "one hundred and five"
    105, "a dozen" 12), None unless `text` is exactly one number."""
    text = text.strip()
    if not text or text.lower() in ("a", "an"):
        return None
    digits = words(text if text.lower() != "one" else "1").strip(PAD + " ")
    if re.fullmatch(r"\d+(?:\.\d+)?(?: (?:hundred|thousand|million|billion|trillion))?", digits):
        number, _, scale = digits.partition(" ")
        return float(number) * _SCALES.get(scale, 1)
    return None
