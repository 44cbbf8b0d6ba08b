"""Evidence grounding: align the judge's quotes to context sentences and offsets.

The retromorphic relation: every element of a verdict must be traceable to the input. A quote
counts as evidence only if it occurs in the context, compared after folding case and treating
every run of whitespace and punctuation as one separator, on word boundaries, both sides read as
every check reads text (`text.normalize`: invisible characters removed, NFKC, look-alike letters
folded); the evidence spans point into the original text. Invented words
never match. An ENT or CON with no grounded quote is not entailed: it becomes NIC, and the claim
row says why. This is also what keeps a judge that was talked into "ENT" by text inside a trace
from marking a claim supported without quoting real support.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rt4chart.schemas.records import Evidence, RenderedText, Sentence
from rt4chart.transforms.judges.adapter import as_verdict
from rt4chart.transforms.judges.base import VerdictLike
from rt4chart.transforms.text.normalize import mapped
from rt4chart.transforms.text.words import (
    content_words,
    fold,
    json_key_paths,
    same_stem,
)

# A fragment shorter than this (in letters and digits) is too unspecific to be evidence: "the"
# or "a 1" occurs in almost any context.
MIN_FRAGMENT_ALNUM = 4
# A grounded quote (with the key path of its JSON line, if any) needs this many content words
# to be evidence: one word shared with the claim is a coincidence, not a statement about it.
MIN_QUOTE_WORDS = 2
# One quote covering more than this share of the characters of the documents the judge was
# shown (a window, or the whole context), across several sentences, is no evidence: quoting
# everything says nothing about the claim (issue 33: a judge quoting the whole context passed
# 6 of 9 hallucinations). Checked when they hold at least this many sentences.
WIDE_QUOTE_SHARE = 0.5
WIDE_QUOTE_MIN_SENTENCES = 3
_ELLIPSIS_RE = re.compile(r"\[?(?:\.\s*\.\s*\.|…)\]?")


@dataclass(frozen=True)
class Normalised:
    """Folded text and, for each of its characters, the span [origin, end) of the source
    characters it came from (`text.normalize.mapped`: a ligature's two letters share one
    source character, an accent and its combining mark are one, invisible characters belong
    to the character before them)."""

    text: str
    origin: tuple[int, ...]
    ends: tuple[int, ...]


@functools.lru_cache(maxsize=16384)  # frozen; the context's sentences, once per claim
def normalise(text: str) -> Normalised:
    """Lower-case letters and digits of `text` as every check compares it
    (`text.normalize.mapped`); any other run of characters becomes one space."""
    source = mapped(text)
    chars: list[str] = []
    origin: list[int] = []
    ends: list[int] = []
    pending_space = False
    for ch, start, end in zip(source.text, source.starts, source.ends, strict=True):
        if ch.isalnum():
            if pending_space and chars:
                chars.append(" ")
                origin.append(start)
                ends.append(start)
            pending_space = False
            for folded in ch.lower():
                chars.append(folded)
                origin.append(start)
                ends.append(end)
        else:
            pending_space = True
    return Normalised("".join(chars), tuple(origin), tuple(ends))


def _occurrences(haystack: str, needle: str) -> Iterable[int]:
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        if (start == 0 or haystack[start - 1] == " ") and (
            end == len(haystack) or haystack[end] == " "
        ):
            yield start
        start = haystack.find(needle, start + 1)


def fragments(quote: str) -> list[str]:
    """A quote split at ellipses, normalised; unspecific fragments dropped."""
    parts = (normalise(p).text for p in _ELLIPSIS_RE.split(quote))
    return [p for p in parts if sum(c.isalnum() for c in p) >= MIN_FRAGMENT_ALNUM]


@functools.lru_cache(maxsize=64)
def _normalised(text: str) -> Normalised:
    # The same context is aligned once per claim: normalise it once per worker.
    return normalise(text)


def _pieces(
    rendered: RenderedText, start: int, end: int, allowed: set[int] | None
) -> list[Evidence]:
    out = []
    for offset, s in rendered.segments:
        lo, hi = max(start, offset), min(end, offset + len(s.text))
        if lo < hi and (allowed is None or s.index in allowed):
            a, b = s.start + lo - offset, s.start + hi - offset
            out.append(Evidence(s.doc_id, s.index, a, b, s.text[lo - offset : hi - offset]))
    return out


@functools.lru_cache(maxsize=64)
def _documents_only(rendered: RenderedText) -> str:
    """`rendered.text` with every character outside its documents' sentences (the headers with
    their doc ids and numbers, the separators: rt4chart's text) replaced by a space, offsets
    kept. A quote is looked for here, so that only what the documents say can be evidence:
    a quote that needs a header's words is not found."""
    out, last = [], 0
    for offset, s in rendered.segments:
        start = max(offset, last)
        out += [" " * (start - last), rendered.text[start:offset + len(s.text)]]
        last = max(last, offset + len(s.text))
    out.append(" " * (len(rendered.text) - last))
    return "".join(out)


