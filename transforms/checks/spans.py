"""Claim spans: where in the answer a claim's words are, aligned like evidence in the context.

A decomposer gives, with each claim, the verbatim fragments of the sentence it restates. Each
fragment is found in the sentence with the tolerant alignment of evidence grounding (case,
whitespace and punctuation folded, on word boundaries; see `evidence.normalise`); the claim's
spans are the union of its aligned fragments (joined where only whitespace parts them). When no
fragment aligns, the claim's own text is tried (a claim that copies its sentence's words), and
only when neither aligns does the claim cover its whole sentence. Which one was used is recorded
(`span_source`), so a row can say how precise its span is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from rt4chart.transforms.checks.evidence import Normalised, _occurrences, normalise

Span = tuple[int, int]


class ClaimSpans(NamedTuple):
    spans: tuple[Span, ...]  # answer offsets, sorted, disjoint
    source: str  # "fragments" | "claim_text" | "sentence" (see records.SPAN_SOURCES)


def _candidates(norm: Normalised, fragment: str) -> list[Span]:
    """Every word-bounded occurrence of a fragment in the sentence, as sentence offsets."""
    needle = normalise(fragment).text
    if not needle:
        return []
    return [(norm.origin[pos], norm.ends[pos + len(needle) - 1])
            for pos in _occurrences(norm.text, needle)]


def _distance(span: Span, others: Sequence[Span]) -> int:
    return min((max(0, o[0] - span[1], span[0] - o[1]) for o in others), default=0)


def _choose(found: list[list[Span]]) -> list[Span]:
    """One occurrence per fragment. A fragment found once is an anchor; a fragment found several
    times takes the occurrence nearest the anchors (else the first after the fragment before
    it), so that "the trial" in "the trial is free and the trial lasts 30 days" goes with
    "lasts 30 days"."""
    anchors = [spans[0] for spans in found if len(spans) == 1]
    chosen: list[Span] = []
    for spans in found:
        if len(spans) == 1 or anchors:
            chosen.append(min(spans, key=lambda s: (_distance(s, anchors), s[0])))
        else:
            after = chosen[-1][1] if chosen else 0
            chosen.append(next((s for s in spans if s[0] >= after), spans[0]))
    return chosen


def _union(spans: Sequence[Span], sentence: str) -> tuple[Span, ...]:
    """Spans merged where they overlap or only whitespace separates them."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and (start <= merged[-1][1] or not sentence[merged[-1][1]:start].strip()):
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return tuple((s, e) for s, e in merged)


def claim_spans(sentence: str, offset: int, claim: str,
                fragments: Sequence[str] = ()) -> ClaimSpans:
    """The answer spans of a claim of one sentence.

    Args:
        sentence: the answer sentence's text.
        offset: where the sentence starts in the answer.
        claim: the claim's text.
        fragments: the verbatim words of the sentence the claim restates (may be empty).

    Returns:
        The union of the aligned fragments (fragments that do not align are left out), else the
        claim text's span when it occurs in the sentence, else the whole sentence; with the
        source used.
    """
    norm = normalise(sentence)
    found = [spans for spans in (_candidates(norm, f) for f in fragments) if spans]
    source = "fragments"
    if not found:
        found = [spans for spans in (_candidates(norm, claim),) if spans]
        source = "claim_text"
    if not found:
        return ClaimSpans(((offset, offset + len(sentence)),), "sentence")
    chosen = _choose(found)
    return ClaimSpans(tuple((offset + s, offset + e) for s, e in _union(chosen, sentence)), source)


def label_spans(spans: Iterable[tuple[int, int, str]],
                order: Sequence[str] = ("CON", "NIC")) -> list[tuple[int, int, str]]:
    """Labelled spans made disjoint: each character takes the worst label of the spans that
    cover it (the first in `order`; a label not in `order` ranks after those), and touching
    pieces with the same label are joined. For an answer's hallucinated spans (claim spans may
    overlap: two claims restating the same words) and the report's marks."""
    items = [(s, e, label) for s, e, label in spans if e > s]
    cuts = sorted({p for s, e, _ in items for p in (s, e)})

    def rank(label: str) -> int:
        return order.index(label) if label in order else len(order)

    out: list[tuple[int, int, str]] = []
    for lo, hi in zip(cuts, cuts[1:], strict=False):
        covering = [label for s, e, label in items if s <= lo and hi <= e]
        if not covering:
            continue
        label = min(covering, key=rank)
        if out and out[-1][1] == lo and out[-1][2] == label:
            out[-1] = (out[-1][0], hi, label)
        else:
            out.append((lo, hi, label))
    return out
