"""Lexical heuristics for the offline judge: claim splitting and claim-versus-context labels.

The offline judge has no network and no model, so this module is its whole reasoning: word
overlap with light normalisation, plus a few contradiction cues (numbers, dates, negation,
antonyms). Everything is a pure function of its arguments and uses the standard library only, so
a verdict can be reproduced byte for byte when an audit is replayed.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import NamedTuple

# Tuned on the even-hash half of the RAGTruth dev records (answer-level F1). Paraphrase keeps
# faithful answers well below full word coverage, hence the low union threshold.
ENT_SINGLE = 0.75  # coverage at which one sentence alone is quoted as the support
ENT_UNION = 0.5  # weighted coverage the best union of sentences must reach for ENT
TOPIC = 0.5  # coverage at which a sentence is "about" the claim, a precondition for CON
NEGATION_TOPIC = 0.8  # negation cues are noisy; require a closer match before trusting them
UNION_SIZE = 3
LONG_QUOTE = 300  # quote a part of sentences longer than this (JSON records have no full stops)

# Words that talk about the source rather than the world ("Based on the passages provided, ...")
# carry no checkable content; counting them would fail faithful answers.
_META_WORDS = frozenset(
    """based given provided passage passages article text context summary summarize information
    mention mentions mentioned state states stated sure here overall answer question""".split()
)
_STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just let me more most my myself no nor not of off on once only or other our
    ours ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up upon very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves may might must shall also however thus therefore etc via per st nd rd th s t
    said says according""".split()
) | _META_WORDS
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate("one two three four five six seven eight nine ten eleven twelve".split(),
                          start=1)
}
# Months and weekdays (full and abbreviated) mapped to "month:N" / "day:N".
_DATES = {
    name: f"{kind}:{i}"
    for kind, names in (
        ("month", "january,jan february,feb march,mar april,apr may june,jun july,jul august,aug "
                  "september,sep,sept october,oct november,nov december,dec"),
        ("day", "monday,mon tuesday,tue,tues wednesday,wed thursday,thu,thurs friday,fri "
                "saturday,sat sunday,sun"),
    )
    for i, group in enumerate(names.split(), start=1)
    for name in group.split(",")
}
# "May" is also a modal verb: only words like these before it make it a month.
_MAY_MONTH_CUES = frozenset("in of since until by early late mid last next this".split())
# Negative-polarity verbs count as negation: "avoid streaks" agrees with "no streaking".
_NEGATIONS = frozenset(
    """not no never without nor cannot none neither nobody nothing avoid prevent unable unlikely
    fail lack rather""".split()
)
_ANTONYM_PAIRS = tuple(pair.split("/") for pair in """increase/decrease increase/reduce rise/fall
    before/after more/less more/fewer higher/lower open/closed allowed/prohibited allowed/banned
    permitted/forbidden all/none only/also eligible/ineligible legal/illegal available/unavailable
    win/lose won/lost first/last minimum/maximum above/below early/late positive/negative
    include/exclude accept/reject true/false male/female largest/smallest best/worst
    cheap/expensive gain/loss success/failure guilty/innocent alive/dead""".split())
_LABEL_WORDS = frozenset("step passage no number part chapter page".split())
_AUXILIARIES = frozenset(
    "is are was were has have had will would can could does did do should may might must".split()
)

