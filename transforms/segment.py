"""Sentence segmentation with character offsets, and context windows.

Context sentences carry a global index over the whole context (documents in order) and their
offsets within their own document; answer sentences carry their span in the answer. Windows are
W consecutive context sentences overlapping by O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import apache_beam as beam
import pysbd

from rt4chart.schemas.records import (
    AnswerSentence,
    DeadLetter,
    PreparedTrace,
    RenderedText,
    Sentence,
    Trace,
    Window,
)
from rt4chart.transforms.validate import raw_text

# Text lines are segmented one by one: line breaks end sentences in lists, tables and records,
# and pysbd is superlinear on long inputs.
_LINE_RE = re.compile(r"[^\n]+")
# A "sentence" longer than this (a JSON blob, a table row without punctuation) is cut at the
# last comma or space before the limit, so that one window cannot grow without bound.
MAX_SENTENCE_CHARS = 1500


@dataclass(frozen=True)
class SegmentConfig:
    """Window size W and overlap O, in sentences."""

    window_size: int = 25
    window_overlap: int = 10

    def __post_init__(self) -> None:
        if self.window_size < 1:
            raise ValueError(f"window size must be >= 1, got {self.window_size}")
        if not 0 <= self.window_overlap < self.window_size:
            raise ValueError(
                f"window overlap must be >= 0 and < window size ({self.window_size}), "
                f"got {self.window_overlap}"
            )


@functools.cache
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False)


def _cut_long(start: int, end: int, text: str) -> Iterator[tuple[int, int]]:
    while end - start > MAX_SENTENCE_CHARS:
        limit = start + MAX_SENTENCE_CHARS
        cut = max(text.rfind(", ", start, limit), text.rfind(" ", start, limit))
        cut = limit if cut <= start else cut + 1
        yield start, cut
        start = cut
    yield start, end


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end) of `text`, whitespace trimmed, empty ones dropped."""
    spans: list[tuple[int, int]] = []
    for line in _LINE_RE.finditer(text):
        cursor, line_end = line.start(), line.end()
        for piece in _segmenter().segment(line.group()):
            found = text.find(piece, cursor, line_end)
            if found < 0:  # the segmenter altered the text: keep the rest of the line whole
                found, piece = cursor, text[cursor:line_end]
            start, end = _trimmed(text, found, found + len(piece))
            cursor = found + len(piece)
            if start < end:
                spans.extend(_cut_long(start, end, text))
        if cursor < line_end:
            start, end = _trimmed(text, cursor, line_end)
            if start < end:
                spans.extend(_cut_long(start, end, text))
    return [_trimmed(text, s, e) for s, e in spans]


def make_windows(n_sentences: int, size: int, overlap: int) -> tuple[Window, ...]:
    """Windows of `size` sentences, each starting `size - overlap` after the previous one."""
    windows: list[Window] = []
    step = size - overlap
    first = 0
    while first < n_sentences:
        last = min(first + size, n_sentences) - 1
        windows.append(Window(len(windows), first, last))
        if last == n_sentences - 1:
            break
        first += step
    return tuple(windows)


def prepare(trace: Trace, config: SegmentConfig) -> PreparedTrace:
    """Segment context and answer and cut the context into windows."""
    sentences: list[Sentence] = []
    for doc in trace.contexts:
        for start, end in split_sentences(doc.text):
            sentences.append(Sentence(len(sentences), doc.doc_id, start, end, doc.text[start:end]))
    answer_sentences = tuple(
        AnswerSentence(i, s, e, trace.answer[s:e])
        for i, (s, e) in enumerate(split_sentences(trace.answer))
    )
    windows = make_windows(len(sentences), config.window_size, config.window_overlap)
    return PreparedTrace(trace, tuple(sentences), answer_sentences, windows)


def render_window(prepared: PreparedTrace, window: Window) -> RenderedText:
    """A window as the judge sees it: its sentences, one per line."""
    parts, segments, offset = [], [], 0
    for s in prepared.sentences[window.first : window.last + 1]:
        segments.append((offset, s))
        parts.append(s.text)
        offset += len(s.text) + 1
    return RenderedText("\n".join(parts), tuple(segments))


def render_context(prepared: PreparedTrace) -> RenderedText:
    """The full context: each document under a header, its text unchanged."""
    by_doc: dict[str, list[Sentence]] = {}
    for s in prepared.sentences:
        by_doc.setdefault(s.doc_id, []).append(s)
    parts: list[str] = []
    segments: list[tuple[int, Sentence]] = []
    offset = 0
    for n, doc in enumerate(prepared.trace.contexts, start=1):
        header = f"[Document {n}: {doc.doc_id}]\n"
        base = offset + len(header)
        segments.extend((base + s.start, s) for s in by_doc.get(doc.doc_id, ()))
        parts.append(header + doc.text)
        offset = base + len(doc.text) + 2
    return RenderedText("\n\n".join(parts), tuple(segments))


class SegmentOutputs(NamedTuple):
    prepared: beam.PCollection[PreparedTrace]
    dead_letters: beam.PCollection[DeadLetter]


class _PrepareFn(beam.DoFn):
    def __init__(self, config: SegmentConfig):
        self._config = config

    def process(self, trace: Trace):
        try:
            prepared = prepare(trace, self._config)
        except Exception as exc:  # noqa: BLE001 - a bad record must not stop the run
            yield beam.pvalue.TaggedOutput(
                "dead", DeadLetter("segment", f"segmentation failed: {exc!r}", raw_text(trace),
                                   trace.trace_id, trace.route)
            )
            return
        if not prepared.sentences:
            yield beam.pvalue.TaggedOutput(
                "dead", DeadLetter("segment", "context has no sentences", raw_text(trace),
                                   trace.trace_id, trace.route)
            )
            return
        yield prepared


class Segment(beam.PTransform):
    """Trace -> PreparedTrace (sentences with offsets, answer sentences, windows).

    A trace whose context yields no sentence goes to the dead letters.
    """

    def __init__(self, config: SegmentConfig):
        super().__init__()
        self._config = config

    def expand(self, traces: beam.PCollection[Trace]) -> SegmentOutputs:
        out = traces | "Prepare" >> beam.ParDo(_PrepareFn(self._config)).with_outputs(
            "dead", main="prepared"
        )
        return SegmentOutputs(out.prepared, out.dead)
