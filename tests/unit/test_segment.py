from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms import segment
from rt4chart.transforms.segment import (
    MAX_SENTENCE_CHARS,
    PIECE_CHARS,
    SegmentConfig,
    make_windows,
    prepare,
    render_context,
    render_window,
    split_sentences,
)

DATA = Path(__file__).parent.parent / "data"


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
    # Lines long enough to be segmented in pieces.
    "word " * 5000,
    "b" * (3 * PIECE_CHARS + 5),
    'He said "it will rain. It will pour. ' + "The sky is grey. " * 400 + 'Then it stopped."',
    "(" + "An aside. " * 600,
    " -- ".join(["Dr. Who met Mr. Smith at 5 p.m. on Jan. 3rd. They spoke."] * 120),
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


SENTENCES = [
    "Dr. Smith paid $3.50 for 2.5 kg of apples on Jan. 3rd.",
    "The U.S. team (led by Mr. Jones of St. Louis) won 3-1 in the final.",
    '"We will be back next year. We promise," the coach said.',
    "He left at 5 p.m. and arrived at 9 a.m. the next day.",
    "Sales rose 4.2% -- the best quarter since 2019 -- according to the report.",
    "It's the players' choice, she said; e.g. the captain's.",
    "What happened next? Nobody knows!",
    "The file report.pdf was sent to info@example.com at 10:30.",
    "Prices (see Table 2.) vary by region [Fig. 3. shows why].",
]


def paragraph(n: int) -> str:
    """n varied sentences on one line: abbreviations, decimals, quotes, parentheses, dashes."""
    return " ".join(SENTENCES[i % len(SENTENCES)].replace("the", f"the{i % 7 or ''}", 1)
                    for i in range(n))


@pytest.mark.parametrize("piece_chars", [PIECE_CHARS, 1000])
def test_a_long_paragraph_in_pieces_gives_the_sentences_of_the_whole(piece_chars):
    text = paragraph(300)
    assert len(text) > 5 * PIECE_CHARS
    whole = split_sentences(text, piece_chars=len(text))  # one pysbd call: today's splitter
    assert len(whole) >= 300
    assert split_sentences(text, piece_chars=piece_chars) == whole


def test_real_prose_on_one_line_splits_in_pieces_as_a_whole():
    # The sample's passages and answers (not its JSON records, whose quotes pysbd pairs across
    # the whole line), each made one line and cut in pieces smaller than the default.
    records = [json.loads(line) for line in (DATA / "ragtruth_sample.jsonl").open()]
    texts = [c["text"] if isinstance(c, dict) else c for r in records for c in r["contexts"]]
    texts += [r["answer"] for r in records]
    lines = [re.sub(r"\s+", " ", t) for t in texts if isinstance(t, str) and t[:1] not in "{["]
    pieced = [line for line in lines if len(line) > 2000]
    assert len(pieced) >= 3
    for line in pieced:
        assert split_sentences(line, piece_chars=2000) == split_sentences(line, len(line))


class _Recording:
    """The real segmenter, recording the length of every text it is given."""

    def __init__(self):
        self.calls: list[int] = []
        self._real = segment._segmenter()

    def segment(self, text: str) -> list[str]:
        self.calls.append(len(text))
        return self._real.segment(text)


@pytest.fixture
def recording(monkeypatch):
    rec = _Recording()
    monkeypatch.setattr(segment, "_segmenter", lambda: rec)
    return rec


def test_the_splitter_sees_bounded_pieces_and_each_character_about_once(recording):
    text = paragraph(600)
    spans = split_sentences(text)
    assert max(recording.calls) <= PIECE_CHARS
    assert sum(recording.calls) < 1.5 * len(text)  # what is segmented twice: the margins
    assert "".join(text[s:e] for s, e in spans).replace(" ", "") == text.replace(" ", "")


def test_sentences_are_found_lazily(recording):
    text = paragraph(2000)
    first = list(itertools.islice(segment.iter_sentences(text), 5))
    assert recording.calls == [PIECE_CHARS]  # one piece of a 100-piece line
    assert first == split_sentences(text)[:5]


def test_a_line_without_sentence_ends_is_cut_at_spaces():
    text = " ".join(f"w{i}" for i in range(4000))
    spans = split_sentences(text)
    assert all(text[s:e] == text[s:e].strip() and e - s <= MAX_SENTENCE_CHARS for s, e in spans)
    assert " ".join(text[s:e] for s, e in spans).split() == text.split()
    assert all(not text[s:e].endswith(("w", "w1")) or text[e:e + 1] in (" ", "")
               for s, e in spans)  # words are whole


def test_sentences_longer_than_a_piece_are_cut_as_on_the_whole_line():
    long = ", ".join(f"item number {i} of the list" for i in range(150)) + "."
    assert len(long) > PIECE_CHARS
    text = " ".join(["A short one.", long, "Another short one here.", long, long, "End."] * 3)
    spans = split_sentences(text)
    assert spans == split_sentences(text, piece_chars=len(text))
    assert max(e - s for s, e in spans) <= MAX_SENTENCE_CHARS


# A line seen again (a passage retrieved for another question) is not segmented again, and its
# sentences are the same as when it was first segmented.

_PROSE = st.text(alphabet=st.sampled_from(list("abcdefghij ABC.!?,;:'\"()-0123456789\n")),
                 max_size=400)


@settings(max_examples=200, deadline=None)
@given(_PROSE)
def test_a_line_seen_again_gets_the_sentences_it_got_first(text):
    first = split_sentences(text)
    segment._segmented.cache_clear()
    fresh = split_sentences(text)
    again = split_sentences(text)
    assert first == fresh == again


def test_a_repeated_line_is_segmented_once(recording):
    line = "The plant opened in 1998. It employs 420 people. Output doubled in 2005."
    text = "\n".join([line, "Another line here. With two sentences.", line, line])
    spans = split_sentences(text)
    assert sorted(recording.calls) == sorted([len(line), len("Another line here. With two "
                                                              "sentences.")])
    per_line = [text[s:e] for s, e in spans]
    assert per_line[:3] == per_line[5:8] == per_line[8:11]


def test_the_line_cache_is_bounded(recording):
    lines = [f"Sentence number {i} is here. And one more." for i in
             range(segment.SEGMENT_CACHE_LINES + 50)]
    for line in lines:
        split_sentences(line)
    assert segment._segmented.cache_info().currsize <= segment.SEGMENT_CACHE_LINES
    recording.calls.clear()
    split_sentences(lines[0])  # pushed out by the newer lines: segmented again
    assert recording.calls == [len(lines[0])]
