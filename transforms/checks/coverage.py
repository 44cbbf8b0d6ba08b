"""Decomposition coverage: a false sentence cannot vanish by getting no claims, or other claims.

A judge decomposes each answer sentence into claims, and only claims are verified. A judge that
returns no claim for "The free trial lasts 30 days", or the claim "Plans renew monthly" instead,
would make the false sentence disappear. This module checks that a sentence's claims cover its
content words, numbers, names and negation; when what is left over carries content it produces
an extra claim (the sentence itself) for the judge to verify. Whether a sentence asserts anything
a judge could hide is decided by the one assertion classifier (`text.assertion.classify`), the
same that the offline decomposer asks: only a sentence whose every word is discourse vocabulary
(greetings, thanks, offers, hedges, pointers to the sources) needs no claim, whatever its form,
and a sentence's words about the world (and its numbers, dates, names and negation) must be
covered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rt4chart.transforms.checks.support import check_support, claim_body
from rt4chart.transforms.text.absence import states_absence
from rt4chart.transforms.text.assertion import (
    ABSENCE,
    FACT,
    classify,
    strip_marker,
    without_discourse_prefix,
)
from rt4chart.transforms.text.words import fold, stem

# A decomposer may drop a couple of discourse words ("notably", "clearly") when it restates a
# sentence: up to this many uncovered plain content words are tolerated. Numbers, dates, times,
# names and negation are never tolerated (they are what a hallucination changes), nor is a
# sentence left half uncovered (short sentences have few words to lose).
MAX_STRAY_WORDS = 2


@dataclass(frozen=True)
class Coverage:
    """What a sentence's claims leave out, and the claim to add for it.

    Attributes:
        uncovered: numbers, dates, names, negation and content words of the sentence that no
            claim states, in the sentence's order.
        extra_claim: the text of a claim to verify for what is uncovered (the sentence without
            its list marker and an opening greeting or thanks), or None when the claims cover
            the sentence or it claims nothing.
    """

    uncovered: tuple[str, ...] = ()
    extra_claim: str | None = None
    kind: str = FACT  # the extra claim's kind: "absence" for "The passages do not mention X."


def is_non_claim(sentence: str) -> bool:
    """Whether a sentence asserts nothing a judge could hide (`text.assertion.classify`):
    only discourse words (greetings, thanks, offers, hedges, pointers to the sources, bare
    citations), whatever its form: a heading with a fact in it is checked.
    "The passages do not say when Acme opened." asserts something
    (an absence); "None mentioned in the passages." names nothing to hide."""
    return not classify(sentence).checkable


def _covered(term: str, pool: set[str]) -> bool:
    # "renewal" / "renews", "reservations" / "reserve": a shared 5-letter prefix is enough.
    return term in pool or (len(term) >= 5 and any(p[:5] == term[:5] for p in pool))


def _uncovered_words(world: tuple[str, ...], claims: Sequence[str]) -> list[str]:
    pool = {stem(w) for claim in claims for w in fold(claim).split()}
    return [w for w in world if not w[0].isdigit() and not _covered(stem(w), pool)]


def check_coverage(sentence: str, claims: Sequence[str]) -> Coverage:
    """Whether `claims` cover `sentence`, and if not, the claim to add.

    A claim is added when a number, date, time, name or negation of the sentence is in no claim,
    when more than MAX_STRAY_WORDS of its words about the world are in no claim, or when at
    least half of them are (so a judge returning no claims, or substituted ones, cannot make a
    sentence vanish). The added claim is the whole sentence: a fragment would lose the subject
    and the qualifiers that scope the missing words, and could be verified out of context. Its
    kind is "absence" when the sentence says only what the sources lack (`text.absence`; it is
    then checked against the whole context, not quoted), else "fact".

    No sentence is waived for its shape, its length or its topic: only a sentence whose every
    word is discourse vocabulary (`text.assertion.discourse_only`) needs no claim, in every
    language.

    Args:
        sentence: one answer sentence.
        claims: the claims the decomposer returned for it (possibly none).

    Returns:
        A `Coverage`; for a sentence that asserts nothing checkable it is empty.
    """
    found = classify(sentence)
    if not found.checkable:
        return Coverage()
    body = strip_marker(sentence)
    specifics = list(check_support(claim_body(body), list(claims) or [""]).missing)
    words = _uncovered_words(found.world, claims)
    total = len(found.world)
    needed = bool(specifics) or len(words) > MAX_STRAY_WORDS or (
        bool(words) and 2 * len(words) >= max(total, 1))
    kind = ABSENCE if states_absence(body) else FACT
    # The claim to verify is the sentence past a greeting or thanks that opens it ("Thank you,
    # the fee is $25." verifies "the fee is $25."): the opening asserts nothing.
    claim = without_discourse_prefix(body)
    return Coverage(tuple(specifics + words), claim if needed else None, kind if needed else FACT)
