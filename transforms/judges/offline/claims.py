"""Claims for the offline judge: sentence splitting, claim kinds and the absence check.

A sentence becomes factual claims (cut conservatively at clause boundaries), or one absence
claim when it says what the sources do not say ("The passages do not mention the price."), or
nothing when it asserts nothing checkable: the one assertion classifier
(`rt4chart.transforms.text.assertion`), which decomposition coverage asks too, decides.
Each claim carries the verbatim words of the sentence it restates (its fragments), so that its
span in the answer is exact. Standard
library only, like :mod:`rt4chart.transforms.judges.offline.lexical`, whose tokens it reads.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rt4chart.transforms.judges.offline.lexical import (
    _LABEL_WORDS,
    P_THRESHOLD,
    _credits,
    _quote,
    _weights,
)
from rt4chart.transforms.judges.offline.tokens import _is_content, _sentences, _Tok, _tokenize
from rt4chart.transforms.text.absence import states_absence
from rt4chart.transforms.text.assertion import (
    ABSENCE,
    NONE,
    classify,
    strip_marker,
    without_discourse_prefix,
)

FACT = "fact"  # with ABSENCE, the kinds this decomposer gives (records.CLAIM_KINDS)

_CLAUSE_RE = re.compile(r"\s*;\s+|,?\s+(?:and|but|while|whereas)\s+")
_AUXILIARIES = frozenset(
    "is are was were has have had will would can could does did do should may might must".split()
)
# Words of an absence claim that name the sources or the act of saying, not what is missing.
_SOURCE_WORDS = frozenset(
    """passage passages context text article document documents source sources data structured
    mention mentioned mentions provide provided provides information detail details specify
    specified state stated say says give given discuss discussed address describe described
    indicate indicated contain contains include included offer note comprehensive exact none
    explain explicitly clear clearly""".split()
)


class LexicalClaim(NamedTuple):
    text: str
    kind: str  # FACT or ABSENCE
    fragments: tuple[str, ...]  # verbatim words of the sentence that the claim restates


def decompose_claims(sentence: str) -> list[LexicalClaim]:
    """The claims of one answer sentence, with their kinds and fragments.

    A sentence that says only what the sources lack (`text.absence.states_absence`, the rule
    that decides whether any decomposer's absence label is accepted) is one absence claim
    (itself); one that asserts
    nothing checkable (`text.assertion.classify`) has none; any other is split into factual
    claims at semicolons and at "and" /
    "but" / "while" / "whereas" when what follows starts a new clause (a subject then an
    auxiliary verb, as in "X is A and Y is B."). Words are never dropped, so negation,
    numbers, dates and modals stay; each claim is its own fragment.
    """
    # A greeting or thanks that opens the sentence is split off: the rest is what it claims.
    body = without_discourse_prefix(strip_marker(sentence))
    if states_absence(body):
        return [LexicalClaim(body, ABSENCE, (body,))]
    if classify(body).kind == NONE:
        return []
    parts, last = [], 0
    for match in _CLAUSE_RE.finditer(body):
        left, right = body[last:match.start()], body[match.end():]
        if ";" in match.group() or (len(left.split()) >= 3 and _starts_clause(right)):
            parts.append(left)
            last = match.end()
    parts.append(body[last:])
    claims = [p.strip().strip(",;:").strip() for p in parts]
    # A clause that says what the sources lack is an absence claim of its own ("The passages do
    # not say when it opened, but it is in Paris.": an absence and a fact).
    return [LexicalClaim(c, ABSENCE if states_absence(c) else FACT, (c,))
            for c in claims if any(ch.isalnum() for ch in c)] or [
        LexicalClaim(body, FACT, (body,))]


def decompose_sentence(sentence: str) -> list[str]:
    """The factual claims of a sentence, as text (absence claims left out): what a judge with
    the plain contract (a list of strings, all factual) returns."""
    return [c.text for c in decompose_claims(sentence) if c.kind == FACT]


def _is_label(toks: tuple[_Tok, ...], i: int) -> bool:
    return toks[i].kind == "num" and i > 0 and toks[i - 1].low in _LABEL_WORDS


def _starts_clause(words: str) -> bool:
    """Subject followed by an auxiliary within three words, e.g. "the staff are friendly"."""
    head = [w.lower().strip(",") for w in words.split()[:4]]
    if not head or head[0] in _AUXILIARIES:
        return False
    return any(w in _AUXILIARIES or w.endswith("n't") for w in head[1:])


# The absence check: what is said to be missing counts as present when one context sentence
# covers this much of it (weighted, as in `lexical`), and it names at least two terms: a claim
# of absence is contradicted only on clear evidence.
PRESENT_COVER = 0.9
PRESENT_MIN_TERMS = 2


def _missing_terms(text: str) -> tuple[_Tok, ...]:
    toks = _tokenize(text)
    return tuple(t for i, t in enumerate(toks) if _is_content(t) and not _is_label(toks, i)
                 and t.low not in _SOURCE_WORDS)


def verify_absence_scored(claim: str, text: str, question: str = ""
                          ) -> tuple[str, list[str], float]:
    """Check a claim that `text` lacks something: (label, quotes, p_unsupported).

    What is missing is the claim's content words other than those naming the sources or the
    act of saying (the question's, when the claim names nothing: "None mentioned."). CON,
    quoting the sentence, when one sentence of the text covers it (PRESENT_COVER, at least
    PRESENT_MIN_TERMS terms); else ENT with no quote (an absence cannot be quoted), with a
    p_unsupported that grows with the best coverage and stays below lexical.P_THRESHOLD.
    """
    missing = _missing_terms(claim) or _missing_terms(question)
    sents = list(_sentences(text))
    weights = _weights(missing, sents) if missing and sents else {}
    if not weights:
        return "ENT", [], 0.0
    total = sum(weights.values())
    credits = [_credits(weights, s) for s in sents]
    cover = [sum(weights[t] * c for t, c in cr.items()) / total for cr in credits]
    best = max(range(len(sents)), key=lambda i: (cover[i], -i))
    if cover[best] >= PRESENT_COVER and len(weights) >= PRESENT_MIN_TERMS:
        return "CON", [_quote(text, sents[best], set(credits[best]))], cover[best]
    return "ENT", [], P_THRESHOLD * cover[best] / 2
