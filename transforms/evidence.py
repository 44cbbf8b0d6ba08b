"""Evidence grounding: align the judge's quotes to context sentences and offsets.

The retromorphic relation: every element of a verdict must be traceable to the input. A quote
counts as evidence only if it occurs in the context, compared after folding case and treating
every run of whitespace and punctuation as one separator, on word boundaries. Invented words
never match. An ENT or CON with no grounded quote is not entailed: it becomes NIC, and the claim
row says why. This is also what keeps a judge that was talked into "ENT" by text inside a trace
from marking a claim supported without quoting real support.
"""

from __future__ import annotations

import re
import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rt4chart.schemas.records import Evidence, RenderedText

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


def _pieces(rendered: RenderedText, start: int, end: int, allowed: set[int] | None) -> list[Evidence]:
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


def ground(
    label: str, evidence: tuple[Evidence, ...], missing: int, n_quotes: int
) -> tuple[str, tuple[Evidence, ...], str | None]:
    """Apply the retromorphic rule to a judge's label: (label, evidence, note)."""
    if label == "NIC":
        return "NIC", (), None
    if not evidence:
        why = "no quote given" if n_quotes == 0 else f"none of {n_quotes} quotes is in the context"
        return "NIC", (), f"judge said {label} but {why}: not supported by the context"
    note = f"{missing} of {n_quotes} quotes not found in the context, dropped" if missing else None
    return label, evidence, note
