"""Bytes to lines, without a pipeline: records over the size limit skipped while read, CR-only
line endings, files that are not text, sizes given on the command line."""

from __future__ import annotations

import io

import pytest

from rt4chart.pipeline.storage import text_files as textfiles
from rt4chart.pipeline.storage.text_files import (
    NotTextError,
    Oversize,
    byte_size,
    numbered_lines,
    split_lines,
)


class _Lazy(io.RawIOBase):
    """A stream of `n` bytes of `fill` then `tail`, made as read (never held whole); records
    the largest read asked of it."""

    def __init__(self, n: int, fill: bytes, tail: bytes):
        self._left, self._fill, self._tail = n, fill, tail

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        if self._left > 0:
            n = min(self._left, size if size > 0 else 1 << 16)
            self._left -= n
            return self._fill * n
        tail, self._tail = self._tail, b""
        return tail


def _shapes(lines):
    return [(n, ("over", d.size) if isinstance(d, Oversize) else d) for n, d, _ in lines]


def test_a_line_over_the_limit_is_skipped_while_read_and_the_next_lines_are_kept():
    big = b'{"trace_id": "big", "x": "' + b"y" * 5000 + b'"}'
    data = b'{"a": 1}\n' + big + b'\n{"b": 2}\nzz'
    assert _shapes(numbered_lines(io.BytesIO(data), 1000)) == [
        (1, b'{"a": 1}'), (2, ("over", len(big))), (3, b'{"b": 2}'), (4, b"zz")]


def test_an_oversized_line_keeps_its_first_bytes_for_the_dead_letter():
    data = b'{"trace_id": "big", "x": "' + b"y" * 5000 + b'"}'
    (_, line, _), = numbered_lines(io.BytesIO(data), 1000)
    assert line == Oversize(len(data), data[:textfiles.HEAD_KEEP])


@pytest.mark.parametrize("chunk", [3, 7, 64])
def test_oversized_utf16_lines_are_skipped_at_code_unit_newlines(monkeypatch, chunk):
    monkeypatch.setattr(textfiles, "CHUNK_BYTES", chunk)
    # U+0A0D is the bytes 0d 0a in UTF-16-LE: never a newline, however the chunks fall
    text = '{"a": "' + "\u0a0d" * 300 + '"}\n{"b": 2}\n'
    lines = list(split_lines(b"", io.BytesIO(text.encode("utf-16-le")), b"\n\x00", 100))
    assert [type(x) for x in lines] == [Oversize, bytes]
    assert lines[0].size == 2 * len(text.split("\n")[0])
    assert lines[1] == '{"b": 2}'.encode("utf-16-le")


def test_a_gigabyte_line_is_skipped_without_being_held():
    stream = _Lazy(1 << 30, b"x", b'\n{"b": 2}\n')  # made as read: 1 GiB never exists at once
    assert _shapes(numbered_lines(stream, 1 << 20)) == [(1, ("over", 1 << 30)), (2, b'{"b": 2}')]


def test_lines_within_the_limit_are_unchanged(monkeypatch):
    monkeypatch.setattr(textfiles, "CHUNK_BYTES", 5)
    data = b"a" * 40 + b"\n" + b"b" * 10
    assert list(split_lines(b"", io.BytesIO(data), b"\n", 40)) == [b"a" * 40, b"b" * 10]


@pytest.mark.parametrize("codec", ["utf-8", "utf-16-le"])
def test_lines_ending_with_cr_alone_are_split_at_cr(codec):
    text = '{"a": 1}\r{"b": 2}\r\r{"c": 3}'
    lines = [(n, d.decode(codec)) for n, d, _ in numbered_lines(
        io.BytesIO(text.encode(codec)), name="old.jsonl")]
    assert lines == [(1, '{"a": 1}'), (2, '{"b": 2}'), (3, ""), (4, '{"c": 3}')]


def test_crlf_is_one_line_break():
    lines = [d for _, d, _ in numbered_lines(io.BytesIO(b'{"a": 1}\r\n{"b": 2}\r\n'))]
    assert lines == [b'{"a": 1}', b'{"b": 2}']


@pytest.mark.parametrize("codec", ["utf-8", "utf-16-le", "utf-16-be"])
@pytest.mark.parametrize("data, expected", [
    # issue 33, defect 5: the first record ended in CR and the rest in LF gave 1 answer plus
    # 1 dead letter holding 4 traces; the reverse folded 3 traces into one dead letter
    ("a\rb\nc\nd\ne\n", ["a", "b", "c", "d", "e"]),
    ("a\nb\nc\rd\re\r", ["a", "b", "c", "d", "e"]),
    ("a\r\nb\rc\nd\r\n\re", ["a", "b", "c", "d", "", "e"]),
    ("a\n\rb", ["a", "", "b"]),  # LF then CR: two breaks, not one
])
def test_cr_lf_and_crlf_are_each_a_break_wherever_they_come(monkeypatch, codec, data, expected):
    for chunk in (1, 2, 3, 5, 64):
        monkeypatch.setattr(textfiles, "CHUNK_BYTES", chunk)
        lines = [d.decode(codec) for _, d, _ in numbered_lines(io.BytesIO(data.encode(codec)))]
        assert lines == expected, chunk


def test_a_stream_of_nul_bytes_is_not_text():
    with pytest.raises(NotTextError, match="starts with NUL bytes: not text"):
        next(numbered_lines(_Lazy(1 << 40, b"\x00", b"")))


@pytest.mark.parametrize("text, size", [("16M", 16 << 20), ("16MiB", 16 << 20), ("512k", 512 << 10),
                                        ("1048576", 1 << 20), (" 2 g ", 2 << 30)])
def test_sizes_in_bytes(text, size):
    assert byte_size(text) == size


@pytest.mark.parametrize("text", ["", "16X", "-1", "1.5M", "M"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(ValueError, match="not a size in bytes"):
        byte_size(text)


def test_a_file_a_glob_found_is_itself_even_with_brackets_in_its_name(tmp_path):
    from rt4chart.pipeline.storage.text_files import input_paths

    odd = tmp_path / "a[1].jsonl"
    odd.write_text("{}\n")
    found = input_paths(str(tmp_path / "*.jsonl"))
    assert found == [str(odd)]
    # the run matches each found file again: brackets must not turn it into a pattern
    assert input_paths(found[0]) == [str(odd)]
