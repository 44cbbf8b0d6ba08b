"""Decomposition coverage: a false sentence cannot vanish by getting no claims, or other claims.

A judge decomposes each answer sentence into claims, and only claims are verified. A judge that
returns no claim for "The free trial lasts 30 days", or the claim "Plans renew monthly" instead,
would make the false sentence disappear. This module checks that a sentence's claims cover its
content words, numbers, names and negation; when what is left over carries content it produces
an extra claim (the sentence itself) for the judge to verify. Sentences that assert nothing
(greetings, offers, refusals, statements about the answer's own form, headings, bare citations)
need no claim (`is_non_claim`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rt4chart.transforms.judges.lexical_claims import decompose_claims
from rt4chart.transforms.text.quantities import number_terms
from rt4chart.transforms.support import STOPWORDS, check_support, claim_body, fold, stem

# A decomposer may drop a couple of discourse words ("notably", "clearly") when it restates a
# sentence: up to this many uncovered plain content words are tolerated. Numbers, dates, times,
# names and negation are never tolerated (they are what a hallucination changes), nor is a
# sentence left half uncovered (short sentences have few words to lose).
MAX_STRAY_WORDS = 2
# Words about the answer or its sources rather than the world: a restating claim drops them.
_META = frozenset(
    """passage passages article text context document documents source sources information
    summary summarize summarise answer question mention mentions mentioned state states stated
    provide provides provided note notes noted report reports reported describe describes
    described indicate indicates indicated say says said explain explains explained""".split()
)
_WORD_COUNT_RE = re.compile(r"\bin (?:about |under |less than |fewer than )?\d+ words\b", re.I)
_BULLET_RE = re.compile(r"^\s*(?:[-*•·▪‣–—>#]+|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_GREETING_RE = re.compile(
    r"^(?:hi|hello|hey|greetings|dear\s+\w+|good (?:morning|afternoon|evening)|thanks?(?: you)?"
    r"(?: (?:so|very) much)?(?: for [^.!?]*)?|(?:great|good|excellent|interesting) question"
    r"|you(?:'re|’re| are) welcome|(?:i )?hope (?:this|that) helps|good luck|best(?: regards)?"
    r"|kind regards|sincerely|cheers|sure|certainly|of course|absolutely|okay|ok|yes|no problem"
    r"|glad to help|happy to help)\b", re.I)
_OFFER_RE = re.compile(
    r"\blet (?:me|us) know\b|\bfeel free\b|\bdon['’]?t hesitate\b|\bdo not hesitate\b"
    r"|\bif you have (?:any )?(?:other |further |more |additional )?questions?\b"
    r"|\b(?:is there )?anything else\b|\b(?:i|we)(?:['’]d| would| will|['’]ll)? be (?:happy|glad)"
    r" to\b|\bi can help\b|\bhope (?:this|that|it) helps\b|\bplease (?:ask|reach out|contact)\b"
    r"|\bdo (?:my|our) best\b|\bhelp you\b",
    re.I)
_REFUSAL_RE = re.compile(
    r"\b(?:unable|not able) to (?:answer|determine|provide|find|say|tell)\b"
    r"|\b(?:i|we) (?:cannot|can['’]?t|could not|couldn['’]?t) (?:answer|determine|provide|find"
    r"|say|tell)\b|\bcannot be (?:answered|determined)\b|\b(?:i['’]?m|i am) sorry\b"
    r"|\bi apologi[sz]e\b|\b(?:no|not enough|insufficient) (?:relevant |specific )?(?:information"
    r"|details?|context|data)\b|\bbased (?:solely |only )?on the (?:given|provided|available)?\s*"
    r"(?:passages?|context|documents?|articles?|sources?|text|information)\b", re.I)
_FORM_RE = re.compile(
    r"^(?:(?:therefore|thus|so|hence|in summary|to summari[sz]e|in conclusion|in short),?\s*)?"
    r"(?:the |my |final )*(?:answer|summary|response|overview|output)(?: is| would be)?\s*:?$"
    r"|^(?:here(?:['’]s| is| are)|below is|the following is)\b[^.!?]*[:.!]?$", re.I)
_CITATION_RE = re.compile(
    r"^(?:as\s+)?(?:this|that|it|these|the (?:above|information)|which)?\s*"
    r"(?:is|are|was|were|can be)?\s*"
    r"(?:(?:mentioned|stated|found|described|noted|explained|shown|given|reported|cited)\s+)?"
    r"(?:in|from|by|according to|see|source:?|cf\.?)?\s*\(?\[?(?:the )?(?:passages?|documents?"
    r"|articles?|sources?|references?|context)\s*[\d, and&]*\]?\)?\.?$"
    r"|^\[?\(?\d{1,3}\)?\]?\.?$", re.I)
_HEADING_RE = re.compile(r"^(?:#+\s*.+|\*\*[^*]+\*\*:?|__[^_]+__:?|[^.!?]{1,60}:)$")
# "Passage 3: Attaching Frames Together": a source's part, then title-case words without a full
# stop ("Hours: Monday to Friday" is a claim).
_TITLE_RE = re.compile(r"(?i:^(?:passage|document|source|step|part|section|chapter|method|option"
                       r"|tip)\s*\d*\s*:)\s+(?:[A-Z0-9][\w'’&-]*\s*|(?:a|an|the|of|and|or|to|in|for"
                       r"|on|with)\s+){1,8}$")
# Words of courtesy that are content nowhere else: "Feel free to ask if you need more help."
_COURTESY = frozenset(
    """ask asking help helps helpful need needs question questions know further assist
    assistance happy glad hesitate reach contact clarification clarify anything else more feel
    free best day great wonderful nice concern concerns""".split())
# Words a refusal or a statement about the answer hedges with, that state no fact: "it is not
# possible to provide a complete answer", "here's a brief answer", "I am unable to answer the
# question in its entirety".
_HEDGES = frozenset(stem(w) for w in """possible complete completely brief briefly original
    entirety entire reply able fully solely""".split())


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


def _strip(sentence: str) -> str:
    return _BULLET_RE.sub("", sentence.strip(), count=1).strip()


def _leftover(text: str) -> set[str]:
    """Content stems once courtesy, offers, refusals and words about the sources are gone."""
    for pattern in (_GREETING_RE, _OFFER_RE, _REFUSAL_RE):
        text = pattern.sub(" ", text)
    text = _WORD_COUNT_RE.sub(" ", claim_body(text))
    words = [w for w in fold(text).split() if w not in STOPWORDS and len(w) > 1]
    return {stem(w) for w in words if w not in _META and stem(w) not in _META}


def is_non_claim(sentence: str) -> bool:
    """Whether a sentence asserts nothing to verify.

    True for greetings and courtesy ("Thank you for your question!"), offers ("Let me know if
    you have any further questions."), refusals without content ("Unable to answer based on the
    given passages."), statements about the answer's own form ("Therefore, the answer is:",
    "Here is a summary of the article:"), headings ("Key features:", "## Details") and bare
    citations ("This is mentioned in passage 3.", "[2]"). A refusal that names what is missing
    ("The passages do not say when Acme opened.") is a claim about the sources, not a non-claim.
    """
    body = _strip(sentence)
    if not any(ch.isalnum() for ch in body):
        return True
    if any(p.match(text) for p in (_HEADING_RE, _TITLE_RE) for text in (sentence.strip(), body)):
        return True
    if _FORM_RE.match(body) or _CITATION_RE.match(body):
        return True
    if _GREETING_RE.match(body) or _OFFER_RE.search(body):
        return (not (_leftover(body) - _COURTESY - _HEDGES)
                and not number_terms(claim_body(body)))
    if _REFUSAL_RE.search(body):
        return not (_leftover(body) - _HEDGES)
    return False


def _covered(term: str, pool: set[str]) -> bool:
    # "renewal" / "renews", "reservations" / "reserve": a shared 5-letter prefix is enough.
    return term in pool or (len(term) >= 5 and any(p[:5] == term[:5] for p in pool))


def _uncovered_words(body: str, claims: Sequence[str]) -> list[str]:
    pool = {stem(w) for claim in claims for w in fold(claim).split()}
    out: list[str] = []
    for word in fold(claim_body(body)).split():
        term = stem(word)
        if (len(word) > 1 and not word[0].isdigit() and word not in STOPWORDS | _META
                and term not in _META and not _covered(term, pool) and word not in out):
            out.append(word)
    return out


def check_coverage(sentence: str, claims: Sequence[str]) -> Coverage:
    """Whether `claims` cover `sentence`, and if not, the claim to add.

    A claim is added when a number, date, time, name or negation of the sentence is in no claim,
    when more than MAX_STRAY_WORDS of its content words are in no claim, or when at least half
    of its content words are (so a judge returning no claims, or substituted ones, cannot make
    a sentence vanish). The added claim is the whole sentence: a fragment would lose the subject
    and the qualifiers that scope the missing words, and could be verified out of context.

    Args:
        sentence: one answer sentence.
        claims: the claims the decomposer returned for it (possibly none).

    Returns:
        A `Coverage`; for a sentence that claims nothing (`is_non_claim`) it is empty.
    """
    if is_non_claim(sentence) or not decompose_claims(sentence):
        # The offline decomposer is an independent witness: a sentence in which it finds no
        # claim (a preamble, an offer, a refusal it knows) is not one a judge can hide.
        return Coverage()
    body = _strip(sentence)
    specifics = list(check_support(body, list(claims) or [""]).missing)
    words = _uncovered_words(body, claims)
    total = len(_leftover(body))
    needed = bool(specifics) or len(words) > MAX_STRAY_WORDS or (
        bool(words) and 2 * len(words) >= max(total, 1))
    return Coverage(tuple(specifics + words), body if needed else None)
