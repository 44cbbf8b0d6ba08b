"""The user's setting: a value of a claim that the user's question gives as the situation asked
about, not as the thing asked.

RAG answers restate the question: "To remove the door panel on a 2006 Chevy, ..." for "how do
I remove the door panel on a 2006 chevy", "8949 totals go to Schedule D of the 1040" for "where
does form 8949 go on the 1040". The question is never evidence (a quote of it is not found in
the documents, `evidence.align`), so the support check (`specifics.supported_verdict`) would
demand the 2006 from the quotes, which never state it, and overturn a faithful ENT. Such a value
is the user's setting and is not demanded from the quotes, under every one of these conditions
(`premises`):

- it is a number or a date (PREMISE_KINDS): an amount of money, a percentage, a weekday or a
  time stays demanded, as the support check refuses those when the documents state them nowhere
  and they are what a question carrying a planted instruction would smuggle ("the refund is
  $500");
- the question gives it as its setting, not as what it asks (`question_values`): a value in a
  yes/no question ("Is the warranty 5 years?", "... 12 galleries, right?") is the answer being
  asked for, and so is every value of a question that names alternatives or a span ("2 or 5
  years", "from 14 to 60 days", "between 3 and 6 months", "12 months versus 24"), that reports
  what someone said ("I read", "my friend said") or asks to confirm it ("Is that right?"), a
  value in an indirect or presupposing question ("tell me whether", "Why is the warranty 5
  years?") and one the question says of something not the user's, right after its verb ("the
  museum opened in 1990, what is in it?"; not "my bag weighs 20 kg"). The
  one exception in a yes/no question is an identifier: a model year before a name ("Does the
  2015 Ford Focus have ...?") and a number after "form", "model", "series" or "version";
- the claim states it as the question does (`_same`): the same value, written in digits, of the
  same kind and the same unit ("20 mg" for "20 mg"). Another unit ("12 miles" for "12 km"), a
  unit added or dropped ("50 mph" for "50"), a date for a bare year ("May 1990" for "1990"), a
  year in words, a decade ("the 1980s"), an approximate or bounded value ("up to 20 kg") are
  never the user's setting;
- the documents state no value that could be it in another form (`conflicting_value`): in a
  sentence about what the claim is about, a value of the same kind in any unit of its dimension,
  a bare number against a number with a unit, a year against a date, or a value the number
  reader cannot read plainly (words, decades), that differs from it and that the claim itself
  does not state.

What it can let through: a number or date the user gave as the setting of the question, that
the claim repeats exactly and that the documents neither state nor rival, in a claim a judge
called ENT with a grounded quote for the rest. What it cannot: a value the question asks about,
a value in another form than the question's, a value the documents rival, a claim without a
grounded quote that shares its words (the question is never a quote, `evidence.align`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rt4chart.transforms.checks.support import _kind, claim_body
from rt4chart.transforms.text.dates import MONTHS
from rt4chart.transforms.text.quantities import UNITS, Quantity, When, read
from rt4chart.transforms.text.words import STOPWORDS, content_terms

# The support check's kinds (`specifics.SPECIFIC_KINDS`) a question can make a setting: not its
# STRICT_KINDS (amount, percentage, weekday, time), see the module docstring.
PREMISE_KINDS = frozenset({"number", "date"})
# The dimensions of the reader's units: values in one dimension may be one value in two units
# ("12 km" / "7.5 miles"). "gbp" is also the reader's unit of "lb"; "km" of "km/h".
_DIMENSIONS = (
    {"second", "minute", "hour", "day", "week", "month", "year", "decade", "century"},
    {"usd", "eur", "gbp", "yen", "cent", "cny", "krw"},
    {"mile", "km", "meter", "foot", "inch", "cm", "mm", "yard"},
    {"kg", "gram", "ton", "ounce", "mg", "gbp"},
    {"liter", "gallon", "ml", "cup", "tablespoon", "teaspoon", "pint", "quart", "ounce"},
    {"mph", "km"},
)
_UNIT_WORDS = frozenset(UNITS)
_YEAR_RE = re.compile(r"\d{4}")
_YEARS = (1000, 2100)
# A value written plainly in digits, with its unit if any: not "1980s", "5th", "nineteen".
_PLAIN_RE = re.compile(r"(?:[$£€¥]\s?)?\d[\d,]*(?:\.\d+)?(?!\w)")
_DECADE_RE = re.compile(r"\d{3}0'?s")

# --- the question: what it gives as its setting, what it asks ---------------------------------

_SENTENCE_RE = re.compile(r"[^.?!？\n]+(?:[.?!？]+|$)")
# Clauses of a sentence: at a comma, semicolon, colon or dash followed by a space.
_CLAUSE_RE = re.compile(r"[,;:]\s+|\s[-–—]\s")
_AUX = frozenset(
    "is are was were am do does did can could will would shall should has have had may might "
    "must isn't aren't wasn't weren't don't doesn't didn't can't couldn't won't wouldn't "
    "shouldn't hasn't haven't hadn't".split())
_WH = frozenset("how what where when which who whom whose why".split())
_LEAD = frozenset("so and but then also or well ok okay please".split())
# A clause that asks to confirm what the sentence says: "..., right?", "..., isn't it?".
_TAG_RE = re.compile(r"^(?:right|correct|true|really|yes|no|ok|okay|is(?:n't| not) (?:it|that)"
                     r"|(?:is|was) (?:it|that) (?:so|right|true|correct)|am i right)\W*$", re.I)
# A question asking to confirm what the user said before: "Is that right?", "True?".
_BACK_RE = re.compile(r"^\W*(?:(?:is|was|are|isn't)\s+(?:that|this|it|they)\s+(?:right|true"
                      r"|correct|so|accurate|the case)|(?:right|true|correct|really)\s*[?？])",
                      re.I)
# Reported claims the user wants checked: "I read ...", "my friend said ...".
_REPORTED_RE = re.compile(
    r"\b(?:i|we)\s+(?:read|heard|saw|was told|were told|think|thought|believe|assume"
    r"|guess|remember)\b|\b(?:said|says|told (?:me|us)|claimed|claims? that|supposedly"
    r"|apparently|reportedly|rumou?red)\b", re.I)
# Two values joined as alternatives or as a span: "2 or 5", "14 to 60", "3 and 6", "12 versus
# 24", "2-4", "1932 / 1937". Only connecting words between them (fillers allowed).
_LINK_RE = re.compile(
    r"[\s,]*(?:(?:or|and|to|through|thru|till|until|versus|vs|v|rather than|instead of|not"
    r"|but|maybe|perhaps|even|up|down|about|around|is it|was it)\b\.?[\s,]*|[-–—/~]+\s*)+", re.I)
_JOINS_RE = re.compile(r"\b(?:or|and|to|through|thru|till|until|versus|vs|v|rather than"
                       r"|instead of|not)\b|[-–—/~]", re.I)
# An indirect yes/no question ("tell me whether ...", "check if the warranty is 5 years"; not
# the user's own condition, "what happens if I take 500 mg"), or a question that presupposes
# what it asks about ("Why is the warranty 5 years?").
_INDIRECT_RE = re.compile(r"\bwhether\b|\bif\s+(?!(?:i|we|my|our|i'm|i've|i'd)\b)"
                          r"|\b(?:confirm|verify)\b|\b(?:true|the case) that\b"
                          r"|^\W*(?:(?:so|and|but|then|ok|okay|well)\W+)*(?:why|how come)\b",
                          re.I)
# A value a question says of the world, right after its verb: "Why is the warranty 5 years?",
# "the museum opened in 1990, what is in it?" (not of the user: "my bag weighs 20 kg").
_PREDICATE_RE = re.compile(
    r"\b(?:is|are|was|were|be|been|being|lasts?|lasted|takes?|took|costs?|weighs?|holds?"
    r"|measures?|equals?|reach(?:es|ed)?|has|have|had|covers?|opened|closed|built"
    r"|founded|started|began|ended|finished|grew|rose|fell)\s+(?:(?:only|just|about|around"
    r"|exactly|really|still|now|actually|over|under|in|on|at|for|from|since|by|after|before"
    r"|of|the|a|an)\s+){0,3}$", re.I)
_FIRST_PERSON_RE = re.compile(r"\b(?:i|my|we|our|me|mine|i'm|i've|i'd)\b", re.I)
# In a yes/no question, an identifier is the setting: "Form 1040", "the 2015 Ford Focus".
_ID_NOUN_RE = re.compile(r"\b(?:form|model|series|version)\s*#?\s*$", re.I)
_DETERMINER_RE = re.compile(r"(?:^|\b(?:the|a|an|my|our|your|his|her|their|this|that|these"
                            r"|those|" + "|".join(_AUX) + r"))\s*$", re.I)
_NEXT_WORD_RE = re.compile(r"[\s-]*([A-Za-z][\w'-]*)")


def _first_word(clause: str) -> str:
    words = re.findall(r"[\w']+", clause.lower())
    while words and words[0] in _LEAD:
        words = words[1:]
    return words[0] if words else ""


def _asked_from(clauses: list[str], sentence: str) -> int:
    """The index of the first clause of `sentence` that asks a yes/no question (the clauses
    before it are the setting), or len(clauses) if none does."""
    for i, clause in enumerate(clauses):
        if _first_word(clause) in _AUX:
            return i
    wh = any(_first_word(c) in _WH for c in clauses)
    # "The warranty is 3 years?", "2 or 5 years?": a statement asked as a question.
    return 0 if sentence.rstrip().endswith(("?", "？")) and not wh else len(clauses)


def _located(clause: str) -> list[tuple[int, int, Quantity | When]]:
    """The values of `clause` with where they stand in it, in order: each at a whole-word
    occurrence of its text that no other value holds ("2 days" is not inside "322 days"). A
    value whose text the reader changed ("5kg" read as "5 kg") is at (-1, -1): it is not
    found, so it is asked."""
    found = read(clause)
    out: list[tuple[int, int, Quantity | When]] = []
    for value in (*found.whens, *found.quantities):
        pattern = re.compile(r"(?<![\w.,])" + re.escape(value.text) + r"(?!\w)")
        free = (m for m in pattern.finditer(clause)
                if not any(m.start() < end and start < m.end() for start, end, _ in out))
        match = next(free, None)
        out.append((match.start(), match.end(), value) if match else (-1, -1, value))
    return sorted(out, key=lambda item: item[0])


def _linked(clause: str, located: list[tuple[int, int, Quantity | When]]) -> set[int]:
    """The indices in `located` of values joined to a neighbour as alternatives or a span."""
    out = set()
    for i in range(len(located) - 1):
        end, start = located[i][1], located[i + 1][0]
        gap = clause[end:start] if 0 <= end <= start else ""
        if _LINK_RE.fullmatch(gap) and _JOINS_RE.search(gap):
            out.update((i, i + 1))
    return out


def _predicate(clause: str, start: int) -> bool:
    """Whether the value at `start` is what the clause says of something not the user's."""
    before = clause[:max(start, 0)]
    return bool(_PREDICATE_RE.search(before)) and not _FIRST_PERSON_RE.search(before)


