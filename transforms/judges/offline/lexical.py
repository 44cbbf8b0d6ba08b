"""Lexical heuristics for the offline judge: claim-versus-context labels.

The offline judge has no network and no model, so this module (reading text through `tokens.py`)
is its whole reasoning: word overlap with light normalisation (stems, numbers, times, dates,
camelCase keys of JSON records), content words, numbers and names found nowhere in the text, and
a few contradiction cues (numbers, dates, negation, antonyms), combined into a probability that
the claim is unsupported (`verify_scored`). Everything is a pure function of its arguments and
uses the standard library only, so a verdict can be reproduced byte for byte when an audit is
replayed. Claim splitting and kinds are in :mod:`rt4chart.transforms.judges.offline.claims`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import NamedTuple

from rt4chart.transforms.judges.offline.tokens import (
    _STOPWORDS,
    _is_content,
    _Sent,
    _sentences,
    _stem,
    _Tok,
    _tokenize,
)

# Support thresholds (from the earlier tuning on RAGTruth): which sentences are quoted.
ENT_SINGLE = 0.75  # coverage at which one sentence alone is quoted as the support
ENT_UNION = 0.5  # weighted coverage the best union of sentences must reach for ENT
TOPIC = 0.5  # coverage at which a sentence is "about" the claim, a precondition for CON
NEGATION_TOPIC = 0.8  # negation cues are noisy; require a closer match before trusting them
UNION_SIZE = 3
# The claim's p_unsupported: a logistic function of the features of `_analyse`, fitted on the
# "dev" part of the bundled RAGTruth records (split_of in rt4chart.pipeline.eval.datasets) by
# maximum
# likelihood of the answer labels under p_hallucinated = 1 - prod(1 - p_claim), L2 1.0. Hence
# small claim p's: an answer compounds them. P_THRESHOLD maximises answer-level F1 on "dev".
P_THRESHOLD = 0.12  # below it the claim is ENT
P_EMPTY = 0.5  # a claim with no content word: nothing to check
MIN_SUPPORT = 0.2  # ENT also needs this much weighted coverage by its quoted support
FORCE_CON = ("num", "date")  # conflict kinds that make a claim CON whatever its score
BIAS = -5.65
COEF = {"uncovered": 1.27, "uncovered1": 1.51, "novel": 0.38, "novel_facts": 1.44,
        "clash": 0.07, "hedge": 0.18}
LONG_QUOTE = 300  # quote a part of sentences longer than this (JSON records have no full stops)

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
# Speculation and evaluation: what a generator adds beyond its sources.
_HEDGES = frozenset(
    """likely probably possibly perhaps may might could seem seems appear appears suggest suggests
    overall popular ideal perfect great excellent delicious known recommend recommended""".split()
)
_LABEL_WORDS = frozenset("step passage no number part chapter page".split())

_PART_RE = re.compile(r"[,;]\s+")


def _weights(claim: tuple[_Tok, ...], sents: list[_Sent]) -> dict[str, float]:
    """Numbers, dates, names and long words weigh more; so do terms rare in the context."""
    df = Counter(term for s in sents for term in s.terms)
    weights: dict[str, float] = {}
    labels = {claim[i].term for i in range(1, len(claim))
              if claim[i].kind == "num" and claim[i - 1].low in _LABEL_WORDS}
    for tok in filter(_is_content, claim):
        if tok.term in labels:  # "passage 2", "step 3": a reference, not a fact
            continue
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


def _quantity_kind(term: str) -> str:
    if ":" in term:
        return "time"
    return "year" if len(term) == 4 and term.isdigit() else "amount"


def _number_conflict(claim: tuple[_Tok, ...], sent: _Sent, text_terms: frozenset[str]) -> bool:
    """A claim number absent from the text, facing another number in the same slot."""
    mine = _quantities(claim)
    for i in mine:
        term = claim[i].term
        if term in text_terms:
            continue
        # Compare years with years, times of day with times, amounts with amounts.
        others = [j for j in _quantities(sent.toks)
                  if sent.toks[j].term != term and _quantity_kind(sent.toks[j].term)
                  == _quantity_kind(term)]
        if any(_neighbours(claim, i) & _neighbours(sent.toks, j) for j in others):
            return True
        # A time of day facing other times of day on the same topic (opening hours).
        if ":" in term and any(":" in sent.toks[j].term for j in others):
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
              coverage: float) -> str:
    """The kind of disagreement: "num", "date", "antonym", "negation", or "" for none."""
    if _number_conflict(claim, sent, text_terms):
        return "num"
    if _date_conflict(claim, sent, text_terms):
        return "date"
    if _antonym_conflict(claim, sent):
        return "antonym"
    shared = {t.term for t in claim if _is_content(t)} & sent.terms
    if coverage >= NEGATION_TOPIC and _negated(claim, shared) != _negated(sent.toks, shared):
        return "negation"
    return ""


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


class _Analysis(NamedTuple):
    support: list[str]  # quotes of the best conflict-free support (empty if none)
    clash: list[str]  # quote of the sentence on topic that disagrees most (empty if none)
    forced: bool  # the disagreement is of a kind in FORCE_CON
    features: dict[str, float]
    clash_topic: float = 0.0  # how much of the claim's topic the disagreeing sentence covers
    support_cover: float = 0.0  # how much of the claim the conflict-free support covers


def _analyse(claim: tuple[_Tok, ...], text: str, sents: list[_Sent],
             pool: list[int]) -> _Analysis | None:
    """Support, conflict and the features of the claim's score; None without content words."""
    weights = _weights(claim, sents)
    if not weights or not pool:
        return None
    credits = [_credits(weights, s) for s in sents]
    total = sum(weights.values())
    cover = {i: sum(weights[t] * c for t, c in credits[i].items()) / total for i in pool}
    text_terms = frozenset(t for s in sents for t in s.terms)
    # Topic is judged without the claim's numbers and dates missing from the text: those are
    # what a conflict is about, and they would otherwise hide the sentence that disagrees.
    topic_w = {t: w for t, w in weights.items() if t in text_terms or not _is_fact(t)}
    topic = {i: sum(w * credits[i].get(t, 0.0) for t, w in topic_w.items())
             / (sum(topic_w.values()) or 1.0) for i in pool}
    kinds = {i: _conflict(claim, sents[i], text_terms, topic[i]) for i in pool
             if topic[i] >= TOPIC}
    clashing = {i: k for i, k in kinds.items() if k}
    calm = [i for i in pool if i not in clashing]
    score, chosen = _best_union(weights, credits, calm)
    support: list[str] = []
    if chosen:
        keep = chosen[:1] if cover[chosen[0]] >= ENT_SINGLE else sorted(chosen)
        support = [_quote(text, sents[i], set(credits[i])) for i in keep]
    clash: list[str] = []
    if clashing:
        worst = max(clashing, key=lambda i: (topic[i], -i))
        clash = [_quote(text, sents[worst], set(credits[worst]))]
    # Claim terms found nowhere in the text, not even as a shared long prefix.
    seen = {t for c in credits for t in c}
    novel = [t for t in weights if t not in seen]
    caps = {t.term for t in claim if t.cap and t.kind == "word"}
    hard = any(k in ("num", "date") for k in clashing.values())
    features = {
        "uncovered1": 1.0 - (cover[chosen[0]] if chosen else 0.0),
        "uncovered": 1.0 - score,
        "novel_frac": sum(weights[t] for t in novel) / total,
        "novel": float(len(novel)),
        "novel_facts": float(sum(_is_fact(t) for t in novel)),
        "novel_names": float(sum(t in caps for t in novel)),
        "clash_hard": float(hard),
        "clash_soft": float(bool(clashing) and not hard),
        "clash": float(bool(clashing)),
        "size": math.log1p(len(weights)),
        "hedge": float(any(t.low in _HEDGES for t in claim)),
    }
    forced = any(k in FORCE_CON for k in clashing.values())
    clash_topic = max((topic[i] for i in clashing), default=0.0)
    return _Analysis(support, clash, forced, features, clash_topic, score if chosen else 0.0)


