from __future__ import annotations

import pytest

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.segment import (
    MAX_SENTENCE_CHARS,
    SegmentConfig,
    make_windows,
    prepare,
    render_context,
    render_window,
    split_sentences,
)


def texts(text: str) -> list[str]:
    return [text[s:e] for s, e in split_sentences(text)]


def test_abbreviations_decimals_and_line_breaks():
    text = "Dr. Smith paid $3.50 for 2.5 kg. He left at 5 p.m. on Jan. 3rd.\n- item one\n- item two"
    assert texts(text) == [
        "Dr. Smith paid $3.50 for 2.5 kg.",
        "He left at 5 p.m. on Jan. 3rd.",
        "- item one",
        "- item two",
    ]


@pytest.mark.parametrize("text", [
    "",
    "   \n\n  ",
    "No final stop",
    '{"name": "Joe\'s", "stars": 4.5, "hours": {"Mon": "9-5"}}',
    "Zürich hat 421 878 Einwohner.  東京は日本の首都です。 Ça va?",
    "a" * (3 * MAX_SENTENCE_CHARS + 17),
    "Line one.\r\nLine two.\tTabbed.",
])
def test_spans_are_exact_trimmed_and_ordered(text):
    spans = split_sentences(text)
    last = 0
    for start, end in spans:
        assert last <= start < end <= len(text)
        piece = text[start:end]
        assert piece == piece.strip() and piece
        assert end - start <= MAX_SENTENCE_CHARS
        last = end
    covered = "".join(text[s:e] for s, e in spans)
    assert "".join(covered.split()) == "".join(text.split())  # nothing but whitespace is lost


def test_windows_of_the_paper_example():
    assert [(w.first, w.last) for w in make_windows(4, 2, 1)] == [(0, 1), (1, 2), (2, 3)]


@pytest.mark.parametrize("n,size,overlap", [(1, 25, 10), (25, 25, 10), (26, 25, 10),
                                            (100, 25, 10), (7, 3, 0), (10, 4, 3)])
def test_windows_cover_every_sentence_with_the_overlap(n, size, overlap):
    windows = make_windows(n, size, overlap)
    assert windows[0].first == 0 and windows[-1].last == n - 1
    for a, b in zip(windows, windows[1:], strict=False):
        assert b.first - a.first == size - overlap
        assert a.last - b.first + 1 == overlap
    assert all(w.last - w.first + 1 <= size for w in windows)
    assert make_windows(0, size, overlap) == ()


@pytest.mark.parametrize("size,overlap", [(0, 0), (5, 5), (5, 7), (5, -1)])
def test_invalid_window_config(size, overlap):
    with pytest.raises(ValueError):
        SegmentConfig(size, overlap)


def test_prepare_indexes_sentences_over_documents_with_doc_offsets():
    trace = Trace("t", "r", 0, "q", (Document("a", "One. Two."), Document("b", "Three.")),
                  "Ans one. Ans two.")
    p = prepare(trace, SegmentConfig(2, 1))
    assert [(s.index, s.doc_id, s.start, s.end, s.text) for s in p.sentences] == [
        (0, "a", 0, 4, "One."), (1, "a", 5, 9, "Two."), (2, "b", 0, 6, "Three.")]
    assert [(s.start, s.end) for s in p.answer_sentences] == [(0, 8), (9, 17)]
    window = render_window(p, p.windows[1])
    assert window.text == "Two.\nThree."
    context = render_context(p)
    for offset, s in context.segments:
        assert context.text[offset:offset + len(s.text)] == s.text
    assert "[Document 2: b]" in context.text
