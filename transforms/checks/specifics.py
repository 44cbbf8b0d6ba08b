"""The support check of a grounded ENT (`supported_verdict`): its quotes must not restate the
claim with other specifics (a number, amount, percentage, date, weekday or time), and the
specifics a faithful answer states only from its context must be found there
(`unsupported_specifics`). Grounding itself (are the quotes real, and about the claim) is
`evidence.py`; the comparison of specifics is `support.py`'s."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rt4chart.schemas.records import Evidence
from rt4chart.transforms.checks.premise import premises
from rt4chart.transforms.checks.support import check_support
from rt4chart.transforms.text.normalize import normalize
from rt4chart.transforms.text.quantities import read
from rt4chart.transforms.text.words import (
    content_terms,
)

# What a lucky quote gets wrong: a number, amount, percentage, date, weekday or time.
SPECIFIC_KINDS = frozenset({"number", "amount", "percentage", "date", "weekday", "time",
                            "unreadable"})


# Specifics that a faithful answer does not state unless its context does: an amount of money,
# a percentage, a weekday or a time of day found nowhere in the context makes an ENT NIC with
# any quote. A bare number or a date may come from counting ("two boys"), a range ("30-45
# minutes") or world knowledge (the year a law was repealed), which human labels (RAGTruth)
# accept: those count only when a quote restates the claim with specifics of its own. A number
# the reader cannot read ("5O", `text/numerals.py`) is checked against nothing, so it is
# demanded verbatim from the context with any quote.
STRICT_KINDS = frozenset({"amount", "percentage", "weekday", "time", "unreadable"})
# A quote restates the claim when it holds this share of the claim's content terms: "The free
# trial lasts 14 days" restates "The free trial lasts 30 days", and its 14 is the claim's 30.
RESTATED_SHARE = 0.75
# "79 degrees Fahrenheit (26 degrees Celsius)", "350°F (175°C)": a conversion in parentheses
# restates the quantity before it; it is not a fact of the source.
_CONVERSION_RE = re.compile(
    r"\(\s*(?:about |approximately |approx\.? |~)?[\d.,]+\s*(?:°\s*[CF]\b|degrees?\s+"
    r"(?:Celsius|Fahrenheit|C|F)\b|(?:km|mi|miles?|kilomet(?:er|re)s?|m|met(?:er|re)s?|ft|feet|cm|"
    r"inch(?:es)?|kg|kilograms?|lbs?|pounds?|g|grams?|oz|ounces?|l|lit(?:er|re)s?|ml|gallons?)"
    r"\b)\s*\)")


def _restated(claim: str, quotes: Sequence[str]) -> bool:
    """Whether a quote restates the claim with specifics of its own (its 14 for the claim's
    30). A restating quote without any (the eligibility rule of a claim whose "21 days" adds
    up the other quotes' 14 and 7) swaps nothing."""
    # The claim's words around its specifics: "nineteen ninety-five" is a number, not words
    # a restating quote has to share.
    mine = content_terms(read(claim).rest)
    if not mine:  # "It is 30 days.": a claim that names nothing but its value is restated by
        return any(_has_specifics(q) for q in quotes)  # any quote with a value of its own
    return any(
        len(mine & content_terms(q)) >= RESTATED_SHARE * len(mine) and _has_specifics(q)
        for q in quotes)


def _has_specifics(text: str) -> bool:
    # Read as written (the reader sets apart what it cannot read, such as digits under a bidi
    # override) and as normalised (full-width and other forms): a specific either way counts.
    raw, normal = read(text), read(normalize(text))
    return any((f.quantities or f.whens or f.unreadable) for f in (raw, normal))


def unsupported_specifics(claim: str, quotes: Sequence[str], context: str) -> tuple[str, ...]:
    """The specifics of `claim` that nothing in the context states: what makes an ENT NIC.

    A specific counts (a number with its unit, amount, percentage, date, weekday or time, see
    `support.check_support`) when the quotes lack it, the documents (`context`: their text
    only, `document_text`; never the headers, doc ids or question) lack it too, and either it
    is of a STRICT_KINDS kind ("$49", "15%", "Sunday", "9 am") or a quote restates the claim
    otherwise (RESTATED_SHARE of its content terms) with specifics of its own: "The free trial
    lasts 30 days" quoted by "The free trial lasts 14 days".
    Narrower than `check_support` on purpose: a faithful judge quotes the sentence it found,
    not every sentence a number or a name comes from, and human labels (RAGTruth) accept
    conversions, counts and world knowledge; with the gold judge this loses no answer.
    """
    body = _CONVERSION_RE.sub(" ", claim)
    missing = check_support(body, quotes, context=context).missing
    specifics = [m for m in missing if _kind(m) in SPECIFIC_KINDS]
    if not specifics:
        return ()
    # The pipeline's own evidence: a specific the quotes lack but some context sentence states
    # is supported (the judge quoted the sentence it found, not every one a number comes from).
    anywhere = set(check_support(body, [*quotes, context], context=context).missing)
    absent = [m for m in specifics if m in anywhere]
    if _restated(body, quotes):
        return tuple(absent)
    return tuple(m for m in absent if _kind(m) in STRICT_KINDS)


def _kind(missing: str) -> str:
    return missing.split(" ", 1)[0]


def supported_verdict(
    grounded: tuple[str, tuple[Evidence, ...], str | None, float], claim: str, context: str,
    question: str = "",
) -> tuple[str, tuple[Evidence, ...], str | None, float]:
    """Support, not just presence: a grounded ENT stands only if its quotes do not restate the
    claim with other specifics (`unsupported_specifics`). Otherwise it is NIC, with no
    evidence, the judge's score (which `probability.claim_p` moves to the NIC side) and a note
    naming what the evidence lacks. A number or date the claim restates from the setting of
    the user's `question` ("a 2006 Chevy"; not a value the question asks about) is not demanded
    (`premise.premises`: unless the documents state a value that could be it in another form);
    the ENT's note names it. Other labels pass unchanged.
    """
    label, evidence, note, p = grounded
    if label != "ENT":
        return grounded
    lacks = unsupported_specifics(claim, [e.text for e in evidence], context)
    if not lacks:
        return grounded
    given = premises(claim, lacks, question, context)
    lacks = tuple(m for m in lacks if m not in given)
    if not lacks:
        why = f"the question's premise, not demanded from the quotes: {', '.join(given)}"
        return label, evidence, f"{note}; {why}" if note else why, p
    why = f"ENT overturned: evidence lacks {', '.join(lacks)}"
    return "NIC", (), f"{why}; {note}" if note else why, p