def _identifier(clause: str, start: int, end: int, value: Quantity | When) -> bool:
    """A bare number naming a thing, not a measure: after "form", "model", "series" or
    "version", or a model year between a determiner and a name ("the 2015 Ford Focus")."""
    if not isinstance(value, Quantity) or value.unit is not None or start < 0:
        return False
    before, after = clause[:start], clause[end:]
    if _ID_NOUN_RE.search(before):
        return True
    following = _NEXT_WORD_RE.match(after)
    name = following.group(1).lower() if following else ""
    return (_year_like(value) and bool(_DETERMINER_RE.search(before)) and bool(name)
            and name not in STOPWORDS and name.capitalize() not in MONTHS
            and name not in _UNIT_WORDS)


def question_values(question: str) -> tuple[list[Quantity | When], list[Quantity | When]]:
    """(the values `question` gives as its setting, the values it asks about), see the module
    docstring. A value the reader cannot read plainly is never a setting."""
    sentences = [s for s in (m.group().strip() for m in _SENTENCE_RE.finditer(question)) if s]
    confirm = any(_BACK_RE.match(s) for s in sentences)
    settings: list[Quantity | When] = []
    asked: list[Quantity | When] = []
    for sentence in sentences:
        clauses = [c for c in _CLAUSE_RE.split(sentence) if c.strip()]
        whole = (confirm or bool(_REPORTED_RE.search(sentence))
                 or any(_TAG_RE.match(c.strip()) for c in clauses[1:]))
        first = _asked_from(clauses, sentence)
        for i, clause in enumerate(clauses):
            located = _located(clause)
            linked = _linked(clause, located)
            indirect = bool(_INDIRECT_RE.search(clause))
            for j, (start, end, value) in enumerate(located):
                in_question = ((i >= first or indirect)
                               and not _identifier(clause, start, end, value))
                said = j in linked or _predicate(clause, start)
                if whole or in_question or said or start < 0 or not _plain(value):
                    asked.append(value)
                else:
                    settings.append(value)
    return settings, asked


