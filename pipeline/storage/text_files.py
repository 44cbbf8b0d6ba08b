"""Text files read line by line, bytes to text: decompression that notices a truncated file,
the encoding from the byte order mark, lines split without reading a file whole, and the dead
letter of a line that is not valid text. No pipeline here: `io.ReadTraces` runs
it in a DoFn."""

from __future__ import annotations

import bz2
import codecs
import contextlib
import gzip
import logging
import lzma
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import orjson
import zstandard
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.storage.compressed import zlib_reader, zstd_reader
from rt4chart.schemas.records import DeadLetter

logger = logging.getLogger(__name__)

STAGE = "read"
CHUNK_BYTES = 1 << 16
HEAD_KEEP = 1024  # bytes of an oversized line kept for its dead letter
# A record (a JSONL line, a Parquet row) over this many bytes is dead-lettered while it is
# read, before it is parsed. A trace within every field and work limit (1 M context characters,
# at most 12 bytes each as JSON \u escapes, plus its answer and question) fits in 16 MiB; parsing
# one costs about 15 times its size in memory, so one record stays within a few hundred MB.
DEFAULT_MAX_RECORD_BYTES = 16 << 20
MIN_RECORD_BYTES = 1024  # below this even a minimal trace would not fit
_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def byte_size(text: str) -> int:
    """A size in bytes from text such as 16777216, 16M, 16MiB or 512k (units are binary:
    k = 1024); ValueError on anything else."""
    found = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if not found or found.group(2) not in _UNITS:
        raise ValueError(f"not a size in bytes: {text!r} (e.g. 16M, 512k, 1048576)")
    return int(found.group(1)) * _UNITS[found.group(2)]

# Every compression Beam detects by suffix (.gz, .bz2, .xz/.lzma, .deflate, .zst/.zstd) is
# read through a decompressor that raises on a truncated or corrupt stream (EOFError, the
# codec's error); Beam's own reader stops silently where the data ends.
_STRICT_DECOMPRESSORS = {
    CompressionTypes.GZIP: lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    CompressionTypes.BZIP2: bz2.BZ2File,
    CompressionTypes.LZMA: lzma.LZMAFile,
    CompressionTypes.DEFLATE: zlib_reader,
    CompressionTypes.ZSTD: zstd_reader,
}
# What a damaged file raises while it is read (gzip.BadGzipFile and bz2's are OSErrors).
READ_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError)


@contextlib.contextmanager
def open_input(path: str) -> Iterator[BinaryIO]:
    """A file's bytes, decompressed by its suffix; a truncated or corrupt compressed file
    raises one of READ_ERRORS while it is read."""
    kind = CompressionTypes.detect_compression_type(path)
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(
            FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED))
        if kind in _STRICT_DECOMPRESSORS:
            yield stack.enter_context(_STRICT_DECOMPRESSORS[kind](raw))
        else:
            yield raw


def read_at_least(stream: BinaryIO, n: int) -> bytes:
    """At least `n` bytes of `stream` (fewer only at its end), read in CHUNK_BYTES steps."""
    head = b""
    read = getattr(stream, "read1", stream.read)
    while len(head) < n and (chunk := read(CHUNK_BYTES)):
        head += chunk
    return head


