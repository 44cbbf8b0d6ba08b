"""Evidence grounding: align the judge's quotes to context sentences and offsets.

The retromorphic relation: every element of a verdict must be traceable to the input. A quote
counts as evidence only if it occurs in the context, compared after folding case and treating
every run of whitespace and punctuation as one separator, on word boundaries. Invented words
never match. An ENT or CON with no grounded quote is not entailed: it becomes NIC, and the claim
row says why. This is also what keeps a judge that was talked into "ENT" by text inside a trace
from marking a claim supported without quoting real support.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rt4chart.schemas.records import Evidence, RenderedText
from rt4chart.transforms.judges.adapter import as_verdict
from rt4chart.transforms.judges.base import VerdictLike

# A fragment shorter than this (in letters and digits) is too unspecific to be evidence: "the"
# or "a 1" occurs in almost any context.
MIN_FRAGMENT_ALNUM = 4
_ELLIPSIS_RE = re.compile(r"\[?(?:\.\s*\.\s*\.|…)\]?")


@dataclass(frozen=True)
class Normalised:
    """Folded text and, for each of its characters, the offset of its source character."""

    text: str
    origin: tuple[int, ...]


def normalise(text: str) -> Normalised:
    """Lower-case letters and digits; any other run of characters becomes one space."""
    chars: list[str] = []
    origin: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        if ch.isalnum():
            if pending_space and chars:
                chars.append(" ")
                origin.append(i)
            pending_space = False
            for folded in ch.lower():
                chars.append(folded)
                origin.append(i)
        else:
            pending_space = True
    return Normalised("".join(chars), tuple(origin))


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


def _align_fragment(
    fragment: str, rendered: RenderedText, allowed: set[int] | None
) -> list[Evidence]:
    norm = _normalised(rendered.text)
    for pos in _occurrences(norm.text, fragment):
        start = norm.origin[pos]
        end = norm.origin[pos + len(fragment) - 1] + 1
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
    found: dict[tuple[str, int, int, int], Evidence] = {}
    missing = 0
    for quote in quotes:
        parts = fragments(quote)
        aligned = [_align_fragment(f, rendered, allowed) for f in parts]
        if not parts or not all(aligned):
            missing += 1
            continue
        for ev in (e for group in aligned for e in group):
            found[(ev.doc_id, ev.sentence_index, ev.start, ev.end)] = ev
    ordered = sorted(found.values(), key=lambda e: (e.sentence_index, e.start, e.end))
    return tuple(ordered), missing


# Words that say nothing about what a claim is about; a quote that shares no other word with
# the claim is not evidence for or against it, wherever it was copied from.
_STOPWORDS = frozenset(
    "the and for are was were has have had not but with this that from they them their there "
    "its his her she him you your our can could will would should may might must all any "
    "been being into onto than then also only just very more most some such what which who "
    "whom when where why how does did doing done about over under again each other".split()
)


def content_words(text: str) -> set[str]:
    """Lower-cased words of 3+ letters that are not stopwords, and all numbers."""
    words = normalise(text).text.split()
    return {w for w in words if w.isdigit() or (len(w) >= 3 and w not in _STOPWORDS)}


def _about(word: str, pool: set[str]) -> bool:
    # A shared stem of 4+ letters counts: "verified"/"verify", "extension"/"extend".
    return word in pool or (len(word) >= 5 and any(p[:4] == word[:4] for p in pool))


def ground(
    label: str, evidence: tuple[Evidence, ...], missing: int, n_quotes: int, claim: str = ""
) -> tuple[str, tuple[Evidence, ...], str | None]:
    """Apply the retromorphic rule to a judge's label: (label, evidence, note).

    ENT and CON need at least one quote found in the context that shares a content word with
    the claim; otherwise the claim is NIC and the note says why. NIC carries no evidence.
    """
    if label == "NIC":
        return "NIC", (), None
    if not evidence:
        why = "no quote given" if n_quotes == 0 else f"none of {n_quotes} quotes is in the context"
        return "NIC", (), f"judge said {label} but {why}: not supported by the context"
    claim_words = content_words(claim)
    if claim and not any(_about(w, claim_words) for e in evidence for w in content_words(e.text)):
        return "NIC", (), (
            f"judge said {label} but its quotes share no content word with the claim: "
            "not evidence for or against it"
        )
    note = f"{missing} of {n_quotes} quotes not found in the context, dropped" if missing else None
    return label, evidence, note


def claim_probability(judged: str, label: str, p: float | None) -> float:
    """The claim's p_unsupported after grounding: the judge's own when its label stood, 1 when
    grounding overturned an ENT or CON to NIC (the judge's confidence no longer applies), and
    0/1 from the label when the judge gave none."""
    if label != judged:
        return 1.0
    if p is None:
        return 0.0 if label == "ENT" else 1.0
    return p


def grounded_verdict(
    verdict: VerdictLike, rendered: RenderedText, claim: str, allowed: set[int] | None = None
) -> tuple[str, tuple[Evidence, ...], str | None, float]:
    """A verification judge's verdict, aligned and grounded.

    Args:
        verdict: the judge's Verdict (a plain (label, quotes[, p]) goes through `as_verdict`).
        rendered: the text the judge was shown, with its sentence map.
        claim: the claim's text.
        allowed: if given, only these sentence indices may hold evidence (the window's).

    Returns (label, evidence, note, p_unsupported). Raises JudgeError for a malformed verdict:
    the caller records it as a judge error.
    """
    verdict = as_verdict(verdict)
    evidence, missing = align(verdict.quotes, rendered, allowed)
    label, evidence, note = ground(verdict.label, evidence, missing, len(verdict.quotes), claim)
    return label, evidence, note, claim_probability(verdict.label, label, verdict.p_unsupported)
