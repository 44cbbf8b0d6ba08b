"""Support, not just presence: does the quoted evidence cover what the claim states precisely?

Grounding (`evidence.py`) makes sure a judge's quote is real and about the claim. A judge that
was talked into "supported" still quotes the context sentence closest to the claim: "The free
trial lasts 30 days" with the quote "The free trial lasts 14 days". This check compares the
claim's specifics with the evidence: numbers with their units, money, percentages, dates,
weekdays and times (however written, see `text/quantities.py`), named entities, and negation. An ENT
stands only if nothing is missing; the result names what is, for the claim row's note. A number
the reader cannot read without a guess ("5O", digits under a bidi override: `text/numerals.py`)
is stated only by evidence holding the same characters; in the evidence it states no value.

It is lenient where a faithful paraphrase differs: rounding ("33%" for 33.3%), "about 2,000"
for 1,950, case, possessives, hyphens and camelCase keys ("Wi-Fi" / `"WiFi"`), titles and
company suffixes ("Acme" for "Acme Corp."), acronyms ("NASA", "U.S."), a name the question or
context gave that the quoted sentence refers to by a pronoun (see `check_support`'s `context`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rt4chart.transforms.text.names import entities, missing_entities
from rt4chart.transforms.text.normalize import normalize
from rt4chart.transforms.text.numerals import without_controls
from rt4chart.transforms.text.quantities import Quantity, When, read, same_value
from rt4chart.transforms.text.words import STOPWORDS, content_terms, fold, stem

__all__ = ["STOPWORDS", "Support", "check_support", "claim_body", "content_terms", "entities",
           "fold", "stem"]

_NEGATION_IDIOMS_RE = re.compile(
    r"\b(?:not only|not just|not to mention|no doubt|no matter|nothing but|no less than"
    r"|no more than|not least)\b", re.I)
_NEGATION_RE = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|lacks?|lacking|false)\b"
    r"|n['’]t\b", re.I)
_CLAUSE_RE = re.compile(r"[,;.!?\n(){}]|\b(?:but|while|whereas|although|though|however|yet)\b",
                        re.I)
# Negation is compared only between a claim clause and an evidence clause that share this
# share of their content words: otherwise the negation is about something else.
NEGATION_OVERLAP = 0.75
# List markers and references to the sources are not facts about the world: "2. Rinse well
# (Passage 3, step 7)." claims nothing about the numbers 2, 3 or 7.
_MARKER_RE = re.compile(
    r"^\s*(?:[-*•·▪‣–—>+#]+|\(?\d{1,3}[.)]|\(?[a-z][.)]|step\s+\d+\s*[:.)-])\s*", re.I)
_REFERENCE_RE = re.compile(
    r"\b(?:passages?|documents?|docs?|sources?|articles?|references?|steps?|paragraphs?|pages?"
    r"|sections?|tips?|methods?|options?|points?)\s+#?\d+"
    # ... but not the number of an amount: "points 2 million" keeps its 2 million.
    r"(?![\d.,]*\s*(?:hundred|thousand|million|billion|trillion)\b)(?:\s*[:.]\s*\d+)?"
    r"(?:\s*(?:,|and|&|-|to|or)\s*\d+\b)*|\[\d+(?:\s*[,-]\s*\d+)*\]", re.I)
# "3.5 out of 5 stars", "on a scale of 1 to 10": the scale is not a fact of the source.
_SCALE_RE = re.compile(r"\bout of (?:a (?:possible|maximum) (?:of )?)?(?:\d+|five|ten)\b"
                       r"|\bon a scale (?:of|from) \d+ to \d+\b", re.I)
_SENTENCE_CLAUSE_RE = re.compile(r"[;.!?\n]|\b(?:but|while|whereas|although|though|however)\b",
                                 re.I)
_CONDITIONAL_RE = re.compile(r"\b(?:if|unless|whether|when)\b", re.I)
_NULL_FIELD_RE = re.compile(r"^.*:\s*(?:null|None)\s*,?\s*$", re.M)
_FIELD_RE = re.compile(r"\"(?P<key>[^\"\n]{1,60})\"\s*:\s*(?P<value>\"[^\"\n]*\"|\w+)")
_NO_VALUE_RE = re.compile(r"u?'?(?:no|none)'?|false|False")
@dataclass(frozen=True)
class Support:
    """What the evidence leaves out of the claim ("number 30 days", "entity Acme Corp").

    Attributes:
        missing: one short description per specific of the claim the evidence does not state,
            in the claim's order; empty when the evidence covers the claim.
    """

    missing: tuple[str, ...] = ()

    @property
    def supported(self) -> bool:
        return not self.missing

    @property
    def note(self) -> str:
        """"evidence lacks number 30 days, entity Acme Corp" (empty when supported)."""
        return f"evidence lacks {', '.join(self.missing)}" if self.missing else ""


# --- numbers, dates and times -------------------------------------------------------------


def _unit_fits(claim: Quantity, other: Quantity) -> bool:
    # An amount said only vaguely and without a unit ("thousands of fish") states no amount
    # with a unit ("3,200 yen").
    if other.unit is None and not other.point and claim.unit is not None:
        return False
    return claim.unit is None or other.unit is None or claim.unit == other.unit


def _date_numbers(whens: Iterable[When]) -> list[Quantity]:
    # "in 2019" is stated by "May 1, 2019"; "Aug 18 and 19" by "Aug 19" (the day of a date).
    return [Quantity(float(v), None, 1.0, False, w.text)
            for w in whens if w.kind == "date" for v in (w.value[0], w.value[2]) if v is not None]


def _hours(whens: Iterable[When]) -> list[Quantity]:
    # "closes at 9" is stated by "21:0": a bare claim number may be an hour of the evidence.
    out = []
    for w in whens:
        if w.kind == "time" and w.value[0] % 60 == 0:
            hour = w.value[0] // 60
            out += [Quantity(float(h), None, 1.0, False, w.text) for h in {hour, hour % 12 or 12}]
    return out


def _quantity_covered(q: Quantity, pool: list[Quantity]) -> bool:
    return any(_unit_fits(q, p) and same_value(q, p) for p in pool)


def _time_covered(minutes: int, ambiguous: bool, times: list[tuple], numbers: list[Quantity]
                  ) -> bool:
    for other, other_ambiguous in times:
        if other == minutes or (ambiguous or other_ambiguous) and other % 720 == minutes % 720:
            return True
    hour = minutes // 60 % 12 or 12  # "5 pm" against "closes at 5"
    return minutes % 60 == 0 and any(p.unit is None and p.value == hour for p in numbers)


def _date_covered(value: tuple, dates: list[tuple], numbers: list[Quantity]) -> bool:
    year, month, day = value
    for y, m, d in dates:
        if m != month or day is not None and d != day:
            continue
        if year is None or y == year or y is None and any(p.value == year for p in numbers):
            return True
    return False


def _when_covered(when: When, whens: list[When], numbers: list[Quantity]) -> bool:
    same_kind = [w.value for w in whens if w.kind == when.kind]
    if when.kind == "time":
        return _time_covered(*when.value, same_kind, numbers)
    if when.kind == "date":
        return _date_covered(when.value, same_kind, numbers)
    return when.value in same_kind


def _missing_specifics(claim: str, evidence: str) -> list[str]:
    mine, theirs = read(claim), read(evidence)
    numbers = [*theirs.quantities, *_date_numbers(theirs.whens)]
    ranges = list(theirs.ranges)
    missing = [f"{_kind(q)} {q.text}" for q in mine.quantities
               if not _quantity_covered(q, [*numbers, *ranges, *_hours(theirs.whens)])]
    whens = [w for w in mine.whens if not _when_covered(w, list(theirs.whens), numbers)]
    for kind, spread in (("weekday", 2), ("time", 3)):
        # A schedule over several days ("Monday through Saturday") or with several opening
        # times is stated line by line in a record: one of them quoted is enough.
        group = [w for w in mine.whens if w.kind == kind]
        if len(group) >= spread and len([w for w in whens if w.kind == kind]) < len(group):
            whens = [w for w in whens if w.kind != kind]
    missing += _unreadable_missing(claim, evidence)
    return missing + [f"{w.kind} {w.text}" for w in whens]


def _comparable(text: str) -> str:
    """`text.normalize`d, after the digits a bidi override shows reversed are blanked
    (`numerals.without_controls`): removing the override alone would turn "\u202e52\u202c",
    shown as 25, into a plain 52."""
    return normalize(without_controls(text)[0])


def _unreadable_missing(claim: str, evidence: str) -> list[str]:
    """A number the reader cannot read without a guess ("5O", digits under a bidi override) is
    no value, so no value of the evidence states it: only the same characters do."""
    stated = {u.text for u in read(evidence).unreadable}
    return [f"unreadable {u.note}" for u in read(claim).unreadable if u.text not in stated]


def _kind(q: Quantity) -> str:
    return {"%": "percentage", "usd": "amount", "eur": "amount", "gbp": "amount",
            "yen": "amount", "cny": "amount", "krw": "amount"}.get(q.unit or "", "number")


# --- negation ----------------------------------------------------------------------------


def _clauses(text: str, commas: bool) -> list[tuple[set[str], bool]]:
    """(content terms, negated) per clause; a conditional clause ("if it can't ...") says
    nothing about polarity and is left out. A claim is not cut at commas: "garage, street and
    valet parking are not" is one clause."""
    text = _NEGATION_IDIOMS_RE.sub(" ", text)
    out = []
    for part in (_CLAUSE_RE if commas else _SENTENCE_CLAUSE_RE).split(text):
        terms = content_terms(part)
        if terms and not _CONDITIONAL_RE.search(part):
            out.append((terms, bool(_NEGATION_RE.search(part))))
    return out