def _plain_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[^\W_]+", text.lower()) if w.isdigit() or len(w) >= 3}


def _shares_word(claim: str, quotes: list[str]) -> bool:
    """Whether a quote shares a plain word (or a 4-letter stem of a 5+ letter word) with the
    claim, without splitting camelCase: the evidence check an ENT or CON must pass."""
    mine = _plain_words(claim) - _STOPWORDS
    return any(w in mine or (len(w) >= 5 and any(m[:4] == w[:4] for m in mine))
               for q in quotes for w in _plain_words(q) - _STOPWORDS)


def _label(claim: str, toks: tuple[_Tok, ...], text: str, sents: list[_Sent],
           pool: list[int]) -> tuple[str, list[str], float]:
    found = _analyse(toks, text, sents, pool)
    if found is None:
        return "NIC", [], P_EMPTY
    p = _p_unsupported(found.features)
    if found.support and not _shares_word(claim, found.support):
        found = found._replace(support=[])  # e.g. only a camelCase key matched: no evidence
    f = found.features
    enough = 1.0 - f["uncovered"] >= MIN_SUPPORT
    # A sentence that disagrees and is at least as close to the claim as the support (or
    # disagrees on a number or date) outweighs the support: "X is not Y" against "X is Y".
    outweighed = bool(found.clash) and (found.forced
                                        or found.clash_topic >= found.support_cover)
    if p < P_THRESHOLD and enough and found.support and not outweighed:
        return "ENT", found.support, p
    p = max(p, P_THRESHOLD)
    if found.clash:
        return "CON", found.clash, p
    return "NIC", [], p


