"""The offline judge's reading of text: tokens (stems, canonical numbers and times, month and
weekday names, camelCase keys of JSON records read as words) and sentences with their content
terms. Kept apart from the scoring (`lexical.py`), which only compares what this reads."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from rt4chart.transforms.text.words import STOPWORDS, stem

# Words that talk about the source rather than the world ("Based on the passages provided, ...")
# carry no checkable content; counting them would fail faithful answers.
_META_WORDS = frozenset(
    """based given provided passage passages article text context summary summarize information
    mention mentions mentioned state states stated sure here overall answer question""".split()
)
# Discourse and generic words that paraphrase adds freely: neither support nor novelty.
_GENERIC_WORDS = frozenset(
    """additionally additional specific specifically important importantly main mainly various
    variety several following follows follow include includes including included provide provides
    providing offer offers offered offering ensure particular particularly typically often
    generally usually also well like make makes making take takes way ways type types kind kinds
    method methods process option options need needs help helps use used using uses known even
    although though yet still already another other others many much lot lots good great able
    unable something someone thing things certain like likely can't""".split()
)
_STOPWORDS = STOPWORDS | frozenset({"said", "says"}) | _META_WORDS | _GENERIC_WORDS
_NUMBER_WORDS = {
    w: str(i)
    # "one" is left out: it is mostly a determiner ("one reviewer said"), not a quantity.
    for i, w in enumerate("two three four five six seven eight nine ten eleven twelve".split(),
                          start=2)
}
# Months and weekdays (full and abbreviated) mapped to "month:N" / "day:N".
_DATES = {
    name: f"{kind}:{i}"
    for kind, names in (
        ("month", "january,jan february,feb march,mar april,apr may june,jun july,jul august,aug "
                  "september,sep,sept october,oct november,nov december,dec"),
        ("day", "monday,mon tuesday,tue,tues wednesday,wed thursday,thu,thurs friday,fri "
                "saturday,sat sunday,sun"),
    )
    for i, group in enumerate(names.split(), start=1)
    for name in group.split(",")
}
# "May" is also a modal verb: only words like these before it make it a month.
_MAY_MONTH_CUES = frozenset("in of since until by early late mid last next this".split())
# Times ("9:00 PM", "21:0", "9 a.m.") are one token each, normalised to a 24-hour "21:00".
_TIME = r"\d{1,2}(?::\d{1,2}(?:\s*[ap]\.?\s?m\b\.?)?|\s*[ap]\.?\s?m\b\.?)"
_TIME_RE = re.compile(r"(\d{1,2})(?::(\d{1,2}))?\s*([ap])?", re.IGNORECASE)
_TOKEN_RE = re.compile(_TIME + r"|\d+(?:[.,]\d+)*|[^\W_]+(?:['’][^\W_]+)*", re.IGNORECASE)
# camelCase keys of JSON records ("OutdoorSeating") are read as words ("Outdoor Seating").
_CLITIC_RE = re.compile(r"'(?:s|re|ve|ll|d|m)$")
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z])")
# A sentence ends at . ! ? (plus closing quotes/brackets) before whitespace, or at a newline;
# not after a bare one- or two-digit number, which is a list marker ("4. Serve hot.").
_BOUNDARY_RE = re.compile(r"(?<!\b\d)(?<!\b\d\d)[.!?…]+[\"'”’)\]]*(?=\s)|\n")


class _Tok(NamedTuple):
    term: str  # normalised form: stem, canonical number, "month:5" or "day:1"
    low: str  # lowercase surface form, used for stopwords and negation
    kind: str  # "num", "date" or "word"
    cap: bool  # capitalised and not sentence-initial: likely a name


class _Sent(NamedTuple):
    start: int
    end: int
    toks: tuple[_Tok, ...]
    terms: frozenset[str]  # content terms only


def _stem(word: str) -> str:
    """Strip possessives and common inflections; consistency matters more than linguistics."""
    return stem(word.removesuffix("'s"))


def _norm_number(raw: str) -> str:
    """Canonical digits: "3,500" -> "3500", "3.50" -> "3.5", "4.0" -> "4", "07" -> "7"."""
    if len(raw) > 15:  # beyond float precision: compare the digits as written
        return raw.replace(",", "")
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return raw
    return str(int(value)) if value.is_integer() else str(value)


def _norm_time(raw: str) -> str:
    """ "9:00 PM", "21:0", "9 p.m." -> "21:00"; "12 am" -> "0:00"."""
    hour, minute, half = _TIME_RE.match(raw.replace(".", "").replace(" ", "")).groups()
    h = int(hour) % 12 + (12 if half and half.lower() == "p" else 0) if half else int(hour)
    return f"{h}:{int(minute or 0):02d}"


def _classify(raw: str, prev: str, nxt: str, first: bool) -> _Tok:
    # "here's" -> "here", "they're" -> "they": the clitic says nothing checkable.
    low = _CLITIC_RE.sub("", raw.lower().replace("’", "'"))
    cap = raw[:1].isupper() and not first
    if raw[:1].isdigit():
        if not raw[-1].isdigit() or ":" in raw:
            return _Tok(_norm_time(raw), low, "num", False)
        return _Tok(_norm_number(raw), low, "num", False)
    if low in _NUMBER_WORDS:
        return _Tok(_NUMBER_WORDS[low], low, "num", False)
    # Only capitalised names count, so that "may", "march" and "sun" stay ordinary words.
    if raw[:1].isupper() and low in _DATES:
        if low != "may" or prev in _MAY_MONTH_CUES or nxt[:1].isdigit():
            return _Tok(_DATES[low], low, "date", True)
    return _Tok(_stem(low), low, "word", cap)


def _tokenize(text: str) -> tuple[_Tok, ...]:
    raws = ["", *(m.group() for m in _TOKEN_RE.finditer(_CAMEL_RE.sub(" ", text))), ""]
    return tuple(_classify(raws[i], raws[i - 1].lower(), raws[i + 1], i == 1)
                 for i in range(1, len(raws) - 1))


def _is_content(tok: _Tok) -> bool:
    return tok.kind != "word" or (len(tok.low) > 1 and tok.low not in _STOPWORDS)


def _spans(text: str) -> list[tuple[int, int]]:
    """Sentence offsets in `text`, whitespace-trimmed, so text[start:end] is a valid quote."""
    cuts = [0, *(m.end() for m in _BOUNDARY_RE.finditer(text)), len(text)]
    spans = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        piece = text[lo:hi]
        start, end = lo + len(piece) - len(piece.lstrip()), lo + len(piece.rstrip())
        spans += [(start, end)] if end > start else []
    return spans


@functools.lru_cache(maxsize=128)
def _sentences(text: str) -> tuple[_Sent, ...]:
    # Every claim of a trace is checked against the same windows and context: parse each once.
    parsed = [(start, end, _tokenize(text[start:end])) for start, end in _spans(text)]
    return tuple(_Sent(start, end, toks, frozenset(t.term for t in toks if _is_content(t)))
                 for start, end, toks in parsed if toks)
