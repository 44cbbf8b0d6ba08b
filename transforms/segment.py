"""Sentence segmentation with character offsets, and context windows.

Context sentences carry a global index over the whole context (documents in order) and their
offsets within their own document; answer sentences carry their span in the answer. Windows are
W consecutive context sentences overlapping by O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

import apache_beam as beam
import pysbd
from pysbd.between_punctuation import BetweenPunctuation

from rt4chart.schemas.records import (
    AnswerSentence,
    DeadLetter,
    Document,
    PreparedTrace,
    RenderedText,
    Sentence,
    Trace,
    Window,
)
from rt4chart.transforms.common.guard import GuardedDoFn
from rt4chart.transforms.common.limits import LimitsConfig, over_limit
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.text.headers import document_header
from rt4chart.transforms.text.language import detect
from rt4chart.transforms.validate import raw_text

# Text lines are segmented one by one: line breaks end sentences in lists, tables and records.
_LINE_RE = re.compile(r"[^\n]+")
# A "sentence" longer than this (a JSON blob, a table row without punctuation) is cut at the
# last comma or space before the limit, so that one window cannot grow without bound.
MAX_SENTENCE_CHARS = 1500
# pysbd is superlinear in the length of what it is given (each abbreviation it finds rewrites
# the whole text), so a line longer than PIECE_CHARS is segmented piece by piece: of each piece
# the sentences ending at least PIECE_MARGIN before its end are kept (pysbd's decisions look only
# a few characters ahead), and the next piece starts where the last one kept ended, at a
# boundary pysbd itself chose. Lines up to PIECE_CHARS are segmented whole, as they always were.
PIECE_CHARS = 3000
PIECE_MARGIN = 500
# Retrieved passages recur (the same chunks answer many questions; a backfill reads a corpus many
# times over), and pysbd takes about a millisecond a line: a line's sentences are kept for the
# next time it comes, in a bounded cache (lines are at most PIECE_CHARS: a few MB at most).
SEGMENT_CACHE_LINES = 2048


@dataclass(frozen=True)
class SegmentConfig:
    """Window size W and overlap O, in sentences, and the work limits per trace."""

    window_size: int = option(
        "--window-size",
        flex=Flex(
            "Context window size (sentences)",
            "W, sentences per local verification window. Default: 25.",
            regexes=("^[0-9]+$",)),
        default=25, parse=int,
        help="W, sentences (default 25)")
    window_overlap: int = option(
        "--window-overlap",
        flex=Flex(
            "Context window overlap (sentences)",
            "O, sentences shared by consecutive windows. Default: 10.",
            regexes=("^[0-9]+$",)),
        default=10, parse=int,
        help="O, sentences (default 10)")
    limits: LimitsConfig = LimitsConfig()

    def __post_init__(self) -> None:
        if self.window_size < 1:
            raise ValueError(f"window size must be >= 1, got {self.window_size}")
        if not 0 <= self.window_overlap < self.window_size:
            raise ValueError(
                f"window overlap must be >= 0 and < window size ({self.window_size}), "
                f"got {self.window_overlap}"
            )
        if not isinstance(self.limits, LimitsConfig):
            raise ValueError(f"limits must be a LimitsConfig, got {type(self.limits).__name__}")


# Languages whose own pysbd rules are used (their abbreviations and ordinals: "ca.", "3. Mai",
# "env."); any other text, and text whose language cannot be told (`text.language.detect`), is
# segmented with the English rules, which also end a sentence at 。！？.
PYSBD_LANGUAGES = frozenset({"de", "fr", "it", "es"})


@functools.cache
def _segmenter(language: str = "en") -> pysbd.Segmenter:
    return pysbd.Segmenter(language=language, clean=False)


def _language_of(text: str) -> str:
    language = detect(text)
    return language if language in PYSBD_LANGUAGES else "en"


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


@functools.lru_cache(maxsize=SEGMENT_CACHE_LINES)
def _segmented(segmenter: pysbd.Segmenter, line: str) -> tuple[str, ...]:
    """pysbd's sentences of `line` (the same for the same segmenter and text, see above)."""
    return tuple(segmenter.segment(line))


def _raw_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """pysbd's sentences of text[start:end] located in `text`, untrimmed, in order."""
    spans: list[tuple[int, int]] = []
    cursor = start
    line = text[start:end]
    language = _language_of(line)
    segmenter = _segmenter() if language == "en" else _segmenter(language)
    for piece in _segmented(segmenter, line):
        found = text.find(piece, cursor, end)
        if found < 0:  # the segmenter altered the text: keep the rest whole
            spans.append((cursor, end))
            return spans
        cursor = found + len(piece)
        spans.append((found, cursor))
    if cursor < end:
        spans.append((cursor, end))
    return spans


