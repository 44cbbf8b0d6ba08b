"""Hypothesis properties of the line splitter (pipeline/storage/text_files.py): CR LF, CR and LF are
each one line break wherever they come, in UTF-8 and UTF-16 (either byte order), however the
stream's chunks fall, and a line over the record limit is skipped with its exact size."""

from __future__ import annotations

import io
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rt4chart.pipeline.storage import text_files as textfiles
from rt4chart.pipeline.storage.text_files import HEAD_KEEP, Oversize, split_lines

NEWLINES = {"utf-8": b"\n", "utf-16-le": b"\n\x00", "utf-16-be": b"\x00\n"}
# Text dense in the characters that look like breaks in some encoding: CR, LF, and code points
# whose UTF-16 bytes hold 0x0A or 0x0D (U+0A0D, U+0D0A, U+0A00, U+000A's neighbours).
PIECES = st.sampled_from(["\r", "\n", "\r\n", "a", "é", "\u0a0d", "\u0d0a", "\u0a00",
                          "\u0d00", "\u4e00", "\U0001f600", " ", "{}"])
TEXTS = st.lists(PIECES, max_size=40).map("".join)


class _Chunked(io.RawIOBase):
    """A stream whose reads return the sizes given, in turn (then the rest)."""

    def __init__(self, data: bytes, sizes: list[int]):
        self._data, self._sizes = data, list(sizes)

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        n = self._sizes.pop(0) if self._sizes else size
        out, self._data = self._data[:n], self._data[n:]
        return out


def expected_lines(text: str) -> list[str]:
    """The model: Python's split at CR LF, CR and LF, without the empty piece a final break
    leaves."""
    lines = re.split("\r\n|\r|\n", text)
    return lines[:-1] if lines[-1] == "" else lines


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, codec=st.sampled_from(sorted(NEWLINES)),
       sizes=st.lists(st.integers(1, 9), max_size=30), head=st.integers(0, 6))
def test_every_cr_lf_and_crlf_is_one_break_however_the_chunks_fall(text, codec, sizes, head):
    data = text.encode(codec)
    head = head * (2 if codec != "utf-8" else 1)
    lines = list(split_lines(data[:head], _Chunked(data[head:], sizes), NEWLINES[codec]))
    assert [line.decode(codec) for line in lines] == expected_lines(text)


@settings(max_examples=200, deadline=None)
@given(text=TEXTS, codec=st.sampled_from(sorted(NEWLINES)), limit=st.integers(2, 24),
       chunk=st.integers(1, 7))
def test_lines_over_the_limit_are_skipped_with_their_exact_size(text, codec, limit, chunk):
    textfiles_chunk = textfiles.CHUNK_BYTES
    textfiles.CHUNK_BYTES = chunk
    try:
        got = list(split_lines(b"", io.BytesIO(text.encode(codec)), NEWLINES[codec], limit))
    finally:
        textfiles.CHUNK_BYTES = textfiles_chunk
    want = []
    for line in expected_lines(text):
        data = line.encode(codec)
        want.append(Oversize(len(data), data[:HEAD_KEEP]) if len(data) > limit else data)
    assert [g.size if isinstance(g, Oversize) else g for g in got] == [
        w.size if isinstance(w, Oversize) else w for w in want]
