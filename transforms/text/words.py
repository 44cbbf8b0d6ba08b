"""Words: the one tokeniser, stemmer and stopword list of rt4chart's text checks.

Pure functions, no Beam. Everything that compares the words of a claim
with the words of evidence, a window or a sentence (grounding, support, coverage, pruning, the
assertion classifier, the offline judge) reads them here, so that "the same word" means the
same thing in every check.

Two readings of a text:

- ``fold``/``stem``/``content_terms``: lower-cased words with possessives dropped and camelCase,
  snake_case and letter/digit boundaries split, stemmed (plural and common inflections);
- ``word_forms``/``content_words``: the surface forms of structured text. Contexts are full of
  JSON records, tables and key/value lines whose keys glue words together:
  ``RestaurantsTakeOut``, ``review_text``, ``walk-in``, ``24hours``. A word is taken apart at
  case changes, at ``_`` and ``-`` and at digit/letter boundaries, and the glued forms are kept
  as well ("takeout", "wifi", "5pm"), so that a claim written either way finds it. Every plain
  word the text had before (a run of letters and digits) is still a word: splitting only ever
  adds words.

Across languages (`language`): a run of Han, Kana or Hangul characters is cut into overlapping
character bigrams wherever words are read (``fold``, ``word_forms``), full-width letters and
digits read as their ASCII forms, and the stopwords of a text are the English list plus, when
the text is confidently in another language, that language's list from stopwords-iso
(`stopwords_of`). Stems are English (`stem`); the prefix comparisons (`same_stem`,
`short_stem`) serve inflected languages too.

Every reading starts from `normalize.normalize`: invisible characters removed, NFKC (full-width
letters and digits as their ASCII forms, ligatures taken apart), look-alike letters of
mixed-script words folded, so that the words of a quote and of the context compare alike.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

from rt4chart.transforms.text.cjk_numbers import INSERTED_WORDS_RE, rewrite
from rt4chart.transforms.text.language import (
    CJK_RUN_RE,
    UNDETERMINED,
    cjk_units,
    detect,
    has_cjk,
    is_cjk,
)
from rt4chart.transforms.text.normalize import normalize

# Function words: they say nothing about what a sentence is about. The one list; the word
# classes of `vocabulary` (words about the sources, the answer, the reader) are separate.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves may might must shall however thus therefore etc via per yes okay ok please
    overall additionally also furthermore moreover finally first firstly second secondly lastly
    sure certainly here according based given ll ve re don doesn didn isn aren wasn weren
    won wouldn couldn shouldn hasn haven hadn done onto st nd rd th s t""".split()
)
DOTTED_RE = re.compile(r"\b(?:[A-Z]\.){2,}")
# Letter/digit boundaries of any script ("K24" with a Kelvin sign folds as "K24" does).
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])")
POSSESSIVE_RE = re.compile(r"(?<=\w)['’]s\b|(?<=s)['’](?!\w)")
_DOUBLE_END_RE = re.compile(r"([b-df-hj-km-np-rtv-y])\1$")
# A compound: letter/digit runs joined by "_" or "-" (snake_case, kebab-case).
_COMPOUND_RE = re.compile(r"[^\W_]+(?:[_-][^\W_]+)*")
_RUN_RE = re.compile(r"[^\W_]+")
# Adjacent parts glued back together, up to this many: "Take"+"Out" -> "takeout".
MAX_GLUED = 3
# A line of a JSON object: "key": value
_KEY_LINE_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.*?)\s*$')


def split_run(run: str) -> list[str]:
    """A run of letters and digits cut at case changes and digit/letter boundaries.

    "RestaurantsTakeOut" -> Restaurants, Take, Out; "HTTPServer" -> HTTP, Server;
    "WiFi" -> Wi, Fi; "5pm" -> 5, pm; "COVID19" -> COVID, 19.
    """
    parts, start = [], 0
    for i in range(1, len(run)):
        a, b = run[i - 1], run[i]
        after = run[i + 1] if i + 1 < len(run) else ""
        if (a.isdigit() != b.isdigit() or a.islower() and b.isupper()
                or a.isupper() and b.isupper() and after.islower()):
            parts.append(run[start:i])
            start = i
    parts.append(run[start:])
    return parts


def _glued(parts: Sequence[str]) -> Iterable[str]:
    for size in range(2, MAX_GLUED + 1):
        for i in range(len(parts) - size + 1):
            yield "".join(parts[i : i + size])
    if len(parts) > MAX_GLUED:
        yield "".join(parts)


def _spaced_cjk(text: str) -> str:
    """`text` with each Han, Kana or Hangul run replaced by its bigrams, spaced apart."""
    return CJK_RUN_RE.sub(lambda m: " " + " ".join(cjk_units(m.group())) + " ", text)


@functools.lru_cache(maxsize=16384)  # a trace's sentences are read once per claim
def word_forms(text: str) -> frozenset[str]:
    """Every lower-cased word form of a text: plain runs, their parts and the glued parts
    (Han, Kana and Hangul runs as their bigrams)."""
    text = normalize(text)
    if has_cjk(text):
        text = _spaced_cjk(text)
    forms: set[str] = set()
    for compound in _COMPOUND_RE.findall(text):
        runs = _RUN_RE.findall(compound)
        parts = [p for run in runs for p in split_run(run)]
        forms.update(runs)
        forms.update(parts)
        forms.update(_glued(parts))
    return frozenset(f.lower() for f in forms)


