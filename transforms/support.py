"""Support, not just presence: does the quoted evidence cover what the claim states precisely?

Grounding (`evidence.py`) makes sure a judge's quote is real and about the claim. A judge that
was talked into "supported" still quotes the context sentence closest to the claim: "The free
trial lasts 30 days" with the quote "The free trial lasts 14 days". This check compares the
claim's specifics with the evidence: numbers with their units, money, percentages, dates,
weekdays and times (however written, see `quantities.py`), named entities, and negation. An ENT
stands only if nothing is missing; the result names what is, for the claim row's note.

It is lenient where a faithful paraphrase differs: rounding ("33%" for 33.3%), "about 2,000"
for 1,950, case, possessives, hyphens and camelCase keys ("Wi-Fi" / `"WiFi"`), titles and
company suffixes ("Acme" for "Acme Corp."), acronyms ("NASA", "U.S."), a name the question or
context gave that the quoted sentence refers to by a pronoun (see `check_support`'s `context`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rt4chart.transforms.quantities import UNITS, Quantity, When, read, same_value

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just let me more most my myself no nor not of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves may might must shall however thus therefore etc via per yes okay ok please
    overall additionally also furthermore moreover finally first firstly second secondly lastly
    sure certainly here according based given ll ve re don doesn didn isn aren wasn weren
    won wouldn couldn shouldn hasn haven hadn""".split()
)
# Titles and company suffixes that a source may leave out: "Acme" supports "Acme Corp.".
_AFFIXES = frozenset(
    """mr mrs ms miss dr prof professor sir dame st saint president vice senator sen rep
    representative gov governor mayor king queen prince princess lord lady judge justice general
    gen captain capt officer chief ceo coach inc corp corporation co ltd llc plc company group
    the of and de la du der van von del da di le""".split()
)
_CONNECTORS = frozenset("of the de la du der van von del da di le &".split())
_WORD_RE = re.compile(r"(?:[A-Z]\.){2,}|[^\W\d_][\w'’&]*")
_DOTTED_RE = re.compile(r"\b(?:[A-Z]\.){2,}")
# Acronyms of common nouns, not names.
_COMMON_ACRONYMS = frozenset(
    "TV TVs DIY PC OK FAQ ID AM PM USB GPS ATM PDF URL VIP BBQ DVD CD AC HVAC LED LCD SUV RV "
    "ASAP FYI AKA DNA RNA IQ PhD MD BC AD BCE CE ET PT EST PST GMT UTC".split())
_INITIAL_GAP_RE = re.compile(r"[.!?:;\n•*\"“”]|(?:^|\s)[-–—]\s")
_CAMEL_RE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")
_POSSESSIVE_RE = re.compile(r"(?<=\w)['’]s\b|(?<=s)['’](?!\w)")
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
_DOUBLE_END_RE = re.compile(r"([b-df-hj-km-np-rtv-y])\1$")
# List markers and references to the sources are not facts about the world: "2. Rinse well
# (Passage 3, step 7)." claims nothing about the numbers 2, 3 or 7.
_MARKER_RE = re.compile(
    r"^\s*(?:[-*•·▪‣–—>+#]+|\(?\d{1,3}[.)]|\(?[a-z][.)]|step\s+\d+\s*[:.)-])\s*", re.I)
