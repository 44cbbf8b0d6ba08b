"""Property tests of the language-aware readers: CJK numerals, bigram segmentation, language
detection and the locale number reader never raise and keep their invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.transforms.text.cjk_numbers import numeral_value, rewrite
from rt4chart.transforms.text.language import (
    CJK_RUN_RE,
    anchor_units,
    cjk_units,
    detect,
    normalize_width,
    remark_length,
)
from rt4chart.transforms.text.locale_numbers import locale_numbers
from rt4chart.transforms.text.normalize import normalize
from rt4chart.transforms.text.quantities import number_terms, read
from rt4chart.transforms.text.words import content_words, fold, word_forms

_DIGITS = "零一二三四五六七八九"
# Characters of every script the readers treat apart, numerals and signs among them.
_ALPHABET = ("酒店提供自助早餐三千多两百数几十万亿点半年月日元下午ホテルはですかカタ a few hundred"
             "호텔은조식을제공합니다 Das Hotel hat Zimmer. 0123456789,.%:-、。！？１２３％ＡＢ")
texts = st.text(alphabet=st.sampled_from(_ALPHABET), max_size=60) | st.text(max_size=40)


def _chinese(n: int) -> str:
    """n (1..99,999,999) written as a Chinese numeral, the test's own renderer."""
    def below_10000(m: int) -> str:
        out, zero = "", False
        for value, mark in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
            digit = m // value % 10
            if digit:
                out += ("零" if zero and out else "") + _DIGITS[digit] + mark
                zero = False
            else:
                zero = True
        return out
    high, low = divmod(n, 10000)
    if not high:
        return below_10000(low)
    text = below_10000(high) + "万"
    return text + ("零" if 0 < low < 1000 else "") + below_10000(low) if low else text


@given(st.integers(min_value=1, max_value=99_999_999))
def test_a_chinese_numeral_reads_as_its_value(n):
    assert numeral_value(_chinese(n)) == n


@given(texts)
@settings(max_examples=300, deadline=None)  # the first call loads the model
def test_the_readers_never_raise(text):
    rewrite(text)
    read(text)
    number_terms(text)  # what window pruning compares (it once failed on "数百", "a few hundred")
    locale_numbers(text)
    assert isinstance(detect(text), str) and detect(text)
    assert remark_length(text) >= 0


@given(st.text(alphabet=st.sampled_from("酒店提供自助早餐ホテルです호텔조식"), min_size=1,
               max_size=30))
def test_bigrams_overlap_by_one_character_and_rebuild_the_run(run):
    units = cjk_units(run)
    assert all(len(u) <= 2 for u in units)
    assert units[0] + "".join(u[1:] for u in units[1:]) == run
    assert all(1 <= len(u) <= 2 and u in run for u in anchor_units(run))


@given(texts)
@settings(deadline=None)
def test_no_word_of_fold_spans_two_cjk_units(text):
    for word in fold(text).split():
        run = "".join(CJK_RUN_RE.findall(word))
        assert not run or word == run and len(word) <= 2
    # CJK numerals are read as digits ("三十" -> 30, "0日百" -> "0 days 百"), so a number may be
    # a content word that is not a word form, and a Han run may be cut at a number; every
    # other content word is a word form, and all are in the text as every check reads it
    # (`text.normalize`: NFKC, invisible characters removed).
    folded = normalize(text).lower().replace("-", "").replace("_", "")
    assert all(w in folded for w in content_words(text) if not w.isdigit())
    assert {w for w in content_words(text) if not w.isdigit() and not CJK_RUN_RE.search(w)
            } <= word_forms(text)


@given(texts)
def test_width_normalisation_keeps_the_length_and_is_idempotent(text):
    once = normalize_width(text)
    assert len(once) == len(text) and normalize_width(once) == once


@given(st.integers(min_value=1000, max_value=10**9))
def test_grouped_thousands_read_as_one_number_in_every_locale_form(n):
    dotted = f"{n:,}".replace(",", ".")
    spaced = f"{n:,}".replace(",", " ")
    assert locale_numbers(dotted) == str(n) == locale_numbers(spaced)
