"""Is a claim's text a statement that the sources lack something? Decided on the text alone.

A decomposer labels each claim `fact`, `source` or `absence`, and an absence claim needs no
quote: ENT when the context lacks what it says is missing. So the label alone must not clear a
claim: "The free trial lasts 3 days." labelled `absence` is true of any context that does not
say it. rt4chart accepts the label only when the claim's own words say the sources lack
something (`text.assertion.classify` reads the sentence's grammar: a negation that scopes a
verb of saying or a source noun, "The passages do not mention the fee."), and every clause of
the claim does: "The passages do not say when it opened, but it is in Paris." also states a
fact. The judge that labelled the claim has no say in it, and neither has the context.
"""

from __future__ import annotations

import re

from rt4chart.transforms.text.assertion import ABSENCE, classify, strip_marker

# Where a second statement can start inside a claim: a semicolon, a contrast, ", and".
_CLAUSE_RE = re.compile(
    r"\s*;\s*|,\s+and\s+|,?\s+(?:but|while|whereas|although|though|however|yet)\s+", re.I)


def states_absence(text: str) -> bool:
    """Whether `text` says only that the sources lack something: the classifier reads it as an
    absence, and no clause of it asserts anything else (a clause that asserts nothing, such as
    "unfortunately", does not count)."""
    body = strip_marker(text)
    if classify(body).kind != ABSENCE:
        return False
    for clause in _CLAUSE_RE.split(body):
        found = classify(clause)
        if found.checkable and found.kind != ABSENCE:
            return False
    return True


def asserts_nothing(text: str) -> bool:
    """Whether `text` names nothing about the world ("None mentioned."): labelled an absence,
    it hides no fact, and the absence check reads what is missing from the question."""
    found = classify(strip_marker(text))
    return not found.world and not found.specifics


def accepted_absence(text: str) -> bool:
    """Whether a claim labelled `absence` may be checked as one (else it is verified as a
    fact): it states an absence (`states_absence`) or names nothing (`asserts_nothing`)."""
    return states_absence(text) or asserts_nothing(text)
