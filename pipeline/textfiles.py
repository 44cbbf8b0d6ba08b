"""Text files read line by line, bytes to text: decompression that notices a truncated file,
the encoding from the byte order mark, lines split without reading a file whole, and the dead
letter of a line that is not valid text. No pipeline here: `io.ReadTraces` runs
it in a DoFn."""

from __future__ import annotations

import bz2
import codecs
import contextlib
import gzip
import lzma
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import orjson
import zstandard
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.compressed import zlib_reader, zstd_reader
from rt4chart.schemas.records import DeadLetter

STAGE = "read"
CHUNK_BYTES = 1 << 16

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


def _read_at_least(stream: BinaryIO, n: int) -> bytes:
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


def split_lines(head: bytes, stream: BinaryIO, newline: bytes) -> Iterator[bytes]:
    """The lines (without the newline) of `head` and then of the rest of `stream`, split at
    `newline` where it starts a code unit (a UTF-16 newline is two bytes at an even offset).
    Memory is bounded by the longest line, whatever the file's size."""
    # read1: one decompression step at a time, so that the lines before a break are all kept
    read = getattr(stream, "read1", stream.read)
    width = len(newline)
    buf = bytearray(head)
    search = 0
    while True:
        start = 0
        while (at := buf.find(newline, search)) >= 0:
            if (at - start) % width:  # inside a code unit, not a newline
                search = at + 1
                continue
            yield bytes(buf[start:at])
            start = search = at + width
        del buf[:start]
        search = max(0, len(buf) - width + 1)  # a newline may straddle the next chunk
        chunk = read(CHUNK_BYTES)
        if not chunk:
            break
        buf += chunk
    if buf:
        yield bytes(buf)


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


def numbered_lines(stream: BinaryIO) -> Iterator[tuple[int, bytes, str]]:
    """(line number from 1, the line's bytes without its newline, codec) of a text stream;
    blank lines count. A byte order mark is not part of a line: at the start of the file it
    tells the encoding, and at the start of a later line (files concatenated) it is dropped,
    as RFC 8259 lets a JSON parser do."""
    head = _read_at_least(stream, 4)
    codec, newline, bom = text_encoding(head)
    mark = "\ufeff".encode(codec)
    for line_no, data in enumerate(split_lines(head[bom:], stream, newline), 1):
        yield line_no, data[len(mark):] if data.startswith(mark) else data, codec