# --- values: plain, the same, rivals ----------------------------------------------------------

def _plain(value: Quantity | When) -> bool:
    """Whether the reader read `value` from plain writing: a date, or an exact number in digits
    (not "nineteen eighty-five", "the 1980s", "5th", "about 30", "up to 20 kg")."""
    if isinstance(value, When):
        return value.kind == "date"
    return (value.point and not value.vague and not value.approx
            and bool(_PLAIN_RE.match(value.text)))


def _year_like(q: Quantity) -> bool:
    """A bare four-digit whole number that may be a year ("2006 Chevy"), not a count."""
    return (q.unit is None and bool(_YEAR_RE.fullmatch(q.text))
            and _YEARS[0] <= q.value <= _YEARS[1])


def _unit_key(q: Quantity) -> tuple[str | None, str]:
    """The unit as written, where the reader's unit joins two: °F and °C are both "degree",
    "lb" and "£" both "gbp"."""
    rest = q.text.lower()
    if q.unit == "degree":
        return q.unit, "f" if re.search(r"f", rest) else "c" if re.search(r"c", rest) else ""
    if q.unit == "gbp":
        return q.unit, "lb" if re.search(r"lb", rest) else "£" if "£" in rest else rest[-1:]
    return q.unit, ""


def _same(value: Quantity | When, other: Quantity | When) -> bool:
    """The same value in the same kind and unit: a number against a number, a date against a
    date (every part equal)."""
    if isinstance(value, When) or isinstance(other, When):
        return (isinstance(value, When) and isinstance(other, When) and value.kind == other.kind
                and value.value == other.value)
    return value.value == other.value and _unit_key(value) == _unit_key(other)