@functools.lru_cache(maxsize=64)  # per trace, asked once per claim
def document_text(rendered: RenderedText) -> str:
    """The documents' sentences of `rendered`, one per line: the pool the support check may
    read (`specifics.supported_verdict`), never the headers, doc ids or the question."""
    return "\n".join(s.text for _, s in rendered.segments)


def _align_fragment(
    fragment: str, norm: Normalised, rendered: RenderedText, allowed: set[int] | None
) -> list[Evidence]:
    for pos in _occurrences(norm.text, fragment):
        start = norm.origin[pos]
        end = norm.ends[pos + len(fragment) - 1]
        pieces = _pieces(rendered, start, end, allowed)
        if pieces:
            return pieces
    return []


def align(
    quotes: Sequence[str], rendered: RenderedText, allowed: set[int] | None = None
) -> tuple[tuple[Evidence, ...], int]:
    """Ground quotes in the documents.

    Args:
        quotes: the judge's quotes.
        rendered: the text the judge was shown, with its sentence map.
        allowed: if given, only these sentence indices may hold evidence (the window's).

    Returns:
        The evidence spans (deduplicated, in context order) and the number of quotes that could
        not be found (a quote split by ellipses counts as found only if all its parts are).
    """
    groups = align_quotes(quotes, rendered, allowed)
    return merged(groups), sum(g is None for g in groups)


def align_quotes(quotes: Sequence[str], rendered: RenderedText,
                 allowed: set[int] | None = None) -> list[tuple[Evidence, ...] | None]:
    """Each quote's evidence spans in the documents (see `align`), None for a quote not found."""
    out: list[tuple[Evidence, ...] | None] = []
    norm = _normalised(_documents_only(rendered))  # once per call, not per quote fragment
    for quote in quotes:
        parts = fragments(quote)
        aligned = [_align_fragment(f, norm, rendered, allowed) for f in parts]
        ok = bool(parts) and all(aligned)
        out.append(tuple(e for group in aligned for e in group) if ok else None)
    return out


def merged(groups: Iterable[tuple[Evidence, ...] | None]) -> tuple[Evidence, ...]:
    """The spans of found quotes, deduplicated, in context order."""
    found = {(e.doc_id, e.sentence_index, e.start, e.end): e
             for group in groups if group for e in group}
    return tuple(sorted(found.values(), key=lambda e: (e.sentence_index, e.start, e.end)))


def covers_most(spans: tuple[Evidence, ...], rendered: RenderedText) -> bool:
    """Whether one quote's spans cover most of what the judge was shown: more than
    WIDE_QUOTE_SHARE of its documents' characters, across several sentences, when they hold at
    least WIDE_QUOTE_MIN_SENTENCES. Such a quote (the whole context, say) occurs in the context
    whatever the claim says: it points at nothing, so it is not evidence. One long sentence of
    a short context is a quote of one statement and stays evidence."""
    if len(rendered.segments) < WIDE_QUOTE_MIN_SENTENCES:
        return False
    if len({e.sentence_index for e in spans}) < 2:
        return False
    total = sum(len(s.text) for _, s in rendered.segments)
    return sum(e.end - e.start for e in spans) > WIDE_QUOTE_SHARE * total


def _says(quote: str, claim: str) -> bool:
    """Whether the quote holds the claim's folded words, in order."""
    said = fold(claim)
    return bool(said) and f" {said} " in f" {fold(quote)} "


def _about(word: str, pool: set[str]) -> bool:
    return any(same_stem(word, p) for p in pool)


@functools.lru_cache(maxsize=64)
def _key_words(segments: tuple[tuple[int, Sentence], ...]) -> dict[int, frozenset[str]]:
    """Content words of the JSON keys each key/value sentence sits under (its own key too),
    recovered from the sentences around it, document by document."""
    by_doc: dict[str, list[Sentence]] = {}
    for _, s in segments:
        by_doc.setdefault(s.doc_id, []).append(s)
    out: dict[int, frozenset[str]] = {}
    for sentences in by_doc.values():
        for s, path in zip(sentences, json_key_paths([s.text for s in sentences]), strict=True):
            if path:
                out[s.index] = frozenset(content_words(" ".join(path)))
    return out


def key_words(rendered: RenderedText) -> dict[int, frozenset[str]]:
    """For each sentence of `rendered` that is a `"key": value` line of a JSON object, the
    content words of its key path: `"street": true` under `"BusinessParking"` is about
    business, parking and street."""
    return _key_words(rendered.segments)


