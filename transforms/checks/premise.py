"""The user's premise: a specific of a claim that the user's own question states.

RAG answers restate the question: "To remove the door panel on a 2006 Chevy, ..." for "2006
chevy remove door panel", "1099-PATR income goes on Form 1040" for "where does 1099-patr go on
1040". The question is never evidence (a quote of it is not found in the documents,
`evidence.align`), so the support check (`evidence.supported_verdict`) would demand the 2006
from the quotes, which never state it, and overturn a faithful ENT. A number, amount,
percentage, date, weekday or time that the claim shares with the question is the user's
premise, not something the generator invented: a number (with its unit, "30 days") or a date
that the claim shares with the question is not demanded from the quotes, unless the documents
state a conflicting value of the same kind (`conflicting_value`): then it is checked as any
other specific ("Is the trial 30 days?" answered "The trial lasts 30 days." against "The trial
lasts 14 days." stays non-ENT). Names were never demanded from the quotes.

An amount of money, a percentage, a weekday or a time of day stays demanded even when the
question states it (PREMISE_KINDS): the support check refuses those when the documents state
them nowhere, and they are what a question carrying a planted instruction would smuggle ("The
refund is $500."). A bare number or a date found nowhere was already let through unless a
quote restates the claim with a value of its own; the premise rule adds only that such a value
of another kind ("2 screws" for "a 2006 Chevy") does not overturn the question's.

What it can let through: a number or date the user gave that the documents neither state nor
contradict, in a claim a judge called ENT with a grounded quote for the rest. What it cannot: a
value the question does not state, a value the documents contradict, a claim without a grounded
quote that shares its words (the question is never a quote, `evidence.align`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rt4chart.transforms.checks.support import _kind, check_support, claim_body
from rt4chart.transforms.text.quantities import UNITS, Quantity, When, read, same_value
from rt4chart.transforms.text.words import content_terms

# Units of one kind: "30 days" and "two weeks" are both durations, "$49" and "£39" both money.
_KINDS = ({"second", "minute", "hour", "day", "week", "month", "year", "decade", "century"},
          {"usd", "eur", "gbp", "yen", "cent"})
_UNIT_WORDS = frozenset(UNITS)
# The support check's kinds (`evidence.SPECIFIC_KINDS`) a question can make a premise: not its
# STRICT_KINDS (amount, percentage, weekday, time), see the module docstring.
PREMISE_KINDS = frozenset({"number", "date"})
_YEAR_RE = re.compile(r"\d{4}")
_YEARS = (1000, 2100)


def _unit_kind(unit: str | None) -> object:
    return next((i for i, group in enumerate(_KINDS) if unit in group), unit)


def _year_like(q: Quantity) -> bool:
    """A bare four-digit whole number that may be a year ("2006 Chevy"), not a count."""
    return (q.unit is None and bool(_YEAR_RE.fullmatch(q.text))
            and _YEARS[0] <= q.value <= _YEARS[1])


def _same_kind(q: Quantity, p: Quantity) -> bool:
    if q.unit is None or p.unit is None:
        return q.unit is None and p.unit is None and _year_like(q) == _year_like(p)
    return _unit_kind(q.unit) == _unit_kind(p.unit)


def _years(whens: Iterable[When]) -> list[Quantity]:
    """The years of dates, as bare numbers: "May 1, 2007" states a year like "2007"."""
    return [Quantity(float(w.value[0]), None, 1.0, False, str(w.value[0]))
            for w in whens if w.kind == "date" and w.value[0] is not None]


def _when_differs(w: When, x: When) -> bool:
    if w.kind != x.kind:
        return False
    if w.kind == "date":  # a part both state and disagree on: "May 2020" / "May 1, 2019"
        return any(a is not None and b is not None and a != b
                   for a, b in zip(w.value, x.value, strict=True))
    if w.kind == "time":
        return w.value[0] % 720 != x.value[0] % 720 if (w.value[1] or x.value[1]) else (
            w.value[0] != x.value[0])
    return w.value != x.value


def _quantity_conflicts(q: Quantity, found, given) -> bool:
    """A value of `q`'s kind in `found` that differs from `q` and the question does not give."""
    pool = [*found.quantities, *found.ranges] + (_years(found.whens) if _year_like(q) else [])
    given_pool = [*given.quantities, *given.ranges, *_years(given.whens)]
    return any(_same_kind(q, p) and not same_value(q, p)
               and not any(_same_kind(p, g) and same_value(p, g) for g in given_pool)
               for p in pool)


def _when_conflicts(w: When, found, given) -> bool:
    return any(_when_differs(w, x) and not any(x.value == g.value for g in given.whens)
               for x in found.whens)


def _about(line: str, terms: set[str]) -> bool:
    """Whether a document sentence is about what the claim is about: it shares a content word
    with it that is not a number or a unit ("trial", not "days")."""
    return bool({t for t in content_terms(line) & terms
                 if not t[0].isdigit() and t not in _UNIT_WORDS})


def conflicting_value(specific: Quantity | When, claim: str, question: str, context: str
                      ) -> bool:
    """Whether the documents state a value conflicting with the claim's `specific`: in a
    sentence about what the claim is about (`_about`; any sentence for a claim that names
    nothing but its value), a value of the same kind (a bare year for
    a bare year, another bare number for a bare number, a duration for a duration, money for
    money, the same unit otherwise; a date, weekday or time for one) that differs from it and
    that the question does not give itself ("Form 1099" in "where does 1099-patr go on
    1040" is the user's too)."""
    terms = content_terms(claim_body(claim))
    # A claim that names nothing but its value ("It is 30 days.") is about whatever the
    # documents give a value of that kind for: every sentence may conflict with it.
    named = any(not t[0].isdigit() and t not in _UNIT_WORDS for t in terms)
    given = read(question)
    for line in context.splitlines():
        if named and not _about(line, terms):
            continue
        found = read(line)
        if isinstance(specific, When):
            if _when_conflicts(specific, found, given):
                return True
        elif _quantity_conflicts(specific, found, given):
            return True
    return False


def _by_description(claim: str) -> dict[str, Quantity | When]:
    """The claim's specifics by the description the support check gives them ("number 2006",
    "amount $49", "date May 1")."""
    found = read(claim_body(claim))
    out: dict[str, Quantity | When] = {f"{w.kind} {w.text}": w for w in found.whens}
    out.update({f"{_kind(q)} {q.text}": q for q in found.quantities})
    return out


def premises(claim: str, missing: Sequence[str], question: str, context: str) -> tuple[str, ...]:
    """The specifics of `missing` (as the support check describes them, "number 2006") that
    are the user's premise: numbers and dates (PREMISE_KINDS) the question states, for which
    the documents (`context`, their text only) state no conflicting value
    (`conflicting_value`). Empty without a question."""
    if not missing or not question.strip():
        return ()
    unstated = set(check_support(claim_body(claim), [question]).missing)
    specifics = _by_description(claim)
    return tuple(m for m in missing
                 if m.split(" ", 1)[0] in PREMISE_KINDS and m not in unstated and m in specifics
                 and not conflicting_value(specifics[m], claim, question, context))