_REFERENCE_RE = re.compile(
    r"\b(?:passages?|documents?|docs?|sources?|articles?|references?|steps?|paragraphs?|pages?"
    r"|sections?|tips?|methods?|options?|points?)\s+#?\d+(?:\s*[:.]\s*\d+)?"
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
_LABEL_RE = re.compile(r"^[^:.!?\n]{1,40}:\s")
# Names written otherwise in records and articles: "California" / "CA", "U.S." / "United States".
_ALIAS_PAIRS = (
    "AL=Alabama AK=Alaska AZ=Arizona AR=Arkansas CA=California CO=Colorado CT=Connecticut "
    "DE=Delaware FL=Florida GA=Georgia HI=Hawaii ID=Idaho IL=Illinois IN=Indiana IA=Iowa "
    "KS=Kansas KY=Kentucky LA=Louisiana ME=Maine MD=Maryland MA=Massachusetts MI=Michigan "
    "MN=Minnesota MS=Mississippi MO=Missouri MT=Montana NE=Nebraska NV=Nevada NH=New_Hampshire "
    "NJ=New_Jersey NM=New_Mexico NY=New_York NC=North_Carolina ND=North_Dakota OH=Ohio "
    "OK=Oklahoma OR=Oregon PA=Pennsylvania RI=Rhode_Island SC=South_Carolina SD=South_Dakota "
    "TN=Tennessee TX=Texas UT=Utah VT=Vermont VA=Virginia WA=Washington WV=West_Virginia "
    "WI=Wisconsin WY=Wyoming DC=Washington_DC US=United_States US=USA US=America "
    "UK=United_Kingdom UK=Britain UK=Great_Britain EU=European_Union UN=United_Nations "
    "AB=Alberta BC=British_Columbia ON=Ontario QC=Quebec")
# Folded name -> codes (matched in upper case only: "IN", "OR", "ME" are also words).
_CODES: dict[str, set[str]] = {}
_NAMES: dict[str, set[str]] = {}
for _code, _name in (pair.split("=") for pair in _ALIAS_PAIRS.split()):
    _CODES.setdefault(_name.replace("_", " ").lower(), set()).add(_code)
    _NAMES.setdefault(_code.lower(), set()).add(_name.replace("_", " ").lower())


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


def stem(word: str) -> str:
    """Strip plural and common inflections (lower-case input): "extended" -> "extend"."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif word.endswith(("sses", "xes", "zes", "ches", "shes")):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) > 4 and word.endswith("ing"):
        word = _DOUBLE_END_RE.sub(r"\1", word[:-3])
    elif len(word) > 3 and word.endswith("ed") and not word.endswith("eed"):
        word = _DOUBLE_END_RE.sub(r"\1", word[:-2])
    return word[:-1] if len(word) >= 3 and word.endswith("e") else word


def fold(text: str) -> str:
    """Lower-case words and digits separated by single spaces; possessives dropped; camelCase,
    snake_case, hyphens and letter/digit boundaries split ("RestaurantsTakeOut" -> "restaurants
    take out", "Acme's" -> "acme")."""
    text = _DOTTED_RE.sub(lambda m: m.group().replace(".", ""), text)
    text = _CAMEL_RE.sub(" ", _POSSESSIVE_RE.sub("", text))
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def content_terms(text: str) -> set[str]:
    """Stems of the words of `text` that are not stopwords or single letters."""
    return {stem(w) for w in fold(text).split() if len(w) > 1 and w not in STOPWORDS
            and not w.isdigit()}


# --- numbers, dates and times -------------------------------------------------------------


def _unit_fits(claim: Quantity, other: Quantity) -> bool:
    return claim.unit is None or other.unit is None or claim.unit == other.unit


def _years(whens: Iterable[When]) -> list[Quantity]:
    return [Quantity(float(w.value[0]), None, 1.0, False, w.text)
            for w in whens if w.kind == "date" and w.value[0] is not None]


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
    numbers = [*theirs.quantities, *_years(theirs.whens)]
    missing = [f"{_kind(q)} {q.text}" for q in mine.quantities
               if not _quantity_covered(q, [*numbers, *_hours(theirs.whens)])]
    whens = [w for w in mine.whens if not _when_covered(w, list(theirs.whens), numbers)]
    for kind, spread in (("weekday", 2), ("time", 3)):
        # A schedule over several days ("Monday through Saturday") or with several opening
        # times is stated line by line in a record: one of them quoted is enough.
        group = [w for w in mine.whens if w.kind == kind]
        if len(group) >= spread and len([w for w in whens if w.kind == kind]) < len(group):
            whens = [w for w in whens if w.kind != kind]
    return missing + [f"{w.kind} {w.text}" for w in whens]


def _kind(q: Quantity) -> str:
    return {"%": "percentage", "usd": "amount", "eur": "amount", "gbp": "amount",
            "yen": "amount"}.get(q.unit or "", "number")


# --- named entities ---------------------------------------------------------------------


def _is_initial(text: str, start: int, prev_end: int | None) -> bool:
    if prev_end is None:
        return True
    return bool(_INITIAL_GAP_RE.search(text[prev_end:start]))


def _runs(text: str, connectors: frozenset[str] = _CONNECTORS) -> list[list[tuple[str, bool]]]:
    """Runs of capitalised words (connectors like "of" inside), each word with whether it
    starts a sentence, a line or a list item."""
    runs: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] = []
    prev_end = None
    for match in _WORD_RE.finditer(text):
        word = match.group()
        initial = _is_initial(text, match.start(), prev_end)
        adjacent = prev_end is not None and text[prev_end:match.start()].strip() in ("", "-")
        if word[0].isupper():
            if not (current and adjacent) or initial:
                current = []
                runs.append(current)
            current.append((word, initial))
        elif current and adjacent and word.lower() in connectors:
            current.append((word, False))
        else:
            current = []
        prev_end = match.end()
    return [trimmed for trimmed in map(_trim, runs) if trimmed]


def _common(word: str) -> bool:
    folded = fold(word).split()
    return (not folded or folded[0] in STOPWORDS or folded[0] in _CONNECTORS
            or word.lower() in UNITS or word.lower() in ("am", "pm"))


def _trim(run: list[tuple[str, bool]]) -> list[tuple[str, bool]]:
    # A capitalised stopword at either end ("The", "However", "I'm") is not part of the name.
    while run and (_common(run[-1][0]) or not run[-1][0][0].isupper()):
        run = run[:-1]
    while run and _common(run[0][0]):
        run = run[1:]
    return run


def entities(text: str, joined_by_and: bool = False) -> list[str]:
    """Named entities: runs of capitalised words, except a single capitalised word that starts
    a sentence ("Restaurants ..."), a leading label ("Tip:"), month and weekday names (read as
    dates), units ("Fahrenheit") and stopwords. With `joined_by_and`, "and" joins names too
    ("Space and Science Administration")."""
    text = _LABEL_RE.sub(lambda m: " " * len(m.group()), text, count=1)
    found = []
    for run in _runs(text, _CONNECTORS | {"and"} if joined_by_and else _CONNECTORS):
        words = [_POSSESSIVE_RE.sub("", w) for w, _ in run
                 if w.strip(".") not in _DATE_NAMES | _COMMON_ACRONYMS]
        if not words or len(words) == 1 and run[0][1] and not _acronym(words[0]):
            continue
        name = " ".join(words)
        if name not in found and not all(t in _AFFIXES for t in fold(name).split()):
            found.append(name)
    return found


_DATE_NAMES = frozenset(
    "January February March April May June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday Mondays Tuesdays Wednesdays "
    "Thursdays Fridays Saturdays Sundays".split())


def _acronym(word: str) -> bool:
    letters = word.replace(".", "")
    return (2 <= len(letters) <= 6 and letters.isalpha() and letters[0].isupper()
            and sum(c.isupper() for c in letters) >= max(2, len(letters) - 2))


def _capitals(word: str) -> str:
    return "".join(c for c in word if c.isupper())


class _Text:
    """Evidence prepared once for every entity of a claim."""

    def __init__(self, text: str):
        self.original = text
        self.words = set(fold(text).split())
        self.folded = " " + " ".join(fold(text).split()) + " "
        self.initials = set()  # acronyms it spells out: "National Aeronautics and ..." -> NASA
        for run in _runs(text, _CONNECTORS | {"and"}):
            words = [w for w, _ in run if w.lower() not in _CONNECTORS | {"and"}]
            if len(words) >= 2:
                self.initials.add("".join(w[0] for w in words))

    def has_word(self, token: str) -> bool:
        """The word, a plural, or a form sharing all but its last letters ("Pennsylvanians",
        "Canadian" for "Canada")."""
        if token in self.words or token + "s" in self.words or token + "es" in self.words:
            return True
        stem_len = max(5, len(token) - 2)
        return len(token) >= 5 and any(
            w[:stem_len] == token[:stem_len] and abs(len(w) - len(token)) <= 3 for w in self.words)

    def has_code(self, code: str) -> bool:
        """An acronym in capitals, dotted or plural: "NIC", "N.I.C.", "NICs"."""
        dotted = r"\.?".join(map(re.escape, code))
        return bool(re.search(rf"\b(?:{re.escape(code)}|{dotted}\.?)s?(?!\w)", self.original))


def _entity_covered(name: str, text: _Text) -> bool:
    tokens = fold(name).split()
    core = [t for t in tokens if t not in _AFFIXES] or tokens
    found = [text.has_word(t) for t in core]
    # The head and all but one other word: "US Senate" / "the Senate", "Barack Obama" / "Obama",
    # a misspelt word of a long name; "Manchester United" still needs "United".
    if found[-1] and found.count(False) <= (1 if len(core) >= 2 else 0):
        return True
    if f" {''.join(tokens)} " in text.folded:
        return True  # "Wi-Fi" / "WiFi"
    joined = " ".join(tokens)
    if any(text.has_code(code) for code in _CODES.get(joined, ())) or any(
            f" {alias} " in text.folded for alias in _NAMES.get(joined, ())):
        return True
    letters = _DOTTED_RE.sub(lambda m: m.group().replace(".", ""), name).replace(" ", "")
    if _acronym(letters) and letters.rstrip("s") in text.initials:
        return True
    words = [w for w in name.split() if w.lower() not in _CONNECTORS | {"and"}]
    return len(words) >= 2 and text.has_code("".join(w[0] for w in words))


def _spelled_out(names: list[str]) -> list[str]:
    """Drop an acronym the claim itself spells out: "American Pharmacists Association (APhA)"
    is checked once, by its long name."""
    initials = {"".join(w[0] for w in n.split() if w.lower() not in _CONNECTORS | {"and"})
                for n in names if len(n.split()) >= 2}
    return [n for n in names if not (_acronym(n.replace(".", "")) and _capitals(n) in initials)]


def _missing_entities(claim: str, evidence: str, known: str) -> list[str]:
    mine, theirs = _spelled_out(entities(claim)), _Text(evidence)
    for name in entities(claim, joined_by_and=True):
        # "National Aeronautics and Space Administration" read as one name, covered by "NASA".
        if " and " in name and _entity_covered(name, theirs):
            mine = [m for m in mine if m not in name]
    missing = [name for name in mine if not _entity_covered(name, theirs)]
    if missing and known:
        around = _Text(known)
        missing = [name for name in missing if not _entity_covered(name, around)]
    return [f"entity {name}" for name in missing]


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
    theirs = [c for text in texts for c in _clauses(text.replace('"', " "), commas=True)]
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
    body, joined = claim_body(claim), "\n".join(evidence)
    missing = _missing_specifics(body, joined)
    missing += _missing_entities(read(body).rest, joined, context)
    missing += _missing_polarity(body, evidence)
    return Support(tuple(missing))