def _plural_free(text: str) -> set[str]:
    return {w.removesuffix("s") for w in fold(text).split()}


def _fields(text: str) -> list[tuple[str, bool]]:
    """Record fields `"WiFi": "u'no'"` as (the key's last word, whether the value says no);
    a null value says nothing."""
    out = []
    for match in _FIELD_RE.finditer(text):
        key, value = fold(match.group("key")).split(), match.group("value").strip('"')
        if key and value.lower() not in ("null", "none", ""):
            out.append((key[-1].removesuffix("s"), bool(_NO_VALUE_RE.fullmatch(value))))
    return out


def _missing_polarity(claim: str, evidence: Sequence[str]) -> list[str]:
    """A clause of the claim restated by a clause of the evidence (nearly the same words on
    both sides), or naming record fields of it, must agree with them on negation: "does not
    take reservations" / `"RestaurantsReservations": false`."""
    texts = [_NULL_FIELD_RE.sub(" ", text) for text in evidence]
    # Evidence clauses cut at commas, and cut as the claim's are: "Kids eat free at the buffet,
    # not surprisingly" restates itself, whatever its comma-cut clause "Kids eat free" says.
    theirs = [c for text in texts for commas in (True, False)
              for c in _clauses(text.replace('"', " "), commas=commas)]
    fields = [f for text in evidence for f in _fields(text)]
    for terms, negated in _clauses(claim, commas=False):
        words = _plural_free(" ".join(terms))
        found = [no for key, no in fields if key in words]
        found += [other_negated for other, other_negated in theirs
                  if len(terms & other) >= min(2, len(other))
                  and len(terms & other) >= NEGATION_OVERLAP * max(len(terms), len(other))]
        if found and all(no != negated for no in found):
            return ["negation" if negated else "the claim's polarity (evidence negates)"]
    return []


