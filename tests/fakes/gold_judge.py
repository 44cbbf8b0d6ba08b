"""A gold judge: RAGTruth's human labels behind the public custom-judge contract.

The pipeline's upper bound, kept honest: it imports nothing of rt4chart and sees only what a
judge method receives (sentence, answer, question; claim, chunk or context, question). It
finds the RAGTruth response by the exact answer text it is given and then acts as a careful
model that happened to know the gold labels:

- ``decompose`` cuts a sentence along the gold spans: each hallucinated span (clipped to the
  sentence) is a claim, and the rest of the sentence is one more claim when it says something;
  a sentence with no span is one claim; greetings, offers, refusals, headings and statements
  about the sources (which a plain list of claims cannot mark as such) give no claim.
- ``verify_*`` label a claim from the gold: a claim that lies inside a gold span of a response
  to this source, or holds at least half of one (a whole sentence with a false part, as
  another judge's claims may be), is CON for a "Conflict" span, NIC for a "Baseless" one; any
  other claim is ENT.
  ENT and CON quote, verbatim, the lines or sentences of the text given that share the most
  words with the claim (understanding JSON keys: camelCase, nesting). NIC quotes nothing.

Claims are self-contained, as the method asks of a decomposer: a claim with a reference it
cannot resolve on its own ("The main difference is their functions.") carries what it refers to
(the question) and a list item carries its lead-in ("Adverb clause:"), as `text [re: topic]`,
with the claim's own words as its verbatim fragment (the plain JSON form of a claim,
``{"text", "kind", "fragments"}``), so that its span is still exactly those words.

Options: ``data`` (a RAGTruth directory; default ``../shared/data/ragtruth`` next to the
checkout), ``sources``: ``skip`` (the default: statements about the sources give no claim),
``kinds`` (a statement that the sources lack something is a claim of kind ``absence``;
``verify_absence`` answers from the gold) or ``claim`` (they are plain factual
claims, as a decomposer without claim kinds might emit them).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

# A claim that holds this share of a gold span's characters restates that span.
RESTATED_SHARE = 0.5
_HERE = Path(__file__).resolve()
DEFAULT_DATA = next(
    (p for p in (_HERE.parents[3] / "shared" / "data" / "ragtruth",
                 Path("/work/shared/data/ragtruth")) if p.exists()),
    Path("/work/shared/data/ragtruth"),
)

_STOP = frozenset(
    "the and for are was were has have had not but with this that from they them their there "
    "its his her she him you your our can could will would should may might must all any been "
    "being into onto than then also only just very more most some such what which who whom "
    "when where why how does did done about over under each other".split()
)
# Words that name the answer or its sources, not the world.
_META = frozenset(
    "passage passages article text context document documents source sources record records "
    "information provided given mentioned mention mentions stated states state answer answers "
    "question questions based according summary following therefore overall conclusion below "
    "above see reference details detail data able unable correct brief here response "
    "find found following described discussed explained shown".split()
)
# A bare citation: "(Passage 2)", "[3]", "(Passage 1:4)".
_CITATION_RE = re.compile(r"^\W*(?:(?:passage|source|document|doc)s?\s*)?\d+(?:\W+\d+)*\W*$", re.I)
_META_STEMS = frozenset(w[:5] if len(w) > 5 else w for w in _META)
_NO_CLAIM_RES = tuple(re.compile(p, re.I) for p in (
    r"^\W*(sure|certainly|of course|okay|ok|absolutely|hello|hi)\b\W*$",
    r"^\W*(sure|certainly|of course|okay|absolutely)\W+(here|i)\b",
    r"^\W*here(?:'s| is| are)\b",
    r"\b(i hope (this|that) helps|let me know|feel free to|happy to help)\b",
    r"\bif you (have|need) any (other |further |more |additional )?(questions|information)\b",
    r"\b(unable|not able|cannot|can't|can not|impossible)\b.{0,60}\b(answer|determin|"
    r"provide|find|say|tell)",
    r"\bconsult (with )?(a|an|your) (doctor|physician|healthcare|medical|qualified)",
))
_NEGATION_RE = re.compile(
    r"\b(not|no|none|neither|nor|without|lacks?|absent|unclear|doesn't|don't|isn't|aren't)\b",
    re.I)
_SOURCE_RE = re.compile(
    r"\b(passages?|context|article|documents?|sources?|the text|record|information)\b", re.I)
# A claim that needs what it refers to: "their functions", "it opened".
_REFERENCE_RE = re.compile(r"\b(their|they|them|its|it|this|these|those)\b", re.I)
_TOPIC_RE = re.compile(r" \[re: [^\]]*\]$")
_ITEM_RE = re.compile(r"^\s*(?:[*\-•]|\d+[.)])\s")
_HEADER_RE = re.compile(r"^\[Document \d+: [^\]]*\]$")
_CAMEL_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+|[^\W\d_]+")
_KEY_RE = re.compile(r'^\s*"((?:[^"\\]|\\.)*)"\s*:\s*(.*)$')
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[\"“(A-Z0-9])")
LONG_LINE = 250
MAX_QUOTES = 3


@dataclass(frozen=True)
class _Response:
    source_id: str
    text: str
    spans: tuple[tuple[int, int, str], ...]  # (start, end, "CON" | "NIC")


def _label_of(label_type: str) -> str:
    return "CON" if "conflict" in label_type.lower() else "NIC"


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 and not word.isdigit() else word


def words(text: str) -> set[str]:
    """Content words as a careful reader sees them: "RestaurantsTakeOut" is restaurants, take,
    out and takeout; "Wi-Fi" is wifi; "5pm" is 5 and pm."""
    out: set[str] = set()
    for compound in re.findall(r"[^\W_]+(?:[-_][^\W_]+)*", text):
        parts = [p for run in re.findall(r"[^\W_]+", compound) for p in _CAMEL_RE.findall(run)]
        glued = {"".join(parts[i:j]) for i in range(len(parts))
                 for j in range(i + 1, min(i + 3, len(parts)) + 1)}
        for w in glued | set(re.findall(r"[^\W_]+", compound)) | {"".join(parts)}:
            w = w.lower()
            if w.isdigit() or (len(w) >= 3 and w not in _STOP):
                out.add(_stem(w))
    return out


class GoldData:
    """The RAGTruth responses and sources of one directory."""

    def __init__(self, directory: Path):
        sources = {}
        with open(directory / "source_info.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                sources[str(rec["source_id"])] = rec
        self.by_answer: dict[str, list[_Response]] = {}
        self.by_question: dict[str, set[str]] = {}
        self.source_text = {sid: _norm(_source_text(rec)) for sid, rec in sources.items()}
        with open(directory / "response.jsonl", encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                spans = tuple(sorted((lb["start"], lb["end"], _label_of(lb["label_type"]))
                                     for lb in rec.get("labels") or []))
                r = _Response(str(rec["source_id"]), rec["response"], spans)
                self.by_answer.setdefault(r.text, []).append(r)
        for sid, rec in sources.items():
            if rec["task_type"] == "QA":
                self.by_question.setdefault(rec["source_info"]["question"], set()).add(sid)
        self.responses = [r for rs in self.by_answer.values() for r in rs]


def _source_text(rec: dict) -> str:
    info = rec["source_info"]
    if rec["task_type"] == "QA":
        return info["passages"]
    return info if isinstance(info, str) else json.dumps(info, ensure_ascii=False)


@functools.cache
def load(directory: str) -> GoldData:
    return GoldData(Path(directory))


def _occurrences(text: str, part: str) -> list[int]:
    found, start = [], text.find(part)
    while start >= 0 and part:
        found.append(start)
        start = text.find(part, start + 1)
    return found


def says_nothing(sentence: str, keep_source_claims: bool = False) -> bool:
    """Whether a careful decomposer gives no claim for this sentence."""
    text = sentence.strip()
    if any(r.search(text) for r in _NO_CLAIM_RES):
        return True
    if _CITATION_RE.match(text) or text.startswith("#"):
        return True
    if text.endswith(":") and (len(text.split()) <= 8 or not words(text) - _META_STEMS):
        return True  # a heading or a lead-in ("Based on the passages, the answer is:")
    content = words(text) - _META_STEMS
    if not content or _SOURCE_RE.search(text) and all(w.isdigit() for w in content):
        return True  # a statement about the answer's form, or a citation ("See passage 2.")
    about_sources = _SOURCE_RE.search(text) and _NEGATION_RE.search(text)
    return bool(about_sources) and not keep_source_claims


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _claims_at(answer: str, start: int, end: int, spans: list[tuple[int, int]]) -> list[str]:
    """Claims of the sentence answer[start:end] cut along the (clipped, merged) gold spans."""
    clipped = _merged([(max(a, start), min(b, end)) for a, b, *_ in spans
                       if a < end and b > start])
    # A span that only grazes the sentence (its final period) is no claim of it.
    claims: list[tuple[int, str]] = [(a, answer[a:b].strip()) for a, b in clipped
                                     if any(c.isalnum() for c in answer[a:b])]
    gaps, cursor = [], start
    for a, b in clipped:
        gaps.append((cursor, a))
        cursor = b
    gaps.append((cursor, end))
    rest = " ".join(" ".join(answer[a:b].split()) for a, b in gaps if a < b).strip(" ,;:-")
    # The rest is a claim when it says something: not a lone connective ("Additionally").
    if len(words(rest)) >= 2 and not says_nothing(rest, keep_source_claims=True):
        claims.append((next(a for a, b in gaps if answer[a:b].strip()), rest))
    return [c for _, c in sorted(claims) if c]


def _key_paths(lines: list[str]) -> list[tuple[str, ...]]:
    """For each line of pretty-printed JSON, the keys it sits under and its own key."""
    stack: list[str] = []
    paths = []
    for line in lines:
        text = line.strip()
        m = _KEY_RE.match(text)
        if m:
            opens = m.group(2).rstrip(",").strip() in ("{", "[")
            paths.append((*stack, m.group(1)))
            if opens:
                stack.append(m.group(1))
            continue
        paths.append(())
        if text in ("{", "["):
            stack.append("")
        elif text[:1] in ("}", "]") and stack:
            stack.pop()
    return paths


@functools.lru_cache(maxsize=512)
def _units(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """The quotable units of a text (lines, or sentences of long lines) with their words."""
    lines = text.split("\n")
    out = []
    for line, path in zip(lines, _key_paths(lines), strict=True):
        line = line.strip()
        if not line or _HEADER_RE.match(line):
            continue
        extra = words(" ".join(path))
        parts = _SENTENCE_RE.split(line) if len(line) > LONG_LINE else [line]
        for part in (p.strip() for p in parts):
            if sum(c.isalnum() for c in part) >= 4:
                out.append((part, frozenset(words(part) | extra)))
    return tuple(out)


def best_quotes(claim: str, text: str, question: str = "") -> list[str]:
    """Up to MAX_QUOTES units of `text`, verbatim, greedily covering the claim's words; when
    no unit shares a word with the claim, the one that best matches claim and question. A
    text of at most MAX_QUOTES lines is evidence already chosen (a confirming call shows the
    claim's quotes alone, one a line): then its lines are quoted whole when the pieces found
    are not each a statement (fewer than two content words)."""
    quotes = _cover(words(claim), text) or _cover(words(claim) | words(question), text)[:1]
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) <= MAX_QUOTES and not all(len(words(q)) >= 2 for q in quotes or [""]):
        return lines
    return quotes


def _cover(wanted: set[str], text: str) -> list[str]:
    quotes: list[str] = []
    units = _units(text)
    while wanted and len(quotes) < MAX_QUOTES and units:
        # Most new claim words first; of equals, a statement (two words or more: a careful
        # model does not quote the one-word line "Cook." as evidence that brats can be cooked
        # when "Cook the bratwurst over medium heat." is there), then the shortest unit (the
        # most precise quote).
        unit, covered = max(units, key=lambda u: (len(wanted & u[1]), len(words(u[0])) >= 2,
                                                  -len(u[0])))
        if not wanted & covered:
            break
        quotes.append(unit)
        wanted -= covered
    return quotes


class GoldJudge:
    """RAGTruth's gold labels behind the custom-judge contract (see the module docstring)."""

    model = "gold-ragtruth"

    def __init__(self, options: dict[str, str]):
        self.data = load(str(Path(options.get("data") or DEFAULT_DATA)))
        self.sources = options.get("sources", "skip")
        if self.sources not in ("skip", "kinds", "claim"):
            raise ValueError(f"sources={self.sources!r}: expected skip, kinds or claim")
        self.keep_source_claims = self.sources != "skip"

    async def decompose(self, sentence: str, answer: str, question: str) -> list[str | dict]:
        claims = self._gold_claims(sentence, answer)
        return [self._self_contained(c, sentence, answer, question) for c in claims]

    def _self_contained(self, claim: str, sentence: str, answer: str,
                        question: str) -> str | dict:
        kind = self._kind(claim)
        topic = lead_in(answer, answer.find(sentence)) or (
            question if _REFERENCE_RE.search(claim) else "")
        if not topic and kind == "fact":
            return claim
        text = f"{claim} [re: {' '.join(topic.split())}]" if topic else claim
        return {"text": text, "kind": kind, "fragments": [claim]}

    def _kind(self, claim: str) -> str:
        """`absence` for a claim that the sources lack something; "Based on the passages, X"
        is a claim about the world."""
        if self.sources == "kinds" and _SOURCE_RE.search(claim) and _NEGATION_RE.search(claim):
            return "absence"
        return "fact"

    def _gold_claims(self, sentence: str, answer: str) -> list[str]:
        responses = self.data.by_answer.get(answer)
        if not responses:
            raise LookupError(f"answer not in the gold data: {answer[:80]!r}")
        spans = [s for r in responses for s in r.spans]
        starts = _occurrences(answer, sentence)
        if not starts:
            raise LookupError(f"sentence not in its answer: {sentence[:80]!r}")
        if not any(a < st + len(sentence) and b > st for st in starts for a, b, _ in spans):
            if says_nothing(sentence, self.keep_source_claims):
                return []
            return [sentence.strip()]
        claims: list[str] = []
        for st in starts:
            claims += [c for c in _claims_at(answer, st, st + len(sentence), spans)
                       if c not in claims]
        return claims

    def gold_label(self, claim: str, question: str, text: str) -> str:
        """CON/NIC when the claim lies inside a gold span of a response to this source, or
        restates most of one (a careful model does not call a sentence supported because only
        part of it is false: the lucky-quote judge's whole-sentence claims, for instance)."""
        claim = _TOPIC_RE.sub("", claim)
        found = set()
        for r in self._candidates(claim, question, text):
            for p in _occurrences(r.text, claim):
                end = p + len(claim)
                inside = [lab for a, b, lab in r.spans if a < end and b > p]
                covered = sum(min(b, end) - max(a, p) for a, b in
                              _merged([(a, b) for a, b, _ in r.spans]) if a < end and b > p)
                restated = [lab for a, b, lab in r.spans
                            if min(b, end) - max(a, p) >= RESTATED_SHARE * (b - a)]
                if covered >= len(claim.strip()):
                    found.add("CON" if "CON" in inside else "NIC")
                elif restated:
                    found.add("CON" if "CON" in restated else "NIC")
                else:
                    found.add("ENT")
        return "CON" if "CON" in found else "NIC" if "NIC" in found else "ENT"

    def _candidates(self, claim: str, question: str, text: str) -> list[_Response]:
        cands = [r for r in self.data.responses if claim in r.text]
        if len({r.source_id for r in cands}) <= 1:
            return cands
        sources = self.data.by_question.get(question) or _sources_of(self.data, text)
        return [r for r in cands if r.source_id in sources] or cands

    async def verify_local(self, claim: str, chunk: str, question: str):
        label = self.gold_label(claim, question, chunk)
        quotes = _cover(words(claim), chunk) if label != "NIC" else []
        return (label, quotes) if quotes else ("NIC", [])  # nothing on the claim here

    async def verify_global(self, claim, context, question, local_label, hint):
        label = self.gold_label(claim, question, context)
        return label, (best_quotes(claim, context, question) if label != "NIC" else [])


    async def verify_absence(self, claim: str, context: str, question: str):
        label = self.gold_label(claim, question, context)
        if label == "ENT":  # the context indeed lacks it: nothing to quote
            return "ENT", []
        quotes = best_quotes(claim, context, question)
        return ("CON", quotes) if quotes else ("NIC", [])


def lead_in(answer: str, start: int) -> str:
    """The lead-in line ("Adverb clause:") of the list item that starts at `start`, if any."""
    if start < 0:
        return ""
    line_start = answer.rfind("\n", 0, start) + 1
    line_end = answer.find("\n", start)
    if not _ITEM_RE.match(answer[line_start:line_end if line_end >= 0 else len(answer)]):
        return ""
    for line in reversed(answer[:line_start].split("\n")):
        text = line.strip()
        if text and not _ITEM_RE.match(text):
            return text.rstrip(":") if text.endswith(":") else ""
    return ""


def _sources_of(data: GoldData, text: str) -> set[str]:
    """The sources whose text holds the longest line of `text` (a window or the context)."""
    lines = [ln for ln in text.split("\n") if ln.strip() and not _HEADER_RE.match(ln.strip())]
    probe = _norm(max(lines, key=len, default=""))
    return {sid for sid, body in data.source_text.items() if probe and probe in body}


def factory(options: dict[str, str]) -> GoldJudge:
    return GoldJudge(options)