# Quotes, parentheses and dashes: pysbd does not split between a pair of them, and pairs them
# left to right over all it is given. A piece ends before the first opener it leaves unclosed,
# which the rest of the line might close.
_PAIRED = tuple(
    (re.compile(pattern), re.compile(opener)) for pattern, opener in (
        (BetweenPunctuation.BETWEEN_DOUBLE_QUOTES_REGEX_2, r'"'),
        (BetweenPunctuation.BETWEEN_PARENS_REGEX_2, r"\("),
        (BetweenPunctuation.BETWEEN_SQUARE_BRACKETS_REGEX_2, r"\["),
        (BetweenPunctuation.BETWEEN_QUOTE_SLANTED_REGEX_2, "\u201c"),
        (BetweenPunctuation.BETWEEN_QUOTE_ARROW_REGEX_2, "\u00ab"),
        (BetweenPunctuation.BETWEEN_EM_DASHES_REGEX_2, "--"),
        (BetweenPunctuation.BETWEEN_SINGLE_QUOTES_REGEX, r"(?<=\s)'"),
        (BetweenPunctuation.BETWEEN_SINGLE_QUOTE_SLANTED_REGEX, "(?<=\\s)\u2018"),
    )
)


def _first_unclosed(text: str, start: int, end: int) -> int:
    """Where the first opener of text[start:end] that pysbd would not pair within it is."""
    first = end
    for pair, opener in _PAIRED:
        spans = [m.span() for m in pair.finditer(text, start, end)]
        i = 0
        for m in opener.finditer(text, start, first):
            while i < len(spans) and spans[i][1] <= m.start():
                i += 1
            if i == len(spans) or spans[i][0] > m.start():
                first = m.start()
                break
    return first