def text_encoding(head: bytes) -> tuple[str, bytes, int]:
    """(codec, newline bytes, BOM length) of a text file from its first bytes: a UTF-8 or
    UTF-16 BOM, else UTF-16 when the first character has a zero byte (JSON text starts with an
    ASCII character: RFC 4627's detection), else UTF-8."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", b"\n", len(codecs.BOM_UTF8)
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", b"\n\x00", 2
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", b"\x00\n", 2
    if len(head) >= 2 and head[0] and not head[1]:
        return "utf-16-le", b"\n\x00", 0
    if len(head) >= 2 and not head[0] and head[1]:
        return "utf-16-be", b"\x00\n", 0
    return "utf-8", b"\n", 0


@dataclass(frozen=True)
class Oversize:
    """A line longer than the record limit, skipped while it was read (never held whole).

    Attributes:
        size: its length in bytes (all of it, counted while skipping to its newline).
        head: its first HEAD_KEEP bytes, for the dead letter.
    """

    size: int
    head: bytes


class LineBreaks:
    """The line breaks of an encoding: CR LF, CR alone and LF alone, each one break wherever it
    comes (a file may mix them), found only where they start a code unit (a UTF-16 break is
    two or four bytes at an even offset from the line's start).

    JSON text cannot hold a raw CR or LF inside a string, so splitting at every one of them
    never cuts a record. Breaks are found with `bytearray.find` (memchr), not a regular
    expression, which reads about a hundred times slower.
    """

    def __init__(self, newline: bytes):
        self.lf = newline
        self.cr = newline.replace(b"\n", b"\r")
        self.width = len(newline)

    def _find(self, buf: bytearray, unit: bytes, start: int, origin: int) -> int:
        """The next `unit` in `buf` from `start` at a code unit boundary from `origin`, or -1."""
        while (at := buf.find(unit, start)) >= 0 and (at - origin) % self.width:
            start = at + 1
        return at

    def scan(self, buf: bytearray, search: int, origin: int, final: bool,
             limit: int | None = None) -> tuple[list[tuple[int, int]], int]:
        """The breaks in `buf` from `search` (at most `limit`), as (start, end), with code
        units counted from `origin`; and where the search must go on once more bytes are in:
        after the last break, or at a CR at the end that the next bytes may make a CR LF
        (unless `final`), or at a code unit cut by the end of `buf`."""
        width, found = self.width, []
        lf = self._find(buf, self.lf, search, origin)
        cr = self._find(buf, self.cr, search, origin)
        while (lf >= 0 or cr >= 0) and (limit is None or len(found) < limit):
            if cr < 0 or 0 <= lf < cr:
                found.append((lf, lf + width))
                lf = self._find(buf, self.lf, lf + width, origin)
                continue
            end = cr + width
            if not final and len(buf) - end < width:
                return found, cr  # a CR LF may be cut here: decide with the next bytes
            if buf[end:end + width] == self.lf:
                end += width
                lf = self._find(buf, self.lf, end, origin)
            found.append((cr, end))
            cr = self._find(buf, self.cr, end, origin)
        if found and (lf >= 0 or cr >= 0):  # stopped at `limit`
            return found, found[-1][1]
        return found, len(buf) - (len(buf) - origin) % width


def _skip_line(buf: bytearray, read, breaks: LineBreaks) -> tuple[int, bytearray | None]:
    """Read past the line that `buf` starts (no line break in it yet) without keeping it: (its
    size in bytes, the bytes after its line break; None at the end of the stream)."""
    size, final = 0, False
    while True:
        found, resume = breaks.scan(buf, 0, -size, final, limit=1)
        if found:
            return size + found[0][0], buf[found[0][1]:]
        if final:
            return size + len(buf), None
        size += resume
        del buf[:resume]
        chunk = read(CHUNK_BYTES)
        final = not chunk
        buf += chunk


def split_lines(head: bytes, stream: BinaryIO, newline: bytes,
                max_bytes: int | None = None) -> Iterator[bytes | Oversize]:
    """The lines (without their line break) of `head` and then of the rest of `stream`; CR LF,
    CR and LF (`newline` is the encoding's LF) each end a line, mixed or not (see LineBreaks).
    A line over `max_bytes` is an `Oversize` instead, skipped while read: memory is bounded by
    the longest line within the limit (plus a chunk), whatever the file holds."""
    # read1: one decompression step at a time, so that the lines before a break are all kept
    read = getattr(stream, "read1", stream.read)
    breaks = LineBreaks(newline)
    buf = bytearray(head)
    search, final = 0, False
    while True:
        found, resume = breaks.scan(buf, search, 0, final)
        start = 0
        for at, end in found:
            yield _line(buf, start, at, max_bytes)
            start = end
        search = resume - start
        del buf[:start]
        if final:
            break
        if max_bytes is not None and search > max_bytes:
            line_head = bytes(buf[:HEAD_KEEP])
            size, rest = _skip_line(buf, read, breaks)
            yield Oversize(size, line_head)
            if rest is None:
                return
            buf, search = rest, 0
            continue
        chunk = read(CHUNK_BYTES)
        final = not chunk
        buf += chunk
    if buf:
        yield _line(buf, 0, len(buf), max_bytes)


def _line(buf: bytearray, start: int, end: int, max_bytes: int | None) -> bytes | Oversize:
    """A whole line found in the buffer, or its Oversize when over the limit."""
    if max_bytes is not None and end - start > max_bytes:
        return Oversize(end - start, bytes(buf[start:start + HEAD_KEEP]))
    return bytes(buf[start:end])


def _named_fields(text: str) -> tuple[str | None, str | None]:
    """trace_id and route of a line that may parse as JSON, for a dead letter's columns."""
    try:
        record = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None, None
    if not isinstance(record, dict):
        return None, None
    return tuple(v if isinstance(v := record.get(k), str) else None
                 for k in ("trace_id", "route"))


def undecodable(path: str, line_no: int, data: bytes, codec: str,
                exc: UnicodeDecodeError) -> DeadLetter:
    """The dead letter of a line that is not valid text: `raw` is the line with each
    undecodable byte written as a \\xNN escape, so that nothing of it is lost."""
    trace_id, route = _named_fields(data.decode(codec, errors="replace"))
    reason = (f"{path} line {line_no}: not valid {codec.upper()} text ({exc.reason} at byte "
              f"{exc.start} of the line); raw shows the undecodable bytes as \\xNN")
    return DeadLetter(STAGE, reason, data.decode(codec, errors="backslashreplace"), trace_id,
                      route)


class InputFileError(OSError):
    """An input file that cannot be read to its end (truncated, corrupt): the message starts
    with the file's path."""


def input_paths(pattern: str) -> list[str]:
    """The files a path or glob matches, sorted (none if it matches nothing). A local file is
    itself: a glob's own match (`a[1].jsonl` found by `*.jsonl`) is not matched again as a
    pattern, where its brackets would make a character class that matches nothing."""
    if FileSystems.get_scheme(pattern) is None and os.path.isfile(pattern):
        return [pattern]
    return sorted({m.path for result in FileSystems.match([pattern])
                   for m in result.metadata_list})


class NotTextError(OSError):
    """A file that is not text at all (it starts with NUL bytes): binary data, /dev/zero."""


def check_text_head(head: bytes) -> None:
    """Raise NotTextError if a file's first bytes cannot start text: JSON text starts with an
    ASCII character, so two NUL bytes first (without a BOM) mean binary data or UTF-32, which
    rt4chart does not read; reading on would make one endless "line" (/dev/zero)."""
    if head[:2] == b"\x00\x00":
        raise NotTextError("the file starts with NUL bytes: not text (JSON lines in UTF-8 or "
                           "UTF-16), but binary data (or UTF-32)")


def numbered_lines(stream: BinaryIO, max_bytes: int | None = None, name: str = "",
                   ) -> Iterator[tuple[int, bytes | Oversize, str]]:
    """(line number from 1, the line's bytes without its line break, codec) of a text stream;
    blank lines count; CR LF, CR and LF each end a line, mixed or not; a line over `max_bytes`
    is an `Oversize` (see split_lines). A byte order mark is not part of a line: at the start of
    the file it tells the encoding, and at the start of a later line (files concatenated) it is
    dropped, as RFC 8259 lets a JSON parser do. `name` (the file's) is for messages.

    Raises:
        NotTextError: the stream starts with NUL bytes.
    """
    head = read_at_least(stream, 4)
    check_text_head(head)
    codec, newline, bom = text_encoding(head)
    mark = "\ufeff".encode(codec)
    for line_no, data in enumerate(split_lines(head[bom:], stream, newline, max_bytes), 1):
        if isinstance(data, bytes) and data.startswith(mark):
            data = data[len(mark):]
        yield line_no, data, codec
