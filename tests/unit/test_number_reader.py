"""Properties of the number reader (issue 46): a number written in words, CJK numerals
(everyday, colloquial, financial, with 点), circled or Roman numeral characters or the digits of
another script reads back as itself; "between A and B" and "A and B" are a range and two
numbers, never their sum; a number the reader cannot read ("5O", digits under a bidi override)
is no value and states none. End to end through the support check the pipeline applies to a
grounded ENT (`specifics.unsupported_specifics`): a changed number in any of these forms is
caught when an obeying judge quotes the context sentence, and the same number in another form
is not."""

from __future__ import annotations

from hypothesis import assume, example, given
from hypothesis import strategies as st
from num2words import num2words

from rt4chart.transforms.checks.specifics import unsupported_specifics
from rt4chart.transforms.checks.support import check_support
from rt4chart.transforms.text.cjk_numbers import numeral_value
from rt4chart.transforms.text.quantities import read

# --- renderers (independent of the reader) --------------------------------------------------

_CN_DIGITS = "零一二三四五六七八九"
_FIN_DIGITS = "零壹贰叁肆伍陆柒捌玖"
_ROMAN = ((1000, "Ⅿ"), (900, "ⅭⅯ"), (500, "Ⅾ"), (400, "ⅭⅮ"), (100, "Ⅽ"), (90, "ⅩⅭ"),
          (50, "Ⅼ"), (40, "ⅩⅬ"), (10, "Ⅹ"), (9, "ⅠⅩ"), (5, "Ⅴ"), (4, "ⅠⅤ"), (1, "Ⅰ"))
# Zeros of decimal digit scripts: full-width, Arabic-Indic, Extended Arabic-Indic (Persian),
# Devanagari, Bengali, Thai.
_ZEROS = (0xFF10, 0x0660, 0x06F0, 0x0966, 0x09E6, 0x0E50)


def words(n: int) -> str:
    """English words, without the commas num2words puts between groups (to the reader a
    comma separates list items)."""
    return num2words(n).replace(",", "")


def _cn_section(n: int, digits: str, scales: str) -> str:
    """0 < n < 10000 in Chinese numerals, with 零 for a gap ("一千零五")."""
    out, gap = "", False
    for value, scale in ((1000, scales[2]), (100, scales[1]), (10, scales[0]), (1, "")):
        d, n = divmod(n, value)
        if d:
            out += ("零" if gap and out else "") + digits[d] + scale
            gap = False
        else:
            gap = True
    return out


def chinese(n: int, financial: bool = False) -> str:
    """0 < n < 10^12 in standard Chinese numerals (everyday or financial digits)."""
    digits, scales = (_FIN_DIGITS, "拾佰仟") if financial else (_CN_DIGITS, "十百千")
    out = ""
    for value, big in ((10**8, "亿"), (10**4, "万"), (1, "")):
        part, n = divmod(n, value)
        if part:
            if out and part < 1000:
                out += "零"
            out += _cn_section(part, digits, scales) + big
        elif out and n:
            out += "零" if not out.endswith("零") else ""
    return out


def roman(n: int) -> str:
    out = ""
    for value, chars in _ROMAN:
        count, n = divmod(n, value)
        out += chars * count
    return out


def circled(n: int) -> str:
    if n <= 20:
        return chr(0x2460 + n - 1)
    return chr(0x3251 + n - 21) if n <= 35 else chr(0x32B1 + n - 36)


def in_script(n: int, zero: int) -> str:
    return "".join(chr(zero + int(d)) for d in str(n))


def values(text: str) -> list[float]:
    return [q.value for q in read(text).quantities]


# --- round trips ------------------------------------------------------------------------------


@given(st.integers(0, 10**9))
@example(105)
@example(1200005)
def test_numbers_in_words_read_back(n):
    assert values(f"It took {words(n)} days.") == [n]


@given(st.integers(1300, 2099).filter(lambda y: y % 100 >= 10 or y % 100 == 0))
@example(1985)
@example(2024)
def test_years_in_words_read_back(year):
    """Years from 1300: "eleven thirty" and "twelve fifteen" are times as often as years,
    so they stay two numbers (numerals.py)."""
    assert values(f"The bridge opened in {num2words(year, to='year')}.") == [year]


def test_a_pair_that_may_be_a_time_is_two_numbers():
    assert values("The ferry left at eleven thirty.") == [11, 30]