def _line_spans(text: str, start: int, end: int, piece_chars: int) -> Iterator[tuple[int, int]]:
    """The sentence spans of one line, segmented in pieces of at most `piece_chars`."""
    margin = min(PIECE_MARGIN, piece_chars // 2)
    while end - start > piece_chars:
        limit = start + piece_chars
        spans = _raw_spans(text, start, limit)
        safe = min(limit - margin, _first_unclosed(text, start, limit))
        kept = [s for s in spans if s[1] <= safe] or [s for s in spans if s[1] <= limit - margin]
        cut = kept[-1][1] if kept else start
        if cut <= start:  # one sentence longer than the piece: cut it as _cut_long would
            first = _trimmed(text, start, limit)[0]
            cut = next(_cut_long(first, limit, text))[1]
            cut = min(cut, limit - margin) if cut > start else limit - margin
            kept = [(start, cut)]
        yield from kept
        start = cut
    yield from _raw_spans(text, start, end)


def iter_sentences(text: str, piece_chars: int = PIECE_CHARS) -> Iterator[tuple[int, int]]:
    """Sentence spans (start, end) of `text`, in order, whitespace trimmed, empty ones dropped.

    Lazy, and linear in the length of the text: a caller that needs only the first N sentences
    pays for about N. `piece_chars` is how long a line may be before it is segmented in pieces.
    """
    for line in _LINE_RE.finditer(text):
        for raw_start, raw_end in _line_spans(text, line.start(), line.end(), piece_chars):
            start, end = _trimmed(text, raw_start, raw_end)
            if start < end:
                for s, e in _cut_long(start, end, text):
                    yield _trimmed(text, s, e)


def split_sentences(text: str, piece_chars: int = PIECE_CHARS) -> list[tuple[int, int]]:
    """Sentence spans (start, end) of `text`, whitespace trimmed, empty ones dropped."""
    return list(iter_sentences(text, piece_chars))


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


class OverLimit(ValueError):
    """A trace over a work limit, with `oversize="reject"`: the message names the limit."""


def _context_over(n_sentences: int, chars: int, limits: LimitsConfig) -> str | None:
    if n_sentences >= limits.max_context_sentences:
        n = limits.max_context_sentences
        return over_limit("max_context_sentences", n, f"the context has more than {n} sentences")
    if chars > limits.max_context_chars:
        n = limits.max_context_chars
        return over_limit("max_context_chars", n, f"the context has more than {n} characters")
    return None


def _context_sentences(trace: Trace, limits: LimitsConfig) -> tuple[list[Sentence], str | None]:
    """The context's sentences, and why they stop short (truncate) or OverLimit (reject)."""
    total = sum(len(doc.text) for doc in trace.contexts)
    if not limits.truncate and total > limits.max_context_chars:
        raise OverLimit(over_limit("max_context_chars", limits.max_context_chars,
                                   f"the context has {total} characters"))
    sentences: list[Sentence] = []
    before = 0  # characters of the documents before this one
    for doc in trace.contexts:
        for start, end in iter_sentences(doc.text):
            over = _context_over(len(sentences), before + end, limits)
            if over is not None:
                if not limits.truncate or not sentences:
                    raise OverLimit(over)
                return sentences, f"{over}; audited the first {len(sentences)} context sentences"
            sentences.append(Sentence(len(sentences), doc.doc_id, start, end, doc.text[start:end]))
        before += len(doc.text)
    return sentences, None


def _answer_sentences(answer: str, limits: LimitsConfig) -> tuple[list[AnswerSentence], str | None]:
    """The answer's sentences, and why they stop short (truncate) or OverLimit (reject)."""
    n = limits.max_answer_sentences
    sentences: list[AnswerSentence] = []
    for start, end in iter_sentences(answer):
        if len(sentences) == n:
            over = over_limit("max_answer_sentences", n, f"the answer has more than {n} sentences")
            if not limits.truncate:
                raise OverLimit(over)
            return sentences, f"{over}; audited the first {n} answer sentences"
        sentences.append(AnswerSentence(len(sentences), start, end, answer[start:end]))
    return sentences, None


def _cut_contexts(trace: Trace, sentences: list[Sentence]) -> tuple[Document, ...]:
    """The documents cut after the last sentence kept (offsets stay valid: prefixes only)."""
    ends: dict[str, int] = {}
    for s in sentences:
        ends[s.doc_id] = s.end
    return tuple(Document(d.doc_id, d.text[: ends[d.doc_id]]) for d in trace.contexts
                 if d.doc_id in ends)


def prepare(trace: Trace, config: SegmentConfig) -> PreparedTrace:
    """Segment context and answer and cut the context into windows.

    Raises:
        OverLimit: the trace is over a work limit and `config.limits.oversize` is "reject".
            With "truncate" the trace is cut after its last sentence kept and marked partial.
    """
    limits = config.limits
    sentences, context_note = _context_sentences(trace, limits)
    answer_sentences, answer_note = _answer_sentences(trace.answer, limits)
    notes = [note for note in (context_note, answer_note) if note]
    if context_note:
        trace = replace(trace, contexts=_cut_contexts(trace, sentences))
    if answer_note:
        trace = replace(trace, answer=trace.answer[: answer_sentences[-1].end])
    windows = make_windows(len(sentences), config.window_size, config.window_overlap)
    return PreparedTrace(trace, tuple(sentences), tuple(answer_sentences), windows,
                         partial=bool(notes), partial_reason="; ".join(notes) or None)


def render_window(prepared: PreparedTrace, window: Window) -> RenderedText:
    """A window as the judge sees it: its sentences, one per line."""
    parts, segments, offset = [], [], 0
    for s in prepared.sentences[window.first : window.last + 1]:
        segments.append((offset, s))
        parts.append(s.text)
        offset += len(s.text) + 1
    return RenderedText("\n".join(parts), tuple(segments))


def render_context(prepared: PreparedTrace) -> RenderedText:
    """The full context: each document under a header, its text unchanged. Only the documents'
    sentences are in `segments`: the headers and the blank lines between documents are not
    evidence."""
    by_doc: dict[str, list[Sentence]] = {}
    for s in prepared.sentences:
        by_doc.setdefault(s.doc_id, []).append(s)
    parts: list[str] = []
    segments: list[tuple[int, Sentence]] = []
    offset = 0
    for n, doc in enumerate(prepared.trace.contexts, start=1):
        header = document_header(n, doc.doc_id)
        base = offset + len(header)
        segments.extend((base + s.start, s) for s in by_doc.get(doc.doc_id, ()))
        parts.append(header + doc.text)
        offset = base + len(doc.text) + 2
    return RenderedText("\n\n".join(parts), tuple(segments))


class SegmentOutputs(NamedTuple):
    prepared: beam.PCollection[PreparedTrace]
    dead_letters: beam.PCollection[DeadLetter]


class _PrepareFn(GuardedDoFn):
    stage = "segment"

    def __init__(self, config: SegmentConfig):
        self._config = config

    def process(self, trace: Trace):
        try:
            prepared = prepare(trace, self._config)
        except OverLimit as exc:
            yield self._dead(trace, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a bad record must not stop the run
            yield self._dead(trace, f"segmentation failed: {exc!r}")
            return
        if not prepared.sentences and trace.contexts:  # no contexts: nothing was retrieved
            yield self._dead(trace, "context has no sentences")
            return
        yield prepared

    @staticmethod
    def _dead(trace: Trace, reason: str) -> beam.pvalue.TaggedOutput:
        return beam.pvalue.TaggedOutput(
            "dead", DeadLetter("segment", reason, raw_text(trace), trace.trace_id, trace.route))


class Segment(beam.PTransform):
    """Trace -> PreparedTrace (sentences with offsets, answer sentences, windows).

    A trace whose context yields no sentence, or over a work limit of `config.limits` (with
    `oversize="reject"`), goes to the dead letters; with "truncate" it is cut and marked partial.
    """

    def __init__(self, config: SegmentConfig):
        super().__init__()
        self._config = config

    def expand(self, traces: beam.PCollection[Trace]) -> SegmentOutputs:
        out = traces | "Prepare" >> beam.ParDo(_PrepareFn(self._config)).with_outputs(
            "dead", main="prepared"
        )
        return SegmentOutputs(out.prepared, out.dead)
