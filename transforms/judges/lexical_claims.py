"""Claims for the offline judge: sentence splitting, claim kinds and the absence check.

A sentence becomes factual claims (cut conservatively at clause boundaries), or one absence
claim when it says what the sources do not say ("The passages do not mention the price."), or
nothing when it asserts nothing: a greeting, an offer, a refusal without content, a statement
about the answer itself, a heading or a bare citation. Each claim carries the verbatim words of
the sentence it restates (its fragments), so that its span in the answer is exact. Standard
library only, like :mod:`rt4chart.transforms.judges.lexical`, whose tokens it reads.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rt4chart.transforms.judges.lexical import (
    _LABEL_WORDS,
    P_THRESHOLD,
    _credits,
    _is_content,
    _quote,
    _sentences,
    _Tok,
    _tokenize,
    _weights,
)

FACT, ABSENCE = "fact", "absence"  # the kinds this decomposer gives (records.CLAIM_KINDS)

_BULLET_RE = re.compile(r"^\s*(?:[-*•·▪‣–—>]+|\(?\d{1,3}[.)]|\(?[a-z]\))\s+")
_CLAUSE_RE = re.compile(r"\s*;\s+|,?\s+(?:and|but|while|whereas)\s+")
_AUXILIARIES = frozenset(
    "is are was were has have had will would can could does did do should may might must".split()
)
_SOURCE = r"(?:passages?|context|text|article|documents?|sources?|data)"
# Statements about the answer itself: "Sure! Here's a summary in 80 words:".
_PREAMBLE_RE = re.compile(
    r"^(?:(?:sure|certainly|of course|okay|ok|yes)\b[!.,]*\s*)?(?:here(?:'s|’s| is| are)|below is"
    r"|the following is)\b[^.!?]{0,80}\b(?:summary|summari[sz]\w*|overview|answer|list|steps"
    r"|points|description|words|information)\b[^.!?]{0,40}[:.!]?$"
    r"|^(?:sure|certainly|of course|okay|ok)\b[!.]*$", re.IGNORECASE)
_GREETING_RE = re.compile(
    r"^(?:hi|hello|hey|greetings|good (?:morning|afternoon|evening|day)|dear)(?:\s+[\w’']+){0,2}"
    r"\s*[!.,:]*$", re.IGNORECASE)
_OFFER_RE = re.compile(
    r"\blet (?:me|us) know\b|\bfeel free to (?:ask|reach|contact|let)\b|\bhope (?:this|that|it)"
    r" helps\b|\bdon['’]?t hesitate to\b|\bhappy to help\b|\bif you have any (?:other |further "
    r"|more )?questions\b|\bis there anything else\b", re.IGNORECASE)
# Headings: a markdown heading, or a few words ending in a colon ("Key points:").
_HEADING_RE = re.compile(r"^#{1,6}\s|^[^\d.!?:]{1,60}:$")
# A bare citation: "[1]", "(Passage 2)", "Source: passages 1 and 3." (a lone "3" may be an answer).
_CITE_NUMS = r"\[?\d+\]?(?:(?:\s*(?:,|and|&|-|:)\s*|\s+|(?<=\]))\[?\d+\]?)*"
_CITATION_RE = re.compile(
    r"^(?:[(\[]\s*(?:(?:sources?|references?|see|cf\.?)\s*:?\s*)?(?:(?:passages?|documents?"
    r"|docs?|articles?)\s*)?" + _CITE_NUMS + r"\s*[)\]]"
    r"|(?:(?:sources?|references?|see|cf\.?)\s*:?\s*)?(?:passages?|documents?|docs?|articles?)"
    r"\s*" + _CITE_NUMS + r"|(?:sources?|references?)\s*:\s*" + _CITE_NUMS + r")\s*\.?$",
    re.IGNORECASE)
# A refusal says it cannot answer; with nothing else it asserts nothing.
_REFUSAL_RE = re.compile(
    r"\bunable to (?:answer|determine|provide|find)\b|\bcannot be (?:answered|determined)\b"
    r"|\bI(?:'m|’m| am) (?:sorry|afraid)\b[^.!?]*\b(?:cannot|can['’]t|unable)\b"
    r"|\bI (?:cannot|can['’]t) (?:answer|help|provide)\b", re.IGNORECASE)
# A claim that the sources lack something: checked against the context (verify_absence).
_ABSENCE_RE = re.compile(
    r"\b" + _SOURCE + r"\b[^.!?]{0,60}?\b(?:do|does|did)(?: not|n't|n’t)\s+(?:\w+\s+)?"
    r"(?:provide|mention|contain|include|specify|state|say|give|discuss|address|describe"
    r"|indicate|offer|answer)\b"
    r"|\bnot (?:mentioned|provided|specified|stated|included|discussed|given) in (?:the|any"
    r"|these|this)\s+(?:\w+\s+)?" + _SOURCE + r"\b"
    r"|\bno (?:specific |further |additional )?(?:information|details?|mention)\b"
    r"|\bnone (?:is |are |was |were )?(?:mentioned|given|provided|stated)\b", re.IGNORECASE)
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

    A sentence that says what the sources lack is one absence claim (itself); one that asserts
    nothing has none; any other is split into factual claims at semicolons and at "and" /
    "but" / "while" / "whereas" when what follows starts a new clause (a subject then an
    auxiliary verb, as in "X is A and Y is B."). Words are never dropped, so negation,
    numbers, dates and modals stay; each claim is its own fragment.
    """
    body = _BULLET_RE.sub("", sentence, count=1).strip()
    if not any(ch.isalnum() for ch in body) or _about_the_answer(body):
        return []
    if _ABSENCE_RE.search(body):
        return [LexicalClaim(body, ABSENCE, (body,))]
    if _REFUSAL_RE.search(body) or not _has_content(body):
        return []
    parts, last = [], 0
    for match in _CLAUSE_RE.finditer(body):
        left, right = body[last:match.start()], body[match.end():]
        if ";" in match.group() or (len(left.split()) >= 3 and _starts_clause(right)):
            parts.append(left)
            last = match.end()
    parts.append(body[last:])
    claims = [p.strip().strip(",;:").strip() for p in parts]
    return [LexicalClaim(c, FACT, (c,)) for c in claims if any(ch.isalnum() for ch in c)] or [
        LexicalClaim(body, FACT, (body,))]


def decompose_sentence(sentence: str) -> list[str]:
    """The factual claims of a sentence, as text (absence claims left out): what a judge with
    the plain contract (a list of strings, all factual) returns."""
    return [c.text for c in decompose_claims(sentence) if c.kind == FACT]


def _about_the_answer(text: str) -> bool:
    """A preamble, a greeting, an offer, a bare citation or a heading."""
    if any(r.search(text) for r in (_PREAMBLE_RE, _GREETING_RE, _OFFER_RE, _CITATION_RE)):
        return True
    return bool(_HEADING_RE.search(text)) and len(text.split()) <= 5


def _has_content(text: str) -> bool:
    """A content word, or a one-letter name ("X is A"); not "Therefore, the answer is:" or
    "This is mentioned in passage 3." (a number that labels a passage is a citation)."""
    toks = _tokenize(text)
    return any((_is_content(t) or t.low.isalpha() and t.cap) and not _is_label(toks, i)
               for i, t in enumerate(toks))


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