def _dimension(unit: str) -> set[int]:
    return {i for i, group in enumerate(_DIMENSIONS) if unit in group} or {hash(unit)}


def _maybe_year(q: Quantity) -> bool:
    """A bare number that may be a year: "2006", the decade "1980s", or words the reader may
    have misread ("nineteen seventy-eight")."""
    return q.unit is None and (_year_like(q) or bool(_DECADE_RE.fullmatch(q.text)) or (
        not q.text[:1].isdigit() and len(re.split(r"[\s-]+", q.text.strip())) >= 2))


def _comparable(value: Quantity | When, other: Quantity | When) -> bool:
    """Whether `other`, in a document, could state `value` in some form: a date and a date, or
    a year; a year and a year (in digits, words or a decade); a count and a count or a number
    with a unit; a number with a unit and one of its dimension or a bare count."""
    if isinstance(value, When) or isinstance(other, When):
        date, rest = (value, other) if isinstance(value, When) else (other, value)
        if isinstance(rest, When):
            return date.kind == rest.kind
        return date.kind == "date" and date.value[0] is not None and _maybe_year(rest)
    if value.unit is None:
        if _year_like(value):
            return _maybe_year(other)
        return not (_plain(other) and _year_like(other))
    if other.unit is None:
        return not _maybe_year(other)
    return bool(_dimension(value.unit) & _dimension(other.unit))


