"""Named entities of a claim, and whether a text names them, however it writes them.

Part of the support check (`support.py`): "Acme Corp." / "ACME" / "Acme's", "U.S." / "US" /
"United States", "California" / `"state": "CA"`, "NASA" / "National Aeronautics and Space
Administration", "Wi-Fi" / `"WiFi"`, "Pennsylvanians" / "Pennsylvania". Also the text folding,
stemming and stopwords shared with `coverage.py`. Standard library only.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from rt4chart.transforms.text.quantities import UNITS
from rt4chart.transforms.text.words import DOTTED_RE, POSSESSIVE_RE, STOPWORDS, fold

# Titles and company suffixes that a source may leave out: "Acme" supports "Acme Corp.".
_AFFIXES = frozenset(
    """mr mrs ms miss dr prof professor sir dame st saint president vice senator sen rep
    representative gov governor mayor king queen prince princess lord lady judge justice general
    gen captain capt officer chief ceo coach inc corp corporation co ltd llc plc company group
    the of and de la du der van von del da di le""".split()
)
_CONNECTORS = frozenset("of the de la du der van von del da di le &".split())
_WORD_RE = re.compile(r"(?:[A-Z]\.){2,}|[^\W\d_][\w'’&]*")
# Acronyms of common nouns, not names.
_COMMON_ACRONYMS = frozenset(
    "TV TVs DIY PC OK FAQ ID AM PM USB GPS ATM PDF URL VIP BBQ DVD CD AC HVAC LED LCD SUV RV "
    "ASAP FYI AKA DNA RNA IQ PhD MD BC AD BCE CE ET PT EST PST GMT UTC".split())
_INITIAL_GAP_RE = re.compile(r"[.!?:;\n•*\"“”]|(?:^|\s)[-–—]\s")
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


@functools.cache
def _aliases() -> tuple[Mapping[str, frozenset[str]], Mapping[str, frozenset[str]]]:
    """{folded name: codes} (matched in upper case only: "IN", "OR", "ME" are also words) and
    {folded code: folded names}, of _ALIAS_PAIRS: built once, never changed."""
    codes: dict[str, set[str]] = {}
    names: dict[str, set[str]] = {}
    for code, name in (pair.split("=") for pair in _ALIAS_PAIRS.split()):
        codes.setdefault(name.replace("_", " ").lower(), set()).add(code)
        names.setdefault(code.lower(), set()).add(name.replace("_", " ").lower())
    return ({k: frozenset(v) for k, v in codes.items()},
            {k: frozenset(v) for k, v in names.items()})


def _is_initial(text: str, start: int, prev_end: int | None) -> bool:
    if prev_end is None:
        return True
    return bool(_INITIAL_GAP_RE.search(text[prev_end:start]))


@functools.lru_cache(maxsize=16384)  # an evidence sentence is read once per claim it supports
def _runs(text: str, connectors: frozenset[str] = _CONNECTORS
          ) -> tuple[tuple[tuple[str, bool], ...], ...]:
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
    return tuple(tuple(trimmed) for trimmed in map(_trim, runs) if trimmed)


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
        words = [POSSESSIVE_RE.sub("", w) for w, _ in run
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
    codes, names = _aliases()
    if any(text.has_code(code) for code in codes.get(joined, ())) or any(
            f" {alias} " in text.folded for alias in names.get(joined, ())):
        return True
    letters = DOTTED_RE.sub(lambda m: m.group().replace(".", ""), name).replace(" ", "")
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


def missing_entities(claim: str, evidence: str, known: str) -> list[str]:
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