def ground(
    label: str, evidence: tuple[Evidence, ...], missing: int, n_quotes: int, claim: str = "",
    keys: Mapping[int, frozenset[str]] | None = None,
) -> tuple[str, tuple[Evidence, ...], str | None]:
    """Apply the retromorphic rule to a judge's label: (label, evidence, note).

    ENT and CON need at least one quote found in the context that holds MIN_QUOTE_WORDS content
    words of its own, or as many as the claim has if fewer (a one-word quote of prose such as
    "The word" is no evidence for a longer claim; a field of a JSON record is), and shares a
    content word with the claim; otherwise the claim is NIC and the note says why. NIC carries
    no evidence. A quote's words are its own (camelCase, snake_case, kebab-case and "5pm" taken
    apart, see `tokens`) plus, for a quote in a `"key": value` line of a JSON object, the words
    of its key path (`keys`, by sentence index): `"street": true` under `"BusinessParking"` is
    evidence
    about street parking.
    """
    if label == "NIC":
        return "NIC", (), None
    if not evidence:
        why = "no quote given" if n_quotes == 0 else f"none of {n_quotes} quotes is in the context"
        return "NIC", (), f"judge said {label} but {why}: not supported by the context"
    claim_words = content_words(claim)
    keys = keys or {}

    def words_of(e: Evidence) -> set[str]:
        return content_words(e.text) | keys.get(e.sentence_index, frozenset())

    # A quote of one content word of prose ("The word", "the city") occurs in almost any
    # context and says nothing for or against a claim of several that shares it: it is not
    # evidence (a claim of one content word, "A one.", needs no more than one). In a `"key":
    # value` line of a JSON record the key path says what the quoted field is: a field, not
    # a stray word.
    least = min(MIN_QUOTE_WORDS, len(claim_words))
    evidence = tuple(e for e in evidence
                     if e.sentence_index in keys or len(words_of(e)) >= least)
    if not evidence:
        return "NIC", (), (f"judge said {label} but its quotes are too short to be evidence "
                           f"(fewer than {least} content words each)")
    # A claim without a content word (short tokens only: "AA: AA") has none to share: a quote
    # is about it only if it says the claim's words themselves.
    if claim and not (any(_about(w, claim_words) for e in evidence for w in words_of(e))
                      if claim_words else any(_says(e.text, claim) for e in evidence)):
        return "NIC", (), (
            f"judge said {label} but its quotes share no content word with the claim: "
            "not evidence for or against it"
        )
    note = f"{missing} of {n_quotes} quotes not found in the context, dropped" if missing else None
    return label, evidence, note


def claim_probability(judged: str, label: str, p: float | None) -> float:
    """The claim's raw score after grounding: the judge's own, whatever label grounding left
    (0 for an ENT and 1 otherwise when the judge gave none). The rows' p_unsupported is this
    score calibrated and moved to the side of the final label's threshold
    (`probability.claim_p`): an ENT grounding made NIC sits at the threshold, not at 1."""
    del label  # the final label acts later, in probability.claim_p
    if p is None:
        return 0.0 if judged == "ENT" else 1.0
    return p


def grounded_verdict(
    verdict: VerdictLike, rendered: RenderedText, claim: str, allowed: set[int] | None = None,
    keys: Mapping[int, frozenset[str]] | None = None, refuse_wide: bool = True,
) -> tuple[str, tuple[Evidence, ...], str | None, float]:
    """A verification judge's verdict, aligned and grounded.

    Args:
        verdict: the judge's Verdict (a plain (label, quotes[, p]) goes through `as_verdict`).
        rendered: the text the judge was shown, with its sentence map.
        claim: the claim's text.
        allowed: if given, only these sentence indices may hold evidence (the window's).
        keys: the JSON key path words of the sentences (`key_words`), when `rendered` does not
            hold the documents around them (a confirming call shows the quotes alone).
        refuse_wide: a quote covering most of `rendered` is not evidence (`covers_most`);
            False where `rendered` is the evidence itself (a confirming call).

    Returns (label, evidence, note, p_unsupported). Raises JudgeError for a malformed verdict:
    the caller records it as a judge error.
    """
    verdict = as_verdict(verdict)
    groups = align_quotes(verdict.quotes, rendered, allowed)
    wide = [g for g in groups if g and refuse_wide and covers_most(g, rendered)]
    groups = [g for g in groups if not (g and g in wide)]
    evidence, missing = merged(groups), sum(g is None for g in groups)
    p = claim_probability(verdict.label, "NIC", verdict.p_unsupported)
    if wide and not evidence and verdict.label != "NIC":
        return "NIC", (), (f"judge said {verdict.label} but its quote covers most of the "
                           "context: quoting everything is not evidence"), p
    if evidence and keys is None:
        keys = key_words(rendered)
    label, evidence, note = ground(verdict.label, evidence, missing, len(groups), claim,
                                   keys if evidence else None)
    if wide and label != "NIC":
        why = f"{len(wide)} quote(s) covering most of the context dropped (not evidence)"
        note = f"{note}; {why}" if note else why
    return label, evidence, note, claim_probability(verdict.label, label, verdict.p_unsupported)