def _p_unsupported(features: dict[str, float]) -> float:
    z = BIAS + sum(COEF.get(k, 0.0) * v for k, v in features.items())
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def verify_scored(claim: str, text: str, hint: str | None = None
                  ) -> tuple[str, list[str], float]:
    """Label a claim against a context and score how likely it is unsupported.

    The score is a logistic function of the claim's best support (weighted content-word
    coverage by one sentence and by a union of up to three), of its content words, numbers and
    names found nowhere in the text, and of conflict cues (a number, a date, an antonym or a
    negation that disagrees with a sentence on the claim's topic). ENT when the score is below
    P_THRESHOLD, quoting the support; otherwise CON when a sentence on the topic disagrees
    (quoting it), else NIC.

    Args:
        claim: The claim to check.
        text: A window of context sentences, or the whole context.
        hint: Optional passage of `text` whose sentences are preferred as quotes when they
            support the claim as well as the whole text does; ignored when not in `text`.

    Returns:
        (label, quotes, p_unsupported): quotes are 1-3 exact substrings of `text` for ENT and
        CON and none for NIC; p_unsupported in [0, 1] is below P_THRESHOLD exactly for ENT.
    """
    toks = _tokenize(claim)
    sents = _sentences(text)
    label, quotes, p = _label(claim, toks, text, sents, list(range(len(sents))))
    found = text.find(hint.strip()) if hint and hint.strip() else -1
    if label == "ENT" and found >= 0:
        stop = found + len(hint.strip())
        near = [i for i, s in enumerate(sents) if s.start < stop and s.end > found]
        near_label, near_quotes, near_p = _label(claim, toks, text, sents, near)
        if near_label == "ENT" and near_p <= p + 1e-9:
            quotes = near_quotes
    return label, quotes, p


def verify(claim: str, text: str, hint: str | None = None) -> tuple[str, list[str]]:
    """`verify_scored` without the score: (label, quotes)."""
    label, quotes, _ = verify_scored(claim, text, hint)
    return label, quotes