@given(st.integers(2, 10**11 - 1), st.booleans())  # a lone 一 before 元 is "a" (一天: a day)
@example(35000, False)
@example(12000, False)
@example(10002, False)
def test_chinese_numerals_read_back(n, financial):
    text = chinese(n, financial)
    assert numeral_value(text) == n
    assert values(f"售价{text}元。") == [n]


@given(st.integers(1, 9), st.integers(1, 9), st.sampled_from([(100, "百"), (1000, "千"),
                                                              (10**4, "万"), (10**8, "亿")]))
@example(2, 5, (1000, "千"))  # 两千五 is 2,500, not 2,005
@example(1, 2, (10**4, "万"))  # 一万二 is 12,000, not 10,002
def test_colloquial_abbreviations_count_in_the_next_lower_place(head, tail, scale):
    value, char = scale
    text = ("两" if head == 2 else _CN_DIGITS[head]) + char + _CN_DIGITS[tail]
    assert values(f"共有{text}人。") == [head * value + tail * value // 10]


@given(st.integers(1, 9), st.integers(1, 9), st.sampled_from([(10**4, "万"), (10**8, "亿")]))
@example(3, 5, (10**4, "万"))  # 三点五万 is 35,000, not 50,000
def test_decimal_numerals_with_a_scale(whole, tenth, scale):
    value, char = scale
    text = f"{_CN_DIGITS[whole]}点{_CN_DIGITS[tenth]}{char}"
    assert values(f"保修{text}公里。") == [(whole * 10 + tenth) * value // 10]


@given(st.integers(1, 9), st.sampled_from([(20, "廿"), (30, "卅"), (40, "卌")]))
def test_twenty_thirty_forty_characters(units, tens):
    value, char = tens
    assert values(f"请在{char}{_CN_DIGITS[units]}天内退货。") == [value + units]


@given(st.integers(1, 50))
def test_circled_numbers_read_back(n):
    assert values(f"The warranty lasts {circled(n)} years.") == [n]


@given(st.integers(1, 3999))
@example(5)
@example(14)
def test_roman_numeral_characters_read_back(n):
    assert values(f"The course lasts {roman(n)} weeks.") == [n]


def test_non_canonical_roman_numeral_characters_are_unreadable():
    found = read("The course lasts ⅠⅠⅠⅠⅠ weeks.")
    assert not found.quantities and [u.text for u in found.unreadable] == ["ⅠⅠⅠⅠⅠ"]


@given(st.integers(0, 10**7), st.sampled_from(_ZEROS))
def test_digits_of_other_scripts_read_back(n, zero):
    assert values(f"The battery lasts {in_script(n, zero)} hours.") == [n]


@given(st.integers(10, 10**6), st.sampled_from(_ZEROS[1:]))
def test_one_number_mixing_digit_scripts_is_unreadable(n, zero):
    text = str(n)
    mixed = text[0] + in_script(int(text[1:]), zero).rjust(len(text) - 1, chr(zero))
    found = read(f"The battery lasts {mixed} hours.")
    assert not found.quantities and len(found.unreadable) == 1


# --- ranges and coordination -----------------------------------------------------------------


def _render(n: int, form: str) -> str:
    return words(n) if form == "words" else str(n)


@given(st.integers(1, 10**6), st.integers(1, 10**6), st.sampled_from(["words", "digits"]),
       st.sampled_from(["between {} and {}", "{} and {}", "{} to {}", "from {} to {}"]),
       st.sampled_from(["years", "hours", "percent", "days"]))
@example(2, 3, "words", "between {} and {}", "years")
@example(7, 8, "words", "{} and {}", "hours")
@example(60, 70, "words", "between {} and {}", "percent")
def test_a_range_is_its_two_ends_never_their_sum(a, b, form, frame, unit):
    assume(a < b)
    text = f"It lasts {frame.format(_render(a, form), _render(b, form))} {unit}."
    found = read(text)
    assert [q.value for q in found.quantities] == [a, b]
    assert len({q.unit for q in found.quantities}) == 1  # the first end takes the unit
    assert [(r.low, r.high) for r in found.ranges] == [(a, b)]


@given(st.lists(st.integers(2, 99), min_size=2, max_size=4, unique=True))  # "one" is a word
def test_coordinated_numbers_in_words_are_never_summed(numbers):
    listed = ", ".join(words(n) for n in numbers[:-1]) + f" and {words(numbers[-1])}"
    assert values(f"The sizes are {listed} inches.") == numbers


# --- what cannot be read states nothing ------------------------------------------------------

_UNREADABLE_FORMS = (
    lambda n: str(n) + "O",  # "5O": a letter O after the digits
    lambda n: str(n).replace("0", "O") if "0" in str(n) else f"{n}O",
    lambda n: f"\u202e{n}\u202c",  # shown reversed by a right-to-left override
    lambda n: f"\u202d{n}\u2069",
)


@given(st.integers(1, 10**6), st.integers(0, 10**6), st.sampled_from(range(4)))
@example(5, 50, 0)
@example(25, 25, 2)
def test_an_unreadable_number_is_no_evidence(shown, claimed, form):
    unreadable = _UNREADABLE_FORMS[form](shown)
    evidence = f"The warranty lasts {unreadable} years."
    found = read(evidence)
    assert not found.quantities and found.unreadable
    assert check_support(f"The warranty lasts {claimed} years.", [evidence]).missing


@given(st.integers(1, 10**6), st.sampled_from(range(4)))
def test_a_claim_with_an_unreadable_number_needs_the_same_characters(n, form):
    unreadable = _UNREADABLE_FORMS[form](n)
    claim = f"The warranty lasts {unreadable} years."
    assert check_support(claim, [f"The warranty lasts {n} years."]).missing
    assert not check_support(claim, [claim]).missing


@given(st.integers(0, 10**6), st.sampled_from(["\u200e", "\u200f", "\u2066", "\u2067",
                                                "\u2068", "\u2069", "\u061c", "\u202a",
                                                "\u202b", "\u202c"]), st.integers(0, 7))
def test_bidi_marks_and_embeddings_are_removed_before_reading(n, control, at):
    digits = str(n)
    at = min(at, len(digits))
    assert values(f"It costs {digits[:at]}{control}{digits[at:]} dollars.") == [n]


# --- end to end through the support check: both ways -----------------------------------------

_EN_FORMS = ("digits", "words", "circled", "roman", "script")
_ZH_FORMS = ("digits", "chinese", "financial")


def _en(n: int, form: str, zero: int) -> str:
    return {"digits": str, "words": words, "circled": circled, "roman": roman,
            "script": lambda v: in_script(v, zero)}[form](n)


def _zh(n: int, form: str) -> str:
    return str(n) if form == "digits" else chinese(n, financial=form == "financial")


def _lacks(claim: str, context: str) -> tuple[str, ...]:
    # An obeying judge says ENT and quotes the context sentence (the one the claim restates).
    return unsupported_specifics(claim, [context], context)


@given(st.integers(1, 50), st.integers(1, 50), st.sampled_from(_EN_FORMS),
       st.sampled_from(_EN_FORMS), st.sampled_from(_ZEROS))
@example(5, 3, "circled", "digits", _ZEROS[0])
@example(5, 8, "roman", "digits", _ZEROS[0])
def test_english_sentences_both_ways(source, stated, source_form, claim_form, zero):
    context = f"The warranty lasts {_en(source, source_form, zero)} years."
    claim = f"The warranty lasts {_en(stated, claim_form, zero)} years."
    assert bool(_lacks(claim, context)) == (source != stated)


@given(st.integers(2, 10**8), st.integers(2, 10**8), st.sampled_from(_ZH_FORMS),
       st.sampled_from(_ZH_FORMS))
@example(35000, 50000, "chinese", "digits")
@example(2500, 2005, "chinese", "digits")
def test_chinese_sentences_both_ways(source, stated, source_form, claim_form):
    context = f"该车保修{_zh(source, source_form)}公里。"
    claim = f"该车保修{_zh(stated, claim_form)}公里。"
    assert bool(_lacks(claim, context)) == (source != stated)


@given(st.integers(1, 99), st.integers(1, 99), st.integers(1, 200), st.booleans())
@example(2, 3, 5, True)
@example(7, 8, 15, True)
def test_a_range_supports_no_sum(a, b, claimed, in_words):
    assume(a < b and claimed not in (a, b))
    ends = (words(a), words(b)) if in_words else (a, b)
    context = f"The warranty lasts between {ends[0]} and {ends[1]} years."
    assert _lacks(f"The warranty lasts {claimed} years.", context)
    assert not _lacks(f"The warranty lasts {a} to {b} years.", context)
