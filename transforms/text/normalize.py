"""One normalisation for every comparison of text: the judge's quote and the context alike.

A model quotes what it reads, in the form it writes: "financial" for a context that has the
ligature "ﬁnancial", "medication" for "medi\u00adcation" with a soft hyphen, "café" for "cafe"
plus a combining accent, "120 mg" for full-width "１２０ ｍｇ", "Amoxicillin" for a word whose
"A" is Cyrillic. Grounding (`checks.evidence`), support (`checks.support`) and coverage
(`checks.coverage`, through `words.fold`) compare text after `normalize`, so that they all see
the same text:

1. invisible characters removed: soft hyphens, zero-width characters, bidi controls, variation
   selectors and the rest of Unicode's Default_Ignorable_Code_Point set (derived here as
   Unicode derives it, from the general category Cf and the Other_Default_Ignorable list);
2. NFKC, one grapheme cluster (a base character and its combining marks) at a time, so that
   every output character keeps the offsets of the characters it came from (`mapped`).
   Superscripts, subscripts and vulgar fractions are left as written: NFKC would make "10⁶"
   read as 106 and "2½" as 21⁄2, another number;
3. look-alike letters inside a word that mixes scripts folded to their Unicode TS #39
   prototype in the word's main script (the confusables table of `disarm`, generated from
   Unicode's confusables.txt): "Аmoxicillin" with a Cyrillic "А" reads "Amoxicillin",
   "Mосква" with a Latin "M" reads "Москва".

What is not folded, and why:

- a word written in one script: Russian, Greek or any other text compares as written, so a
  language's stopwords and vocabularies still match its words. A whole word of Cyrillic
  look-alikes standing for a Latin one ("сосоа" for "cocoa") is therefore not matched: it is
  a spoof, not a way a faithful context is written, and it fails on the safe side (its quote
  is not found, the claim is not supported);
- digits, and letters whose prototype is a digit (TS #39 puts "0" with "O" and "1" with "l",
  and Cyrillic "З" with "3"): a number is whatever the number reader (`text.quantities`)
  reads, so "5O days" (a letter O) never becomes "50 days" here;
- Latin letters within Latin words ("rn" is not "m", "I" is not "l": ASCII is how answers and
  judges write), and Han, Kana and Hangul (CJK text is compared by character bigrams and read
  for its numerals as it is).

Pure functions, cached per text (a trace's sentences are compared once per claim).
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass

from rt4chart.transforms.text.language import is_cjk

# Other_Default_Ignorable_Code_Point and Variation_Selector (Unicode's PropList.txt), the
# code points that are default-ignorable without being of category Cf.
_OTHER_IGNORABLE = (
    (0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2065, 0x2065),
    (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0FFF),
)
# Characters of category Cf that are not default-ignorable (DerivedCoreProperties.txt): the
# prepended concatenation marks (Arabic number signs, which are visible), the interlinear
# annotation characters and the Egyptian hieroglyph format controls.
_VISIBLE_FORMAT = (
    (0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0xFFF9, 0xFFFB),
    (0x13430, 0x1345F),
)
# NFKC decompositions kept as written: they would change a number ("10⁶", "2½", "H₂").
_KEPT_TAGS = ("<super>", "<sub>", "<fraction>")
# Hangul vowel and final jamo compose with the syllable before them under NFC.
_JAMO_TAIL = (0x1160, 0x11FF)
# Scripts whose look-alikes `disarm` folds toward (its confusables targets).
_TARGETS = {"LATIN": "latin", "CYRILLIC": "cyrillic"}


def _within(code: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(lo <= code <= hi for lo, hi in ranges)


@functools.lru_cache(maxsize=4096)
def is_ignorable(ch: str) -> bool:
    """Whether a character is default-ignorable (invisible, and ignored in comparisons): soft
    hyphen, zero-width space and joiners, bidi controls, BOM, variation selectors, tags."""
    code = ord(ch)
    if _within(code, _OTHER_IGNORABLE):
        return True
    return unicodedata.category(ch) == "Cf" and not _within(code, _VISIBLE_FORMAT)


def _joins(ch: str) -> bool:
    """Whether a character belongs to the cluster before it: a combining mark, a Hangul jamo
    vowel or final."""
    return unicodedata.category(ch)[0] == "M" or _JAMO_TAIL[0] <= ord(ch) <= _JAMO_TAIL[1]


@dataclass(frozen=True)
class Mapped:
    """Normalised text and, for each of its characters, the span [start, end) of the source
    characters it came from (a cluster, with the invisible characters after it)."""

    text: str
    starts: tuple[int, ...]
    ends: tuple[int, ...]


def _clusters(text: str) -> list[tuple[int, int, str]]:
    """(start, end, visible characters) of each cluster of `text`; invisible characters are
    dropped, their offsets given to the cluster before them."""
    out: list[tuple[int, int, str]] = []
    for i, ch in enumerate(text):
        if is_ignorable(ch):
            if out:
                start, _, chars = out[-1]
                out[-1] = (start, i + 1, chars)
        elif out and out[-1][2] and _joins(ch):
            start, _, chars = out[-1]
            out[-1] = (start, i + 1, chars + ch)
        else:
            out.append((i, i + 1, ch))
    return out


@functools.lru_cache(maxsize=16384)
def _compatible(cluster: str) -> str:
    """NFKC of one cluster, or NFC where NFKC would rewrite a superscript, subscript or
    vulgar fraction."""
    if unicodedata.decomposition(cluster[0]).startswith(_KEPT_TAGS):
        return unicodedata.normalize("NFC", cluster)
    if unicodedata.category(cluster[0]) == "Nl":
        # A letter-like number (Roman numeral characters: "Ⅴ" is 5, NFKC would make it the
        # letter "V", which the number reader rightly does not read): kept for the reader.
        return unicodedata.normalize("NFC", cluster)
    return unicodedata.normalize("NFKC", cluster)


@functools.lru_cache(maxsize=4096)
def script_of(ch: str) -> str:
    """The script of a letter as its Unicode name says it ("LATIN", "CYRILLIC", "GREEK"), ""
    for a character that is not a letter or has no name."""
    if not ch.isalpha():
        return ""
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else ""


@functools.lru_cache(maxsize=8192)
def prototype(ch: str, script: str) -> str:
    """The TS #39 prototype of letter `ch` among the letters of `script` ("LATIN" or
    "CYRILLIC"), or `ch` itself when it has none there, when it is Han, Kana or Hangul, or when
    its prototype is not a letter of that script (a digit: "З" is not "3")."""
    target = _TARGETS.get(script)
    if target is None or is_cjk(ch) or not ch.isalpha():
        return ch
    from disarm import normalize_confusables

    folded = normalize_confusables(ch, target_script=target, digit_policy="preserve")
    if folded and all(c.isalpha() and script_of(c) == script for c in folded):
        return folded
    return ch


def _main_script(word: str) -> str:
    """The script most of a word's letters are in ("" when it has one script or none): Latin
    on a tie, as answers and judges write."""
    counts: dict[str, int] = {}
    for ch in word:
        script = script_of(ch)
        if script:
            counts[script] = counts.get(script, 0) + 1
    if len(counts) < 2:
        return ""
    most = max(counts.values())
    return "LATIN" if counts.get("LATIN") == most else max(counts, key=counts.__getitem__)


def _fold_words(chars: list[str], starts: list[int], ends: list[int]) -> Mapped:
    """Look-alike letters of mixed-script words folded to the word's main script."""
    out, out_starts, out_ends = [], [], []
    i = 0
    while i < len(chars):
        j = i
        while j < len(chars) and (chars[j].isalnum() or unicodedata.category(chars[j])[0] == "M"):
            j += 1
        j = max(j, i + 1)
        script = _main_script("".join(chars[i:j]))
        for k in range(i, j):
            folded = prototype(chars[k], script) if script and script_of(chars[k]) != script \
                else chars[k]
            out.append(folded)
            out_starts += [starts[k]] * len(folded)
            out_ends += [ends[k]] * len(folded)
        i = j
    return Mapped("".join(out), tuple(out_starts), tuple(out_ends))


@functools.lru_cache(maxsize=16384)  # frozen; the context's sentences, once per claim
def mapped(text: str) -> Mapped:
    """`normalize(text)` with, for each of its characters, the span of `text` it came from:
    what lets evidence found in normalised text point into the original."""
    if text.isascii():  # most text: nothing to remove, compose or fold
        return Mapped(text, tuple(range(len(text))), tuple(range(1, len(text) + 1)))
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    for start, end, cluster in _clusters(text):
        if not cluster:
            continue
        for ch in _compatible(cluster):
            chars.append(ch)
            starts.append(start)
            ends.append(end)
    return _fold_words(chars, starts, ends)


@functools.lru_cache(maxsize=16384)
def normalize(text: str) -> str:
    """`text` as every check compares it: invisible characters removed, NFKC (superscripts,
    subscripts and vulgar fractions kept), look-alike letters of mixed-script words folded
    to their TS #39 prototype (see the module's docstring)."""
    if text.isascii():
        return text  # nothing to do, and most text is ASCII
    return mapped(text).text
