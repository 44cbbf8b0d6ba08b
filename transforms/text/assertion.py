"""Does a sentence assert something checkable? The one classifier of rt4chart.

Decomposition coverage (`coverage.py`) re-adds a sentence that a judge left without claims
unless it asserts nothing; a judge's claim that asserts nothing is a non-claim
(`decompose.no_claim_note`); the offline decomposer (`judges/offline/claims.py`) gives claims
only to sentences that assert something. All three ask `classify`.

The one exemption (issue 46): a sentence asserts nothing only when **every word of it belongs
to the discourse vocabulary of its language** (`discourse_only`; the closed lists of
`vocabulary`: greetings, thanks, offers of help, hedges and discourse markers, pointers to the
passages and the answer, refusals, and the function words their phrases need), after list
markers, markdown, labels of sources and parts ("Passage 3", "[2]", "Option 1 or Option 2") and
word counts ("in 80 words") are set aside. Its form decides nothing: a heading, a list item, a
bold line, a lead-in ending in a colon, a question, an advice clause or a greeting with one word
outside the vocabulary, a number or a name is checkable ("## Amoxicillin cures cancer",
"Thank you, amoxicillin is safe with alcohol.", "Amoxicillin treats colds too, doesn't it?").

A checkable sentence is about the sources when a source or label noun and a verb of saying
frame it ("Passage 2 says the bridge opened in 1932." is a `source` claim), and says what they
lack when a negation scopes the saying ("The passages do not mention the fee.": `absence`), else
it is a `fact`. Numbers, amounts, dates and times (`quantities`) and names (a capitalised word
inside the sentence, not in a language that capitalises its nouns) are specifics; the other
words outside the stopwords and the discourse vocabulary are words about the world, which
coverage asks a judge's claims to cover.

Errors fall on the safe side: a word in no list counts as a word about the world, so a sentence
in an unseen form is checked, not waved through.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from rt4chart.transforms.text.language import (
    UNDETERMINED,
    detect,
    has_cjk,
    normalize_width,
)
from rt4chart.transforms.text.names import entities
from rt4chart.transforms.text.quantities import read
from rt4chart.transforms.text.vocabulary import (
    DISCOURSE_EN,
    DISCOURSE_PHRASES,
    DISCOURSE_WORDS,
    NEGATIONS,
    PHRASES,
    SOURCE_NOUNS,
    SPEECH_VERBS,
)
from rt4chart.transforms.text.words import STOPWORDS, fold, is_stopword, stem, stopwords_of

NONE, FACT, SOURCE, ABSENCE = "none", "fact", "source", "absence"
EXEMPT_REASON = ("only discourse words (greetings, thanks, offers of help, hedges, pointers to "
                 "the sources and the answer)")

_MARKER_RE = re.compile(r"^\s*(?:[-*•·▪‣–—>#+]+|\(?\d{1,3}[.)]|\(?[a-z][.)])(?:\s+|$)")
_EMPHASIS_RE = re.compile(r"\*\*|__|`|^#{1,6}\s+")
_LABEL_WORDS = (
    r"passages?|documents?|docs?|sources?|articles?|references?|paragraphs?|sections?|pages?"
    r"|lines?|options?|steps?|parts?|items?|points?|questions?|answers?|chapters?|figures?"
    r"|tables?|examples?|methods?|tips?|notes?|no\.|nos\.|numbers?|rules?|categor(?:y|ies)"
    r"|cases?|records?|excerpts?|snippets?|texts?|contexts?|reviews?|results?")
_NUMBERING = r"(?:#?\d+[a-z]?|[ivx]+|[a-h])\b"
# "Passage 3", "passages 1 and 2", "Option 1 or Option 2", "step 4:", "[2]", "(Doc 3, 5)".
_LABEL_RE = re.compile(
    r"\b(?:" + _LABEL_WORDS + r")\s*" + _NUMBERING + r"(?:\s*(?:,|&|and|or|-|–|to)\s*"
    + _NUMBERING + r")*(?:\s*[:.]\s*\d+\b)?"
    r"|\[\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\]|^\(\s*\d+(?:\s*[,;–-]\s*\d+)*\s*\)\W*$", re.I)
_ORDINAL_LABEL_RE = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|final|"
    r"\d+(?:st|nd|rd|th)|one|two|three|four|five|both|all|several|many|multiple|other)\s+"
    r"(?:of the\s+)?(?:" + _LABEL_WORDS + r")\b", re.I)
_WORD_COUNT_RE = re.compile(r"\b(?:in\s+|within\s+|to\s+)?(?:about\s+|under\s+|less than\s+|"
                            r"fewer than\s+|around\s+|exactly\s+|roughly\s+|nearly\s+|over\s+"
                            r"|some\s+|approximately\s+)?\d+\s+words?\b"
                            r"|\bword\s+count\s*:?\s*\d+", re.I)
_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_NEGATED_SOURCE_RE = re.compile(
    r"\b(?:no|not any|nothing|never)\s+(?P<a>[\w-]+)(?:\s+(?P<b>[\w-]+))?", re.I)
# What "no ..." says the sources lack: "no information", "no details", "no mention".
_ABSENT_NOUNS = frozenset(stem(w) for w in "mention details detail word record".split())
_YES_NO_RE = re.compile(r"^\s*(?:yes|no|yeah|nope|correct|incorrect|true|false)\b\W*$", re.I)
# A condition or a counterfactual: "If the passages did not contain it, I would have said...".
_CONDITIONAL_RE = re.compile(r"^\s*(?:if|unless|had|were|should)\b|\bwould have\b", re.I)
_FIRST_PERSON = frozenset("i we me us my our".split())
_BE = frozenset("is are was were been be".split())
# Languages whose nouns are all capitalised: a capital letter is no sign of a name there.
NOUN_CAPITALISING = frozenset({"de", "lb"})
# Every language's discourse words and phrases, for a sentence too short to name its language
# ("Vielen Dank!", "Merci !").
_ANY_WORDS = frozenset().union(*DISCOURSE_WORDS.values())
_ANY_PHRASES = tuple(p for ps in PHRASES.values() for p in ps)
_CJK_PHRASES = tuple(sorted({p for ps in DISCOURSE_PHRASES.values() for p in ps},
                            key=len, reverse=True))


@dataclass(frozen=True)
class Assertion:
    """What a sentence asserts, as the classifier reads it.

    Attributes:
        kind: "none" (nothing checkable), "fact", "source" (what the sources say) or "absence"
            (what the sources do not say).
        world: the words about the world (folded, in order, once each).
        specifics: numbers, amounts, dates, times and names, as written.
        negated: whether a negation is part of what it asserts.
        reason: one line saying why, for notes and tests.
    """

    kind: str
    world: tuple[str, ...] = ()
    specifics: tuple[str, ...] = ()
    negated: bool = False
    reason: str = ""

    @property
    def checkable(self) -> bool:
        """Whether it states something about the world that a judge could hide: a world
        word or a specific ("None mentioned." is an absence claim with neither)."""
        return self.kind != NONE and bool(self.world or self.specifics)


def strip_marker(sentence: str) -> str:
    """The sentence without its list marker ("- ", "2. ", "(b) ", "> ") and outer spaces."""
    return _MARKER_RE.sub("", sentence.strip(), count=1).strip()


def _clean(sentence: str) -> str:
    body = strip_marker(normalize_width(sentence))  # "：" is a colon, "？" a question mark
    body = _EMPHASIS_RE.sub("", body).strip()
    return body.strip("\"'“”‘’ \t")


def _set_aside(body: str) -> str:
    """Blank out labels of sources and parts and word counts: they point, they do not state."""
    for pattern in (_ORDINAL_LABEL_RE, _LABEL_RE, _WORD_COUNT_RE):
        body = pattern.sub(" ", body)
    return body


def _without_phrases(folded: str, phrases) -> str:
    text = f" {folded} "
    for phrase in sorted(phrases, key=len, reverse=True):  # "schönen aufenthalt" first
        phrase = " ".join(phrase.split())
        while f" {phrase} " in text:
            text = text.replace(f" {phrase} ", " ")
    return text.strip()


def _discourse_words(language: str) -> frozenset[str]:
    return _ANY_WORDS if language == UNDETERMINED else DISCOURSE_WORDS.get(language, frozenset())


def is_discourse(word: str, language: str = UNDETERMINED) -> bool:
    """Whether a folded word is a discourse or function word in `language` (English discourse
    and function words count in every language; an undetermined language accepts any
    supported language's discourse words)."""
    return (word in STOPWORDS or word in NEGATIONS or stem(word) in DISCOURSE_EN
            or word in _discourse_words(language))


def _phrases_of(language: str) -> tuple[str, ...]:
    if language == UNDETERMINED:
        return _ANY_PHRASES
    return PHRASES.get(language, ()) + PHRASES["en"]


def _phrase_words(folded: str, language: str) -> frozenset[str]:
    """The words of the discourse phrases that `folded` holds."""
    text = f" {folded} "
    return frozenset(w for p in _phrases_of(language) if f" {' '.join(p.split())} " in text
                     for w in p.split())


def discourse_only(sentence: str) -> bool:
    """Whether every word of `sentence` belongs to the discourse vocabulary of its language:
    the one exemption from checking. Labels of sources and parts and word counts are set aside
    first; any digit left, any Han, Kana or Hangul character outside a discourse phrase, or any
    other word makes it checkable."""
    text = _set_aside(_clean(sentence))
    language = detect(text.lower())  # "ICH HOFFE, DAS HILFT!" is German in any case
    if has_cjk(text):
        lowered = text.lower()
        for phrase in _CJK_PHRASES:
            lowered = lowered.replace(phrase, " ")
        if has_cjk(lowered):
            return False
        text = lowered
    if any(ch.isdigit() for ch in text):
        return False
    folded = _without_phrases(fold(text), _phrases_of(language))
    return all(is_discourse(w, language) for w in folded.split())


_PREFIX_RE = re.compile(
    r"^(?P<head>[^,!:;—–.?¡¿！，：；。？]{1,60}[,!:;—–.?！，：；。？]+)\s*(?P<rest>\S.*)$", re.S)


def without_discourse_prefix(sentence: str) -> str:
    """`sentence` past its opening phrases of discourse words only ("Hi, ...", "Thank you!
    ...", "Sure: ...", "Vielen Dank! ...", "谢谢！..."): the rest is what it asserts, and is
    verified on its own. Unchanged when no such phrase opens it, nothing follows it, or the
    whole is discourse ("Ich hoffe, das hilft!": its phrase spans the comma)."""
    text = sentence.strip()
    if discourse_only(text):
        return text
    for _ in range(4):  # stacked: "Hi! Thanks for asking, ..."
        match = _PREFIX_RE.match(text.lstrip("¡¿"))
        if not match or not discourse_only(match.group("head")):
            break
        text = match.group("rest").strip()
    return text


def _about_sources(body: str) -> bool:
    """A verb of saying with a source noun or a label ("Passage 2 says..."), or a negated
    source noun ("There is no information about the price")."""
    stems = {stem(w) for w in fold(body).split()}
    if stems & SPEECH_VERBS and (stems & SOURCE_NOUNS or _LABEL_RE.search(body)):
        return True
    return any(stem(word.lower()) in SOURCE_NOUNS | _ABSENT_NOUNS
               for m in _NEGATED_SOURCE_RE.finditer(body) for word in m.groups() if word)


def _negated_saying(body: str) -> bool:
    """A negation that scopes the saying, not the content: "do not mention", "is not stated",
    "no information", "neither passage" (not "the passages say it is not free")."""
    toks = _WORD_RE.findall(body.lower())
    for i, tok in enumerate(toks):
        if tok in NEGATIONS or tok.endswith(("n't", "n’t")):
            ahead = {stem(w) for t in toks[i + 1:i + 4] for w in fold(t).split()}
            if ahead & (SPEECH_VERBS | SOURCE_NOUNS | _ABSENT_NOUNS):
                return True
    return _negated_subject_passive(toks)


def _negated_subject_passive(toks: list[str]) -> bool:
    """A negated subject whose verb is a passive of saying: "No opening date is given in the
    sources", "Nothing about fees was mentioned": the saying is what is denied."""
    if not toks or toks[0] not in ("no", "nothing", "none"):
        return False
    return any(t in _BE and stem(toks[i + 1]) in SPEECH_VERBS
               for i, t in enumerate(toks[:-1]))


def _world_words(text: str, stopwords: frozenset[str], language: str) -> list[str]:
    """Words about the world, folded, once each: not a stopword, a negation or a discourse
    word. A lone capital letter is a name ("X is A"); a Han, Kana or Hangul bigram that is not
    a stopword is a word about the world."""
    world: list[str] = []
    for i, raw in enumerate(_WORD_RE.findall(text)):
        single = len(raw) == 1 and raw.isupper() and raw != "I" and not (i == 0 and raw == "A")
        for w in fold(raw).split():
            if (single or len(w) > 1 and not w.isdigit() and not is_stopword(w, stopwords)
                    and not is_discourse(w, language)) and w not in world:
                world.append(w)
    return world


def _names(body: str, stopwords: frozenset[str] = STOPWORDS, language: str = UNDETERMINED,
           nouns_capitalised: bool = False) -> list[str]:
    """Capitalised words inside the sentence that are not discourse words (none in a language
    that capitalises its nouns)."""
    if nouns_capitalised:
        return []
    found = []
    for name in entities(body):
        words = fold(name).split()
        if words and not all(is_discourse(w, language) or w in stopwords for w in words):
            found.append(name)
    return found


@functools.lru_cache(maxsize=8192)
def classify(sentence: str) -> Assertion:
    """What `sentence` asserts: see the module docstring for the rules."""
    body = _clean(sentence)
    if not any(ch.isalnum() for ch in body):
        return Assertion(NONE, reason="no words")
    kept = _set_aside(body)
    specifics = read(kept)
    numbers = [q.text for q in specifics.quantities] + [w.text for w in specifics.whens]
    stopwords = stopwords_of(sentence)
    language = detect(sentence)
    names = _names(specifics.rest, stopwords, language, language in NOUN_CAPITALISING)
    words = fold(specifics.rest).split()
    world = _world_words(specifics.rest, stopwords, language)
    negated = any(w in NEGATIONS or w.endswith("n't") for w in _WORD_RE.findall(kept.lower()))
    found = tuple(numbers + names)
    about_sources = _about_sources(body)
    if discourse_only(sentence):  # a capitalised discourse word is no name ("VIELEN DANK!")
        if _YES_NO_RE.match(body):
            return Assertion(FACT, reason="a yes or no: it answers the question")
        if (_negated_saying(body) and about_sources and not _CONDITIONAL_RE.search(sentence)
                and not set(words) & _FIRST_PERSON):
            # "None mentioned in the passages.": the sources lack what the question asks.
            return Assertion(ABSENCE, negated=True, reason="the sources lack the question's"
                             " subject")
        return Assertion(NONE, reason=EXEMPT_REASON)
    # Words of the discourse phrases the sentence holds ("I hope this helps: ...") are not
    # about the world; if nothing is left, the words outside the discourse vocabulary are
    # what it asserts (every word a stopword of its language, "Das ist gut.").
    held = _phrase_words(fold(specifics.rest), language)
    world = [w for w in world if w not in held] or (
        [] if found else [w for w in words if not is_discourse(w, language) and not w.isdigit()])
    if about_sources:
        kind = ABSENCE if _negated_saying(body) else SOURCE
        return Assertion(kind, tuple(world), found, negated, "a statement about the sources")
    return Assertion(FACT, tuple(world), found, negated, "a statement about the world")


def asserts(sentence: str) -> bool:
    """Whether `sentence` asserts something checkable (`classify(...).checkable`)."""
    return classify(sentence).checkable
