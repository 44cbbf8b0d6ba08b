"""A second gold judge: RAGTruth's labels, decomposed and quoted as a careful model would.

Written apart from ``gold_judge.py`` (it imports neither that module nor rt4chart), so that the
pipeline is never measured against one fake only. It receives what any custom judge receives
and finds the RAGTruth response by the exact answer text.

- ``decompose``: a sentence that asserts nothing (courtesy, offers, refusals, lead-ins ending in
  a colon, headings, bare lists of sources, remarks about the passages) gets no claim; a
  sentence saying the sources lack something ("None mentioned in the passages.") is one
  ``absence`` claim; "Passage 2 says X" is one ``source`` claim; anything else is, with
  ``cut=sentence`` (default), one claim per clause (clauses cut only at semicolons and at
  ", but" / ", while" / ", whereas"), or with ``cut=gold``, one claim per gold span clipped to
  the sentence plus one for the rest. A sentence that holds a gold span always gets claims: the
  judge knows it asserts something. Every claim's fragments are its own words, verbatim.
- labels: a claim overlapping a gold span of its response is CON for a "Conflict" span, NIC for
  a "Baseless" one, else ENT. ENT and CON quote the single best line or sentence of the given
  text (the best key line of a JSON record), verbatim; NIC quotes nothing. ``verify_local``
  answers NIC when no line of its window shares a word with the claim.
- ``verify_absence``: ENT when the sentence has no gold span (the context lacks it indeed).

Options: ``data`` (a RAGTruth directory, default /work/shared/data/ragtruth), ``cut``
(``sentence`` or ``gold``).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA = Path("/work/shared/data/ragtruth")
CUTS = ("sentence", "gold")

_COMMON = frozenset("""a an the and or but so of to in on at by for from with as is are was were be
    been being it its this that these those there here they them their he she his her we our you
    your i me my not no do does did has have had will would can could may might should must
    shall than then also just very about into over such which who whom whose what when where
    how why all any some each both either neither more most other only own same too""".split())
# Words about the answer or its sources, not about the world.
_ABOUT = frozenset("""passage passages document documents doc docs source sources article text
    context record information info data answer answers question questions response summary
    reference references provided given mentioned mention mentions states stated say says said
    based according following above below necessary sufficient relevant specific details detail
    available enough further additional""".split())
_COURTESY = re.compile(
    r"^(?:hi|hello|hey|dear|sure|certainly|of course|absolutely|okay|ok|great question"
    r"|good question|thanks|thank you|you're welcome|i hope|hope this|glad|happy to)\b"
    r"|\b(?:let me know|feel free|don't hesitate|do not hesitate|any (?:other|further|more)"
    r" questions|anything else|hope (?:this|that|it) helps|happy to help|glad to help)\b", re.I)
_REFUSAL = re.compile(
    r"\b(?:unable to|not able to|cannot|can't|can not|could not|impossible to|not possible to)"
    r"\s+(?:\w+\s+){0,3}(?:answer|determine|provide|tell|say|find|give|know|confirm|identify)",
    re.I)
_REPLIED = re.compile(r"\b(?:would have|i would) (?:replied|answered|responded|said)\b", re.I)
# The answer describing itself: "this overview is solely based on the structured data".
_SELF = re.compile(
    r"\b(?:this|my|the above|the following) (?:overview|summary|answer|response|description"
    r"|reply|list)\b.{0,40}\b(?:based on|derived from|limited to|drawn from|taken from)\b", re.I)
# Pointing the reader elsewhere, with no fact of its own: "it may be best to consult additional
# resources or seek advice from a professional framer"; "I am able to answer the question".
_ELSEWHERE = re.compile(
    r"\b(?:consult|seek (?:advice|guidance|help)|check with|speak (?:to|with)|talk to)\b"
    r"|\b(?:i am|i'm|we are) (?:able|unable) to answer\b", re.I)
# A clause can stand alone when it starts with a subject: "..., but the museum is closed".
_SUBJECT = re.compile(
    r"^(?:the|a|an|it|he|she|they|we|there|this|that|these|those|its|his|her|their|[A-Z])\w*",
)
_LACKS = re.compile(
    r"\b(?:do|does|did)(?: not|n't) (?:\w+ )?(?:mention|say|state|specify|provide|include"
    r"|contain|give|list|discuss|address|describe)|\bnot (?:mentioned|specified|stated|provided"
    r"|given|listed|included|discussed)|\bno (?:mention|information|details?|data)\b"
    r"|\bnone (?:is |are )?(?:mentioned|given|listed|provided)\b|\bsilent on\b", re.I)
_SOURCE_NAME = re.compile(
    r"\b(?:passages?|documents?|articles?|contexts?|sources?|records?|the text)\b", re.I)
_SOURCE_SAYS = re.compile(
    r"^(?:according to |as )?(?:the )?(?:passage|document|article|source|record|text)\s*\d*"
    r"\s*(?:,\s*)?(?:says|states|mentions|notes|reports|explains|indicates|shows|confirms"
    r"|describes|stated|mentioned|noted|reported)\b", re.I)
_CLAUSE = re.compile(r"; |, but |, while |, whereas ")
_HEADER = re.compile(r"^\[Document \d+: [^\]]*\]$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"(])")
_WORD = re.compile(r"[A-Za-z]+|\d+(?:[.,]\d+)*")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _root(word: str) -> str:
    """A crude suffix stripper: "parking" / "parks" / "parked" -> "park"."""
    w = word.lower()
    for suffix in ("ings", "ing", "edly", "ed", "ies", "es", "s", "ly"):
        if len(w) > len(suffix) + 3 and w.endswith(suffix):
            return w[: -len(suffix)]
    return w


def terms(text: str) -> list[str]:
    """Words of `text` in order, camelCase and snake_case split, with glued neighbours
    ("RestaurantsTakeOut" -> restaurant, take, out, takeout), common words left out."""
    out: list[str] = []
    for token in re.findall(r"[A-Za-z0-9]+", text):
        parts = _CAMEL.findall(token) or [token]
        pieces = [p.lower() for p in parts]
        if len(pieces) > 1:
            pieces += [a + b for a, b in zip(pieces, pieces[1:], strict=False)]
        out += [_root(p) for p in pieces if p not in _COMMON and (len(p) > 1 or p.isdigit())]
    return out


def asserts_nothing(sentence: str) -> bool:
    """Whether a careful decomposer gives no claim for this sentence (rules of this judge)."""
    text = sentence.strip().lstrip("*-•#> ").strip()
    if not re.search(r"[A-Za-z0-9]", text):
        return True
    if sentence.strip().startswith("#") or (text.endswith(":") and len(text.split()) <= 12):
        return True
    if any(p.search(text) for p in (_COURTESY, _REFUSAL, _REPLIED, _SELF)) or (
            _ELSEWHERE.search(text) and not re.search(r"\d", text)):
        return True
    content = [t for t in terms(text) if t not in _ABOUT]
    # Numbers alone are content ("The answer is 42."), except in a citation ("(Passage 2)").
    cited = _SOURCE_NAME.search(text) or not re.search(r"[A-Za-z]", text)
    return all(t.isdigit() for t in content) and bool(cited or not content)


def claim_kind(sentence: str) -> str:
    """``absence`` for "the sources do not say X", ``source`` for "Passage 2 says X", else
    ``fact``."""
    text = sentence.strip()
    if _LACKS.search(text) and (_SOURCE_NAME.search(text) or text.lower().startswith("none")):
        return "absence"
    if _SOURCE_SAYS.match(text):
        return "source"
    return "fact"


def clauses(sentence: str) -> list[str]:
    """The sentence cut at clear clause boundaries: the clause before has three words or more
    ("Overall, while ..." is not cut) and the next one starts with its own subject."""
    pieces: list[str] = []
    cursor = 0
    for m in _CLAUSE.finditer(sentence):
        if _SUBJECT.match(sentence[m.end():]) and len(sentence[cursor:m.start()].split()) >= 3:
            pieces.append(sentence[cursor:m.start()].strip(" ,;"))
            cursor = m.end()
    pieces.append(sentence[cursor:].strip(" ,;"))
    return [p for p in pieces if p]


@dataclass(frozen=True)
class _Answer:
    source_id: str
    text: str
    spans: tuple[tuple[int, int, str], ...]  # (start, end, CON | NIC)


class _Gold:
    """The responses and sources of a RAGTruth directory."""

    def __init__(self, directory: Path):
        self.sources: dict[str, str] = {}
        with open(directory / "source_info.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                info = rec["source_info"]
                body = info["passages"] if rec["task_type"] == "QA" else (
                    info if isinstance(info, str) else json.dumps(info, ensure_ascii=False))
                self.sources[str(rec["source_id"])] = _flat(body)
        self.answers: dict[str, list[_Answer]] = {}
        with open(directory / "response.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                spans = tuple((lb["start"], lb["end"],
                               "CON" if "conflict" in lb["label_type"].lower() else "NIC")
                              for lb in rec.get("labels") or [])
                ans = _Answer(str(rec["source_id"]), rec["response"], spans)
                self.answers.setdefault(ans.text, []).append(ans)


def _flat(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


@functools.cache
def _gold(directory: str) -> _Gold:
    return _Gold(Path(directory))


def _positions(text: str, part: str) -> list[int]:
    out, at = [], text.find(part)
    while part and at >= 0:
        out.append(at)
        at = text.find(part, at + 1)
    return out


def _label_at(answer: _Answer, start: int, end: int) -> str:
    """CON/NIC when answer[start:end] overlaps a gold span with letters or digits in common."""
    found = set()
    for a, b, label in answer.spans:
        lo, hi = max(a, start), min(b, end)
        if lo < hi and re.search(r"[A-Za-z0-9]", answer.text[lo:hi]):
            found.add(label)
    return "CON" if "CON" in found else "NIC" if "NIC" in found else "ENT"


@functools.lru_cache(maxsize=256)
def _units(text: str) -> tuple[tuple[str, frozenset[str], frozenset[str]], ...]:
    """Quotable units: lines, long lines cut into sentences; each with its words and, for a
    JSON line, the words of the keys it sits under."""
    out, keys = [], []
    for raw in text.split("\n"):
        line = raw.strip()
        key = re.match(r'^"([^"]+)"\s*:\s*([\[{])?', line)
        if line[:1] in "}]" and keys:
            keys.pop()
        if line and not _HEADER.match(line) and re.search(r"[A-Za-z0-9]{2}", line):
            parents = frozenset(terms(" ".join(keys)))
            pieces = _SENTENCE_END.split(line) if len(line) > 200 else [line]
            out += [(p, frozenset(terms(p)), parents) for p in pieces if p.strip()]
        if key and key.group(2):
            keys.append(key.group(1))
    return tuple(out)


def best_line(claim: str, text: str) -> tuple[str, float]:
    """The unit of `text` that best matches the claim, verbatim, and its score: shared words
    (a word under a matching JSON key counts half), plus half a point per shared word pair in
    order; ties go to the shorter unit."""
    wanted = terms(claim)
    pairs = set(zip(wanted, wanted[1:], strict=False))
    best, top = "", 0.0
    for unit, own, parents in _units(text):
        seq = terms(unit)
        score = sum(1.0 if w in own else 0.5 if w in parents else 0.0 for w in set(wanted))
        score += 0.5 * len(pairs & set(zip(seq, seq[1:], strict=False)))
        if score > top or (score == top and score and len(unit) < len(best)):
            best, top = unit, score
    return best, top


class QuoteJudge:
    """RAGTruth's gold labels, with this module's decomposition and single quotes."""

    model = "quote-ragtruth"

    def __init__(self, options: dict[str, str]):
        self.cut = options.get("cut", "sentence")
        if self.cut not in CUTS:
            raise ValueError(f"cut={self.cut!r}: expected one of {', '.join(CUTS)}")
        self.gold = _gold(str(options.get("data") or DEFAULT_DATA))
        self._seen: dict[str, list[tuple[_Answer, int, int]]] = {}

    def _locate(self, sentence: str, answer: str) -> list[tuple[_Answer, int, int]]:
        answers = self.gold.answers.get(answer)
        if not answers:
            raise LookupError(f"answer not in the RAGTruth data: {answer[:80]!r}")
        found = [(a, at, at + len(sentence)) for a in answers
                 for at in _positions(a.text, sentence)]
        if not found:
            raise LookupError(f"sentence not in its answer: {sentence[:80]!r}")
        return found

    async def decompose(self, sentence: str, answer: str, question: str) -> list[dict]:
        places = self._locate(sentence, answer)
        flagged = any(_label_at(a, s, e) != "ENT" for a, s, e in places)
        if not flagged and asserts_nothing(sentence):
            return []
        kind = claim_kind(sentence)
        if kind != "fact":
            pieces = [sentence.strip()]
        elif self.cut == "gold":
            pieces = self._gold_pieces(*places[0]) if flagged else [sentence.strip()]
        else:
            pieces = clauses(sentence)
        claims = []
        for piece in pieces:
            fragments = [f for f in (piece if isinstance(piece, list) else [piece]) if f]
            text = " ".join(fragments)
            claims.append({"text": text, "kind": kind, "fragments": fragments})
            for a, s, _ in places:
                self._remember(text, a, s, fragments)
        return claims

    def _gold_pieces(self, answer: _Answer, start: int, end: int) -> list[list[str] | str]:
        """Each gold span clipped to the sentence, then the rest of the sentence."""
        cuts = sorted((max(a, start), min(b, end)) for a, b, _ in answer.spans
                      if a < end and b > start)
        merged: list[list[int]] = []
        for a, b in cuts:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        pieces: list[list[str] | str] = [answer.text[a:b].strip() for a, b in merged
                                         if re.search(r"[A-Za-z0-9]", answer.text[a:b])]
        rest, cursor = [], start
        for a, b in [*merged, [end, end]]:
            gap = answer.text[cursor:a].strip(" ,;:.-\n")
            if gap:
                rest.append(gap)
            cursor = b
        if rest and not asserts_nothing(" ".join(rest)) and len(terms(" ".join(rest))) >= 2:
            pieces.append(rest)
        return pieces

    def _remember(self, text: str, answer: _Answer, start: int, fragments: list[str]) -> None:
        sentence = answer.text[start:]
        bounds = []
        for fragment in fragments:
            at = sentence.find(fragment)
            if at >= 0:
                bounds.append((start + at, start + at + len(fragment)))
        entry = [(answer, a, b) for a, b in bounds]
        self._seen.setdefault(text, [])
        self._seen[text] += [e for e in entry if e not in self._seen[text]]

    def label(self, claim: str, text: str) -> str:
        """The gold label of a claim: from where decompose found it (else every answer holding
        the claim's words), kept to the answers whose source holds the given text."""
        places = self._seen.get(claim) or [
            (a, at, at + len(claim)) for answers in self.gold.answers.values()
            for a in answers for at in _positions(a.text, claim)]
        if len({a.source_id for a, _, _ in places}) > 1:
            probe = _flat(max((ln for ln in text.split("\n") if not _HEADER.match(ln.strip())),
                              key=len, default=""))
            places = [p for p in places if probe in self.gold.sources[p[0].source_id]] or places
        labels = {_label_at(a, s, e) for a, s, e in places}
        return "CON" if "CON" in labels else "NIC" if "NIC" in labels else "ENT"

    async def verify_local(self, claim: str, chunk: str, question: str) -> tuple:
        label = self.label(claim, chunk)
        quote, score = best_line(claim, chunk)
        if label == "NIC" or not score:
            return "NIC", []
        return label, [quote]

    async def verify_global(self, claim: str, context: str, question: str,
                            local_label: str, hint: str | None) -> tuple:
        label = self.label(claim, context)
        if label == "NIC":
            return "NIC", []
        quote, score = best_line(claim, context)
        if not score:
            quote, _ = best_line(f"{claim} {question}", context)
        return (label, [quote]) if quote else ("NIC", [])

    async def verify_absence(self, claim: str, context: str, question: str) -> tuple:
        if self.label(claim, context) == "ENT":
            return "ENT", []
        quote, score = best_line(claim, context)
        return ("CON", [quote]) if score else ("NIC", [])


def factory(options: dict[str, str]) -> QuoteJudge:
    return QuoteJudge(options)