def _rivals(value: Quantity | When, other: Quantity | When) -> bool:
    """Whether `other` could be `value` in another form and is not the same value; a value
    read from words or a decade is never known to be the same."""
    if not _comparable(value, other):
        return False
    if isinstance(value, When) and isinstance(other, When):
        # A date stating fewer parts ("May 2020" / "May 1, 2020") states no other date.
        return any(a is not None and b is not None and a != b
                   for a, b in zip(value.value, other.value, strict=True))
    if isinstance(value, When) or isinstance(other, When):
        date, year = (value, other) if isinstance(value, When) else (other, value)
        return not _plain(year) or date.value[0] != year.value
    return not (_plain(other) and _same(value, other))


def _values(found) -> list[Quantity | When]:
    return [*found.whens, *found.quantities]


def _about(line: str, terms: set[str]) -> bool:
    """Whether a document sentence is about what the claim is about: it shares a content word
    with it that is not a number or a unit ("trial", not "days")."""
    return bool({t for t in content_terms(line) & terms
                 if not t[0].isdigit() and t not in _UNIT_WORDS})


def conflicting_value(specific: Quantity | When, claim: str, context: str) -> bool:
    """Whether the documents state a value that rivals the claim's `specific` (`_rivals`: it
    could be the same thing in another form and is not the same value), in a sentence about
    what the claim is about (`_about`; any sentence for a claim that names nothing but its
    value), and that the claim does not state itself (its "5 seconds" in "on a 2014 Mazda 3,
    hold the knob for 5 seconds")."""
    body = claim_body(claim)
    terms = content_terms(body)
    # A claim that names nothing but its value ("It is 30 days.") is about whatever the
    # documents give a value of that kind for: every sentence may rival it.
    named = any(not t[0].isdigit() and t not in _UNIT_WORDS for t in terms)
    own = _values(read(body))
    for line in context.splitlines():
        if named and not _about(line, terms):
            continue
        for other in _values(read(line)):
            if _rivals(specific, other) and not any(_same(other, mine) for mine in own):
                return True
    return False


def _by_description(claim: str) -> dict[str, Quantity | When]:
    """The claim's specifics by the description the support check gives them ("number 2006",
    "date May 1")."""
    found = read(claim_body(claim))
    out: dict[str, Quantity | When] = {f"{w.kind} {w.text}": w for w in found.whens}
    out.update({f"{_kind(q)} {q.text}": q for q in found.quantities})
    return out


def _setting(value: Quantity | When, settings: Iterable[Quantity | When]) -> bool:
    return _plain(value) and any(_same(value, s) for s in settings)


def premises(claim: str, missing: Sequence[str], question: str, context: str) -> tuple[str, ...]:
    """The specifics of `missing` (as the support check describes them, "number 2006") that
    are the user's setting: numbers and dates (PREMISE_KINDS) that the question gives as its
    setting (`question_values`) in the same form (`_same`), and that no value of the documents
    (`context`, their text only) rivals (`conflicting_value`). Empty without a question."""
    if not missing or not question.strip():
        return ()
    settings, _ = question_values(question)
    if not settings:
        return ()
    specifics = _by_description(claim)
    return tuple(m for m in missing
                 if m.split(" ", 1)[0] in PREMISE_KINDS and m in specifics
                 and _setting(specifics[m], settings)
                 and not conflicting_value(specifics[m], claim, context))