@functools.lru_cache(maxsize=64)
def language_stopwords(code: str) -> frozenset[str]:
    """The stopwords that apply in language `code` (ISO 639-1): the English list, plus the
    language's list from stopwords-iso (shipped in its wheel), lower-cased, when it has one."""
    if code in ("en", UNDETERMINED):
        return STOPWORDS
    import stopwordsiso

    if not stopwordsiso.has_lang(code):
        return STOPWORDS
    return STOPWORDS | frozenset(w.lower() for w in stopwordsiso.stopwords(code))


def stopwords_of(text: str) -> frozenset[str]:
    """The stopwords that apply to `text`: the English list, plus the list of the language
    `text` is in when it is confidently another one (`language.detect`)."""
    return language_stopwords(detect(text))


def is_stopword(word: str, stopwords: frozenset[str] = STOPWORDS) -> bool:
    """Whether a lower-cased word (a bigram for Han, Kana and Hangul) is a stopword: in the
    list, or a bigram both of whose characters are."""
    if word in stopwords:
        return True
    return len(word) == 2 and is_cjk(word[0]) and word[0] in stopwords and word[1] in stopwords


def _content_word(word: str, stopwords: frozenset[str]) -> bool:
    if word.isdigit():
        return True
    if is_cjk(word[:1]):
        return not is_stopword(word, stopwords)
    return len(word) >= 3 and word not in stopwords


@functools.lru_cache(maxsize=16384)  # a trace's sentences are read once per claim
def content_words(text: str) -> frozenset[str]:
    """Word forms of 3+ characters (Han, Kana, Hangul bigrams and single characters) that are
    not stopwords, and all numbers."""
    stopwords = stopwords_of(text)
    return frozenset(w for w in word_forms(_cjk_numbers(text)) if _content_word(w, stopwords))


def same_stem(a: str, b: str) -> bool:
    """The same word, or a shared 4-letter stem of a 5+ letter word: "verified"/"verify",
    "groups"/"group", "takes"/"take"."""
    if a == b:
        return True
    if min(len(a), len(b)) < 4 or max(len(a), len(b)) < 5:
        return False
    return a[:4] == b[:4]


def json_key_paths(lines: Sequence[str]) -> list[tuple[str, ...]]:
    """For each line of pretty-printed JSON, the keys it sits under and its own key.

    ``"street": true`` inside ``"BusinessParking": {`` gets ("BusinessParking", "street"); a
    line that is not a ``"key": value`` line gets (). Lines come one per JSON line, as the
    context's sentences do; a closing bracket without its opener (a window that starts inside
    an object) is ignored.
    """
    stack: list[str] = []
    paths: list[tuple[str, ...]] = []
    for line in lines:
        text = line.strip()
        match = _KEY_LINE_RE.match(text)
        if match:
            key, value = match.groups()
            paths.append((*(k for k in stack if k), key))
            if value.rstrip(",").strip() in ("{", "["):
                stack.append(key)
            continue
        paths.append(())
        if text.rstrip(",") in ("{", "["):
            stack.append("")  # an unnamed object or array (the record, an array element)
        elif text[:1] in ("}", "]") and stack:
            stack.pop()
    return paths


def stem(word: str) -> str:
    """Strip plural and common inflections (lower-case input): "extended" -> "extend"."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 4 and word.endswith("ing"):
        word = _DOUBLE_END_RE.sub(r"\1", word[:-3])
    elif len(word) > 3 and word.endswith("ed") and not word.endswith("eed"):
        word = _DOUBLE_END_RE.sub(r"\1", word[:-2])
    return word[:-1] if len(word) >= 3 and word.endswith("e") else word


@functools.lru_cache(maxsize=16384)
def fold(text: str) -> str:
    """Lower-case words and digits separated by single spaces; possessives dropped; camelCase,
    snake_case, hyphens and letter/digit boundaries split ("RestaurantsTakeOut" -> "restaurants
    take out", "Acme's" -> "acme")."""
    text = DOTTED_RE.sub(lambda m: m.group().replace(".", ""), normalize(text))
    text = _CAMEL_RE.sub(" ", POSSESSIVE_RE.sub("", text))
    if has_cjk(text):
        text = _spaced_cjk(text)
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


@functools.lru_cache(maxsize=16384)  # a trace's sentences are read once per claim
def content_terms(text: str) -> frozenset[str]:
    """Stems of the words of `text` that are not stopwords or single letters (Han, Kana and
    Hangul bigrams that are not stopwords)."""
    stopwords = stopwords_of(text)
    return frozenset(stem(w) for w in fold(_cjk_numbers(text)).split()
                     if len(w) > 1 and not w.isdigit() and not is_stopword(w, stopwords))


def _cjk_numbers(text: str) -> str:
    """A CJK text with its numerals as digits (`cjk_numbers.rewrite`): "八十五元" and
    "一百二十元" differ in their number, not in their words."""
    if not has_cjk(text):
        return text
    return INSERTED_WORDS_RE.sub(lambda m: " " * len(m.group()), rewrite(text))


def short_stem(word: str) -> str:
    """The key `same_stem` compares by: a 5+ letter word's first 4 letters, else the word."""
    return word[:4] if len(word) >= 5 else word