_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*|[^\W_]+(?:['’][^\W_]+)*")
# A sentence ends at . ! ? (plus closing quotes/brackets) before whitespace, or at a newline;
# not after a bare one- or two-digit number, which is a list marker ("4. Serve hot.").
_BOUNDARY_RE = re.compile(r"(?<!\b\d)(?<!\b\d\d)[.!?…]+[\"'”’)\]]*(?=\s)|\n")
_PART_RE = re.compile(r"[,;]\s+")
_BULLET_RE = re.compile(r"^\s*(?:[-*•·▪‣–—>]+|\(?\d{1,3}[.)]|\(?[a-z]\))\s+")
_CLAUSE_RE = re.compile(r"\s*;\s+|,?\s+(?:and|but|while|whereas)\s+")
_DOUBLE_END_RE = re.compile(r"([b-df-hj-km-np-rtv-y])\1$")


class _Tok(NamedTuple):
    term: str  # normalised form: stem, canonical number, "month:5" or "day:1"
    low: str  # lowercase surface form, used for stopwords and negation
    kind: str  # "num", "date" or "word"
    cap: bool  # capitalised and not sentence-initial: likely a name


class _Sent(NamedTuple):
    start: int
    end: int
    toks: tuple[_Tok, ...]
    terms: frozenset[str]  # content terms only


def _stem(word: str) -> str:
    """Strip possessives and common inflections; consistency matters more than linguistics."""
    word = word.removesuffix("'s")
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
    # Dropping a final "e" makes "base", "based" and "basing" meet.
    return word[:-1] if len(word) >= 3 and word.endswith("e") else word


def _norm_number(raw: str) -> str:
    """Canonical digits: "3,500" -> "3500", "3.50" -> "3.5", "4.0" -> "4", "07" -> "7"."""
    if len(raw) > 15:  # beyond float precision: compare the digits as written
        return raw.replace(",", "")
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return raw
    return str(int(value)) if value.is_integer() else str(value)


def _classify(raw: str, prev: str, nxt: str, first: bool) -> _Tok:
    low = raw.lower().replace("’", "'")
    cap = raw[:1].isupper() and not first
    if raw[:1].isdigit():
        return _Tok(_norm_number(raw), low, "num", False)
    if low in _NUMBER_WORDS:
        return _Tok(_NUMBER_WORDS[low], low, "num", False)
    # Only capitalised names count, so that "may", "march" and "sun" stay ordinary words.
    if raw[:1].isupper() and low in _DATES:
        if low != "may" or prev in _MAY_MONTH_CUES or nxt[:1].isdigit():
            return _Tok(_DATES[low], low, "date", True)
    return _Tok(_stem(low), low, "word", cap)


def _tokenize(text: str) -> tuple[_Tok, ...]:
    raws = ["", *(m.group() for m in _TOKEN_RE.finditer(text)), ""]  # padded for neighbours
    return tuple(_classify(raws[i], raws[i - 1].lower(), raws[i + 1], i == 1)
                 for i in range(1, len(raws) - 1))


def _is_content(tok: _Tok) -> bool:
    return tok.kind != "word" or (len(tok.low) > 1 and tok.low not in _STOPWORDS)


def _spans(text: str) -> list[tuple[int, int]]:
    """Sentence offsets in `text`, whitespace-trimmed, so text[start:end] is a valid quote."""
    cuts = [0, *(m.end() for m in _BOUNDARY_RE.finditer(text)), len(text)]
    spans = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        piece = text[lo:hi]
        start, end = lo + len(piece) - len(piece.lstrip()), lo + len(piece.rstrip())
        spans += [(start, end)] if end > start else []
    return spans


@functools.lru_cache(maxsize=128)
def _sentences(text: str) -> tuple[_Sent, ...]:
    # Every claim of a trace is checked against the same windows and context: parse each once.
    parsed = [(start, end, _tokenize(text[start:end])) for start, end in _spans(text)]
    return tuple(_Sent(start, end, toks, frozenset(t.term for t in toks if _is_content(t)))
                 for start, end, toks in parsed if toks)


def _weights(claim: tuple[_Tok, ...], sents: list[_Sent]) -> dict[str, float]:
    """Numbers, dates, names and long words weigh more; so do terms rare in the context."""
    df = Counter(term for s in sents for term in s.terms)
    weights: dict[str, float] = {}
    for tok in filter(_is_content, claim):
        base = 2.0 if tok.kind != "word" else 1.5 if tok.cap else 1.3 if len(tok.low) >= 8 else 1.0
        idf = 1.0 + 0.5 * math.log((len(sents) + 1) / (df[tok.term] + 1))
        weights[tok.term] = max(weights.get(tok.term, 0.0), base * idf)
    return weights


def _credits(weights: dict[str, float], sent: _Sent) -> dict[str, float]:
    """Per claim term, how well the sentence supports it (a shared long prefix is partial)."""
    prefixes = {t[:6] for t in sent.terms if len(t) >= 6 and not t[:1].isdigit()}
    full = {t: 1.0 for t in weights if t in sent.terms}
    return full | {t: 0.8 for t in weights if t not in full and len(t) >= 6 and t[:6] in prefixes}


def _best_union(weights: dict[str, float], credits: list[dict[str, float]],
                pool: list[int]) -> tuple[float, list[int]]:
    """Greedily add up to UNION_SIZE sentences; the first pick is the best single sentence."""
    have = dict.fromkeys(weights, 0.0)
    chosen: list[int] = []
    for _ in range(UNION_SIZE):
        gains = {i: sum(w * max(0.0, credits[i].get(t, 0.0) - have[t]) for t, w in weights.items())
                 for i in pool if i not in chosen}
        best = max(gains, key=lambda i: (gains[i], -i), default=None)
        if best is None or gains[best] <= 1e-9:
            break
        chosen.append(best)
        have = {t: max(v, credits[best].get(t, 0.0)) for t, v in have.items()}
    total = sum(weights.values())
    return sum(weights[t] * v for t, v in have.items()) / total, chosen


def _is_fact(term: str) -> bool:
    return term[:1].isdigit() or term.startswith(("month:", "day:"))


def _neighbours(toks: tuple[_Tok, ...], i: int) -> set[str]:
    return {t.term for t in toks[max(0, i - 3):i + 4] if t.kind == "word" and _is_content(t)}


def _quantities(toks: tuple[_Tok, ...]) -> list[int]:
    """Positions of numbers that state a quantity, not a list marker or a "passage 2" label."""
    return [i for i, t in enumerate(toks)
            if t.kind == "num" and i and toks[i - 1].low not in _LABEL_WORDS]


def _number_conflict(claim: tuple[_Tok, ...], sent: _Sent, text_terms: frozenset[str]) -> bool:
    """A claim number absent from the text, facing another number in the same slot."""
    mine = _quantities(claim)
    for i in mine:
        term = claim[i].term
        if term in text_terms:
            continue
        year = len(term) == 4  # compare years with years, amounts with amounts
        others = [j for j in _quantities(sent.toks)
                  if sent.toks[j].term != term and (len(sent.toks[j].term) == 4) == year]
        if any(_neighbours(claim, i) & _neighbours(sent.toks, j) for j in others):
            return True
        # One quantity on each side of a sentence on the same topic: the same slot, surely.
        if len(others) == 1 and len(mine) == 1 and claim[i].low[:1].isdigit():
            return True
    return False


def _date_conflict(claim: tuple[_Tok, ...], sent: _Sent, text_terms: frozenset[str]) -> bool:
    """A month (weekday) of the claim missing from the text, facing another month (weekday)."""
    kinds = {t.term.split(":")[0] for t in claim if t.kind == "date" and t.term not in text_terms}
    return any(t.split(":")[0] in kinds for t in sent.terms if ":" in t)


def _antonym_conflict(claim: tuple[_Tok, ...], sent: _Sent) -> bool:
    """One side uses a word, the other its opposite, and neither uses both."""
    mine, theirs = {t.term for t in claim}, {t.term for t in sent.toks}
    pairs = [(_stem(a), _stem(b)) for a, b in _ANTONYM_PAIRS]
    return any(x in mine and y in theirs and y not in mine and x not in theirs
               for a, b in pairs for x, y in ((a, b), (b, a)))


def _negated(toks: tuple[_Tok, ...], anchors: set[str]) -> bool:
    """A negation whose scope (the next three words) touches a shared content term."""
    return any((tok.low in _NEGATIONS or tok.low.endswith("n't"))
               and any(t.term in anchors for t in toks[i + 1:i + 4]) for i, tok in enumerate(toks))


def _conflict(claim: tuple[_Tok, ...], sent: _Sent, text_terms: frozenset[str],
              coverage: float) -> bool:
    shared = {t.term for t in claim if _is_content(t)} & sent.terms
    return (_number_conflict(claim, sent, text_terms) or _date_conflict(claim, sent, text_terms)
            or _antonym_conflict(claim, sent)
            or (coverage >= NEGATION_TOPIC
                and _negated(claim, shared) != _negated(sent.toks, shared)))


def _quote(text: str, sent: _Sent, terms: set[str]) -> str:
    """The sentence, or for a very long one the run of its comma-parts holding the matches."""
    if sent.end - sent.start <= LONG_QUOTE:
        return text[sent.start:sent.end]
    cuts = [sent.start, *(sent.start + m.end() for m in _PART_RE.finditer(
        text[sent.start:sent.end])), sent.end]
    hits = [(lo, hi) for lo, hi in zip(cuts, cuts[1:], strict=False)
            if terms & {t.term for t in _tokenize(text[lo:hi])}]
    # Part ends carry the ", " that separated them from the next part; drop it.
    return text[hits[0][0]:hits[-1][1]].rstrip().rstrip(",;") if hits else text[sent.start:sent.end]


def _label(claim: tuple[_Tok, ...], text: str, sents: list[_Sent],
           pool: list[int]) -> tuple[str, list[str]]:
    weights = _weights(claim, sents)
    if not weights or not pool:
        return "NIC", []
    credits = [_credits(weights, s) for s in sents]
    total = sum(weights.values())
    cover = {i: sum(weights[t] * c for t, c in credits[i].items()) / total for i in pool}
    text_terms = frozenset(t for s in sents for t in s.terms)
    # Topic is judged without the claim's numbers and dates missing from the text: those are
    # what a conflict is about, and they would otherwise hide the sentence that disagrees.
    topic_w = {t: w for t, w in weights.items() if t in text_terms or not _is_fact(t)}
    topic = {i: sum(w * credits[i].get(t, 0.0) for t, w in topic_w.items())
             / (sum(topic_w.values()) or 1.0) for i in pool}
    clashing = {i for i in pool if topic[i] >= TOPIC
                and _conflict(claim, sents[i], text_terms, topic[i])}
    calm = [i for i in pool if i not in clashing]
    score, chosen = _best_union(weights, credits, calm)
    if chosen and (cover[chosen[0]] >= ENT_SINGLE or score >= ENT_UNION):
        keep = chosen[:1] if cover[chosen[0]] >= ENT_SINGLE else sorted(chosen)
        return "ENT", [_quote(text, sents[i], set(credits[i])) for i in keep]
    if clashing:
        worst = max(clashing, key=lambda i: (topic[i], -i))
        return "CON", [_quote(text, sents[worst], set(credits[worst]))]
    return "NIC", []


def decompose_sentence(sentence: str) -> list[str]:
    """Split one answer sentence into self-contained claims.

    Conservative: the sentence is cut only at semicolons and at "and" / "but" / "while" /
    "whereas" when what follows starts a new clause (a subject then an auxiliary verb, as in
    "X is A and Y is B."). Words are never dropped, so negation, numbers, dates and modals stay.

    Args:
        sentence: One sentence of an answer, possibly with a list bullet or number.

    Returns:
        The claims, stripped of bullets and surrounding whitespace; never an empty string, and
        an empty list only when the sentence has no alphanumeric content.
    """
    body = _BULLET_RE.sub("", sentence, count=1).strip()
    if not any(ch.isalnum() for ch in body):
        return []
    parts, last = [], 0
    for match in _CLAUSE_RE.finditer(body):
        left, right = body[last:match.start()], body[match.end():]
        if ";" in match.group() or (len(left.split()) >= 3 and _starts_clause(right)):
            parts.append(left)
            last = match.end()
    parts.append(body[last:])
    claims = [p.strip().strip(",;:").strip() for p in parts]
    return [c for c in claims if any(ch.isalnum() for ch in c)] or [body]


def _starts_clause(words: str) -> bool:
    """Subject followed by an auxiliary within three words, e.g. "the staff are friendly"."""
    head = [w.lower().strip(",") for w in words.split()[:4]]
    if not head or head[0] in _AUXILIARIES:
        return False
    return any(w in _AUXILIARIES or w.endswith("n't") for w in head[1:])


def verify(claim: str, text: str, hint: str | None = None) -> tuple[str, list[str]]:
    """Label a claim against a context by word overlap and contradiction cues.

    ENT when one sentence (or a union of up to three) covers enough of the claim's weighted
    content words without a conflict cue; CON when a sentence on the claim's topic disagrees on
    a number, a date, negation or an antonym; NIC otherwise.

    Args:
        claim: The claim to check.
        text: A window of context sentences, or the whole context.
        hint: Optional passage of `text` to look at first; ignored when it is not in `text`.

    Returns:
        ("ENT" | "CON" | "NIC", quotes): 1-3 quotes that are exact substrings of `text` for ENT
        and CON, and no quotes for NIC.
    """
    toks = _tokenize(claim)
    sents = _sentences(text)
    everything = list(range(len(sents)))
    found = text.find(hint.strip()) if hint and hint.strip() else -1
    if found >= 0:
        stop = found + len(hint.strip())
        near = [i for i in everything if sents[i].start < stop and sents[i].end > found]
        label, quotes = _label(toks, text, sents, near)
        if label != "NIC":
            return label, quotes
    return _label(toks, text, sents, everything)