def claim_body(claim: str) -> str:
    """The claim without a list marker and references to the sources ("(Passage 2)")."""
    body = _REFERENCE_RE.sub(" ", _MARKER_RE.sub("", claim, count=1))
    return _SCALE_RE.sub(" ", body)


def check_support(claim: str, evidence: Sequence[str], context: str = "") -> Support:
    """Whether the evidence states the claim's specifics.

    Args:
        claim: the claim a judge labelled ENT.
        evidence: the grounded evidence texts (the quoted context sentences).
        context: optional text the claim may refer to by name while the quoted sentence uses a
            pronoun (the question, the whole context): a named entity found there is not
            missing. Numbers, dates, times and negation must be in the evidence itself.

    Returns:
        A `Support` whose `missing` names each specific the evidence lacks: numbers, amounts,
        percentages, dates, weekdays, times, entities, and a negation the evidence does not
        share (or a statement the evidence negates).
    """
    # The claim, the quotes and the context read alike (`text.normalize`): "ﬁve", "1\u200b4" and
    # "１４" in the context are what a model quoting them writes, "five", "14" and "14".
    raw_body, raw_joined = claim_body(claim), "\n".join(evidence)
    evidence = [_comparable(text) for text in evidence]
    context = _comparable(context)
    body = claim_body(_comparable(claim))
    joined = "\n".join(evidence)
    missing = _missing_specifics(body, joined)
    # What the reader cannot read as written (digits under a bidi override, which the
    # normalisation removes and would so turn into a plain, wrong value) stays unreadable.
    missing += [m for m in _unreadable_missing(raw_body, raw_joined) if m not in missing]
    missing += missing_entities(read(body).rest, joined, context)
    missing += _missing_polarity(body, evidence)
    return Support(tuple(missing))
