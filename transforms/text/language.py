"""Languages and scripts: which language a text is in, and how its words are cut.

Two readings, both pure functions of the text:

- the script of each character (Han, Kana, Hangul, or an alphabet). Chinese and Japanese put no
  space between words, so a run of Han, Kana or Hangul characters is cut into overlapping
  character bigrams (`cjk_units`): "酒店提供自助早餐" -> 酒店 店提 提供 供自 自助 助早 早餐. A
  bigram is the unit that Chinese and Japanese retrieval engines index when they have no
  dictionary (Lucene's CJKAnalyzer, Elasticsearch's `cjk_bigram`); it needs no dictionary and
  finds the words a claim shares with a quote ("自助早餐" is in both whatever surrounds it).
  Korean writes spaces, but particles are glued to its words, so its runs are cut the same way.
- the language (`detect`): Hangul is Korean, Kana is Japanese, Han without Kana is Chinese;
  other text goes to py3langid (a maintained fork of langid.py; its model ships inside the
  wheel, nothing is downloaded), and a language is named only when the model is confident
  (`MIN_CONFIDENCE`) about at least `MIN_WORDS` words, else "und" (undetermined).

`SUPPORT` says what the text package reads in each language, for the run's notes and the
user's documentation (docs/languages.md).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

UNDETERMINED = "und"
# py3langid's probability (normalised over its languages) below which a text's language is
# not named. Measured on 4,275 English sentences of RAGTruth's answers: one (0.02%) was named
# another language with >= 0.5, none with >= 0.7.
MIN_CONFIDENCE = 0.7
# Fewer words than this are too few to name a language from ("Yes.", "OK, 30.").
MIN_WORDS = 3

# Han (CJK unified ideographs, extension A, compatibility ideographs), Kana (Hiragana,
# Katakana, half-width Katakana, the prolonged sound mark), Hangul (syllables, jamo).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3041-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = "\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f"
CJK_CLASS = _HAN + _KANA + _HANGUL
CJK_RUN_RE = re.compile(f"[{CJK_CLASS}]+")
_HAN_RE = re.compile(f"[{_HAN}]")
_KANA_RE = re.compile(f"[{_KANA}]")
_HANGUL_RE = re.compile(f"[{_HANGUL}]")
_LETTER_RE = re.compile(r"[^\W\d_]+")
# English function words that no other language of the Latin script writes as often: a text with
# ENGLISH_CUE_WORDS of them, making ENGLISH_CUE_SHARE of its words, is English without asking the
# model (most English text; the model takes about a millisecond a sentence).
_ENGLISH_CUES = frozenset(
    "the and are were with that this from have has it its which not".split())
ENGLISH_CUE_WORDS = 2
ENGLISH_CUE_SHARE = 0.15
# Sentence-final punctuation of Chinese and Japanese (full stop, exclamation, question mark,
# their full-width forms) and the ideographic full stop: a sentence ends after it.
CJK_SENTENCE_END = "。！？｡"


@dataclass(frozen=True)
class Support:
    """What the text package reads in a language.

    Attributes:
        words: how words are cut: "spaces" or "bigrams" (Han, Kana, Hangul runs).
        stopwords: whose stopword list is used: "rt4chart" (English, curated), "stopwords-iso"
            or "none".
        frame: whether the assertion classifier has the language's words about the sources,
            the answer and the reader (only English); elsewhere a sentence the judge left
            without claims is re-added only when it carries a specific or shares content with
            the question or the context.
        numbers: the number forms read beyond digits ("words", "cjk numerals").
    """

    words: str
    stopwords: str
    frame: bool
    numbers: str


_LATIN = Support("spaces", "stopwords-iso", False, "digits in every locale form")
SUPPORT = {
    "en": Support("spaces", "rt4chart", True, "digits, number words, vague amounts"),
    **{code: _LATIN for code in "de fr es it pt nl sv da no fi ru pl".split()},
    "zh": Support("bigrams", "stopwords-iso", False, "digits, Chinese numerals, vague amounts"),
    "ja": Support("bigrams", "stopwords-iso", False, "digits, Japanese numerals, vague amounts"),
    "ko": Support("bigrams", "stopwords-iso", False, "digits, Sino-Korean scale words"),
}
UNSUPPORTED = Support("spaces", "none", False, "digits in every locale form")


def support(code: str) -> Support:
    """What is read in language `code` (ISO 639-1; "und" and unknown codes get the least)."""
    return SUPPORT.get(code, UNSUPPORTED)


def is_cjk(ch: str) -> bool:
    """Whether a character is Han, Kana or Hangul."""
    return bool(CJK_RUN_RE.fullmatch(ch))


def cjk_units(run: str) -> list[str]:
    """A run of Han, Kana or Hangul characters cut into overlapping bigrams; a single character
    is its own unit. "早餐" -> [早餐]; "自助早餐" -> [自助, 助早, 早餐]."""
    if len(run) <= 1:
        return [run] if run else []
    return [run[i:i + 2] for i in range(len(run) - 1)]


# Full-width forms of ASCII (U+FF01-U+FF5E) and the ideographic space: their NFKC forms.
_WIDTH = {0xFF01 + i: 0x21 + i for i in range(0x5E)} | {0x3000: 0x20}


def normalize_width(text: str) -> str:
    """Full-width Latin letters, digits and signs as their ASCII forms ("１２０％" -> "120%"),
    leaving Han, Kana and Hangul as they are; same length as `text`."""
    return text.translate(_WIDTH)


@functools.lru_cache(maxsize=1)
def _identifier():
    # Imported lazily: loading the model takes about a second, and English-only paths that
    # never ask for a language do not pay it.
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@functools.lru_cache(maxsize=65536)
def detect(text: str) -> str:
    """The language of `text` as an ISO 639-1 code, or "und" when it cannot be told.

    Hangul makes Korean, Kana Japanese, Han without Kana Chinese (a text whose letters are
    mostly of these scripts); a text with enough English function words is English; otherwise
    py3langid names the language when it is at least MIN_CONFIDENCE sure about MIN_WORDS or
    more words.
    """
    letters = "".join(_LETTER_RE.findall(text))
    if not letters:
        return UNDETERMINED
    cjk = sum(1 for ch in letters if is_cjk(ch))
    if 2 * cjk >= len(letters):
        if _HANGUL_RE.search(letters):
            return "ko"
        return "ja" if _KANA_RE.search(letters) else "zh"
    words = _LETTER_RE.findall(text)
    if len(words) < MIN_WORDS:
        return UNDETERMINED
    cues = sum(1 for w in words if w.lower() in _ENGLISH_CUES)
    if cues >= ENGLISH_CUE_WORDS and cues >= ENGLISH_CUE_SHARE * len(words):
        return "en"
    code, confidence = _identifier().classify(text)
    return code if confidence >= MIN_CONFIDENCE else UNDETERMINED


def has_cjk(text: str) -> bool:
    """Whether `text` has a Han, Kana or Hangul character."""
    return bool(CJK_RUN_RE.search(text))


def has_han(text: str) -> bool:
    return bool(_HAN_RE.search(text))


_HIRAGANA_RE = re.compile("[\u3041-\u309f]")
_HANGUL_WORD_RE = re.compile(f"[{_HANGUL}]+")


def anchor_units(text: str) -> list[str]:
    """The Han, Kana and Hangul units of `text` that carry its topic, as `cjk_units` cuts them:
    Han and Katakana bigrams; for a Korean word (Korean writes spaces, and glues particles and
    endings to its words) its first two syllables. Units with Hiragana (Japanese particles,
    verb endings) are left out: they are in every Japanese text."""
    units: list[str] = []
    for run in CJK_RUN_RE.findall(text):
        for word in _HANGUL_WORD_RE.findall(run):
            units.append(word[:2])
        rest = _HANGUL_WORD_RE.sub(" ", run)
        for piece in rest.split():
            units.extend(u for u in cjk_units(piece) if not _HIRAGANA_RE.search(u))
    return units


def remark_length(text: str) -> float:
    """How long a text is in words: its runs of letters, a Han, Kana or Hangul character
    counting as half a word (Chinese and Japanese words are one to three characters long)."""
    cjk = sum(len(run) for run in CJK_RUN_RE.findall(text))
    others = len(_LETTER_RE.findall(CJK_RUN_RE.sub(" ", text)))
    return others + cjk / 2
