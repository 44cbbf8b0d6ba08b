"""Decomposition coverage: a false sentence cannot vanish by getting no claims, or other claims.

A judge decomposes each answer sentence into claims, and only claims are verified. A judge that
returns no claim for "The free trial lasts 30 days", or the claim "Plans renew monthly" instead,
would make the false sentence disappear. This module checks that a sentence's claims cover its
content words, numbers, names and negation; when what is left over carries content it produces
an extra claim (the sentence itself) for the judge to verify. Whether a sentence asserts anything
a judge could hide is decided by the one assertion classifier (`text.assertion.classify`), the
same that the offline decomposer asks: a sentence about the answer, the sources, the reader or
the conversation needs no claim, and only a sentence's words about the world (and its numbers,
dates, names and negation) must be covered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rt4chart.transforms.checks.support import check_support, claim_body
from rt4chart.transforms.text.absence import states_absence
from rt4chart.transforms.text.assertion import (
    ABSENCE,
    FACT,
    NOUN_CAPITALISING,
    classify,
    strip_marker,
)
from rt4chart.transforms.text.language import (
    CJK_RUN_RE,
    UNDETERMINED,
    anchor_units,
    detect,
    is_cjk,
    remark_length,
    support,
)
from rt4chart.transforms.text.quantities import read
from rt4chart.transforms.text.words import fold, is_stopword, language_stopwords, stem

# A decomposer may drop a couple of discourse words ("notably", "clearly") when it restates a
# sentence: up to this many uncovered plain content words are tolerated. Numbers, dates, times,
# names and negation are never tolerated (they are what a hallucination changes), nor is a
# sentence left half uncovered (short sentences have few words to lose).
MAX_STRAY_WORDS = 2
# A sentence with more words about the world than this is re-added even when none of them is
# in the question or the context: a plain-word hallucination ("The medication can cause hair
# loss.") may share no word with a context that says "the drug"; a short remark cannot hide
# much ("Fun topic, this.").
OFF_TOPIC_WORDS = 2
# In a language whose words about the sources, the answer and the reader the classifier does not
# have (`language.support(...).frame`), a remark ("Ich hoffe, das hilft!", "希望这对您有帮助。")
# has more than OFF_TOPIC_WORDS unknown words: there a sentence up to this many words long (a
# Han, Kana or Hangul character counting half) with no specific, no negation and nothing in
# common with the question or the context is not re-added.
REMARK_WORDS = 12
# There, an exclamation with no specific and at most this many content words (a Han, Kana or
# Hangul character that is not a stopword counting half) is a wish or a greeting ("Viel Spaß
# beim Besuch!", "Buona visita!", "祝您游玩愉快！") even when it names what the context is
# about. The cost: "Der Eintritt ist frei!", dropped by a judge, is not re-added.
EXCLAMATION_WORDS = 3
# Marks a Han, Kana or Hangul topic unit in `topic_terms` (apart from the bigrams of `fold`).
ANCHOR = "\x00"


@dataclass(frozen=True)
class Coverage:
    """What a sentence's claims leave out, and the claim to add for it.

    Attributes:
        uncovered: numbers, dates, names, negation and content words of the sentence that no
            claim states, in the sentence's order.
        extra_claim: the text of a claim to verify for what is uncovered (the sentence without
            its list marker), or None when the claims cover the sentence or it claims nothing.
    """

    uncovered: tuple[str, ...] = ()
    extra_claim: str | None = None
    kind: str = FACT  # the extra claim's kind: "absence" for "The passages do not mention X."


def is_non_claim(sentence: str) -> bool:
    """Whether a sentence asserts nothing a judge could hide (`text.assertion.classify`):
    greetings, offers, refusals, statements about the answer's form, the sources or the reader,
    headings, bare citations. "The passages do not say when Acme opened." asserts something
    (an absence); "None mentioned in the passages." names nothing to hide."""
    return not classify(sentence).checkable


def _covered(term: str, pool: set[str]) -> bool:
    # "renewal" / "renews", "reservations" / "reserve": a shared 5-letter prefix is enough.
    return term in pool or (len(term) >= 5 and any(p[:5] == term[:5] for p in pool))


def _uncovered_words(world: tuple[str, ...], claims: Sequence[str]) -> list[str]:
    pool = {stem(w) for claim in claims for w in fold(claim).split()}
    return [w for w in world if not w[0].isdigit() and not _covered(stem(w), pool)]


def topic_terms(*texts: str) -> frozenset[str]:
    """The stems of the words of the question and the context: what a sentence's words must
    touch to be about what the answer answers (`check_coverage`'s `topic`). Their Han, Kana and
    Hangul topic units (`language.anchor_units`) are in it too, marked with ANCHOR."""
    stems = {stem(w) for text in texts for w in fold(text).split() if len(w) > 1}
    anchors = {ANCHOR + u for text in texts for u in anchor_units(text)}
    return frozenset(stems | {s[:5] for s in stems if len(s) >= 5} | anchors)


def _touches(words, topic: frozenset[str]) -> bool:
    return any(t in topic or len(t) >= 5 and t[:5] in topic for t in (stem(w) for w in words))


def _off_topic(found, topic: frozenset[str] | None, sentence: str = "",
               language: str | None = None) -> bool:
    """A sentence with no number, date, name or negation whose words about the world touch
    neither the question nor the context: "Fun topic, this.", "Give me a shout if you'd like me
    to dig further." It says nothing a judge could hide about what was asked. In a language
    without frame vocabulary (`_remark`) a short sentence may have more such words."""
    if topic is None:
        return False
    if _remark(sentence, found, topic, language):
        return True
    if found.specifics or found.negated or len(found.world) > OFF_TOPIC_WORDS:
        return False
    return not _touches(found.world, topic)


def _remark(sentence: str, found, topic: frozenset[str], language: str | None) -> bool:
    """A short sentence of a language the classifier has no frame vocabulary for (its own, or
    else the answer's `language`), whose words share nothing with the question or the context.
    Han, Kana and Hangul are compared by the units that carry a topic
    (`language.anchor_units`: Han and Katakana bigrams, Korean word stems; particles and
    endings, which every text of the language has, left out); a short exclamation is one
    whatever it shares (EXCLAMATION_WORDS). English negation words are not read there ("No dude
    en preguntar.")."""
    own = detect(sentence)
    language = own if own != UNDETERMINED else (language or UNDETERMINED)
    if language == UNDETERMINED or support(language).frame:
        return False
    if remark_length(sentence) > REMARK_WORDS or _has_specifics(sentence, found, language):
        return False
    stopwords = language_stopwords(language)
    anchors = [u for u in anchor_units(sentence) if not is_stopword(u, stopwords)]
    spaced = [w for w in fold(sentence).split()
              if len(w) > 1 and not w.isdigit() and not is_cjk(w[:1]) and w not in stopwords]
    cjk = [ch for run in CJK_RUN_RE.findall(sentence) for ch in run if ch not in stopwords]
    if _exclaimed(sentence) and len(spaced) + len(cjk) / 2 <= EXCLAMATION_WORDS:
        return True  # "Viel Spaß beim Besuch!", "Buona visita!": a wish, whatever it names
    return not any(ANCHOR + u in topic for u in anchors) and not _touches(spaced, topic)


def _has_specifics(sentence: str, found, language: str) -> bool:
    """A number, a date or a time; or a name, except where every noun is capitalised."""
    numbers = read(sentence)
    if numbers.quantities or numbers.whens:
        return True
    return bool(found.specifics) and language not in NOUN_CAPITALISING


def _exclaimed(sentence: str) -> bool:
    text = sentence.strip()
    return text.endswith(("!", "！")) or text.startswith("¡")


def check_coverage(sentence: str, claims: Sequence[str],
                   topic: frozenset[str] | None = None, language: str | None = None) -> Coverage:
    """Whether `claims` cover `sentence`, and if not, the claim to add.

    A claim is added when a number, date, time, name or negation of the sentence is in no claim,
    when more than MAX_STRAY_WORDS of its words about the world are in no claim, or when at
    least half of them are (so a judge returning no claims, or substituted ones, cannot make a
    sentence vanish). The added claim is the whole sentence: a fragment would lose the subject
    and the qualifiers that scope the missing words, and could be verified out of context. Its
    kind is "absence" when the sentence says only what the sources lack (`text.absence`; it is
    then checked against the whole context, not quoted), else "fact".

    With `topic` (`topic_terms` of the question and the context), a sentence with no specific
    and no negation must also share a word with them: what the classifier cannot place (an
    unseen courtesy or remark) is then not re-added unless it concerns what was asked.

    Args:
        sentence: one answer sentence.
        claims: the claims the decomposer returned for it (possibly none).
        topic: the question's and the context's stems, or None to skip the topic test.
        language: the answer's language (`language.detect` of the whole answer), for a
            sentence too short to tell its own.

    Returns:
        A `Coverage`; for a sentence that asserts nothing checkable it is empty.
    """
    found = classify(sentence)
    if not found.checkable or _off_topic(found, topic, sentence, language):
        return Coverage()
    body = strip_marker(sentence)
    specifics = list(check_support(claim_body(body), list(claims) or [""]).missing)
    words = _uncovered_words(found.world, claims)
    total = len(found.world)
    needed = bool(specifics) or len(words) > MAX_STRAY_WORDS or (
        bool(words) and 2 * len(words) >= max(total, 1))
    kind = ABSENCE if states_absence(body) else FACT
    return Coverage(tuple(specifics + words), body if needed else None, kind if needed else FACT)
