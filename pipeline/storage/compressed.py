"""Decompression that notices where a compressed file breaks off.

Beam's reader (`CompressedFile`) stops silently where a .deflate or .zst file's data ends,
so a file cut short read as a shorter file: records lost with exit 0. Python's gzip, bz2 and
lzma readers raise EOFError instead; `StrictDecompressor` gives .deflate (zlib) and .zst
(Zstandard) the same behaviour: at the end of the compressed bytes the stream must be at an
end-of-stream marker, else EOFError. Concatenated streams (frames) are read one after the
other, as `zstd -d` and Beam read them.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import BinaryIO

import zstandard

CHUNK_BYTES = 1 << 16
# Zstandard's decompressobj cannot bound its output, and a few bytes of a run-length block
# make 128 KB: compressed bytes are fed this many at a time, so that one step's output stays
# within tens of MB even for a crafted file (zlib bounds its output with max_length).
ZSTD_FEED_BYTES = 2048


class _Decompressor:
    """What both readers share: a decompressobj's end-of-stream flag and the bytes after it."""

    _obj: object

    @property
    def eof(self) -> bool:
        return self._obj.eof

    @property
    def unused_data(self) -> bytes:
        return self._obj.unused_data


class _Zlib(_Decompressor):
    """zlib.decompressobj with its output bounded to `CHUNK_BYTES` a step."""

    def __init__(self) -> None:
        self._obj = zlib.decompressobj()

    @property
    def pending(self) -> bytes:
        # at the end of a stream, unconsumed_tail repeats what unused_data holds
        return b"" if self._obj.eof else self._obj.unconsumed_tail

    def decompress(self, data: bytes) -> bytes:
        # input it could not take within max_length is in unconsumed_tail: feed it first
        return self._obj.decompress(self._obj.unconsumed_tail + data, CHUNK_BYTES)


class _Zstd(_Decompressor):
    """zstandard's decompressobj, fed ZSTD_FEED_BYTES at a time."""

    def __init__(self) -> None:
        # The same window limit as Beam's reader: a file it reads, this reads.
        self._obj = zstandard.ZstdDecompressor(max_window_size=1 << 31).decompressobj()
        self.pending = b""

    def decompress(self, data: bytes) -> bytes:
        data = self.pending + data
        self.pending = data[ZSTD_FEED_BYTES:]
        return self._obj.decompress(data[:ZSTD_FEED_BYTES])


class StrictDecompressor(io.RawIOBase):
    """The decompressed bytes of `raw` (wrap it in io.BufferedReader); EOFError when `raw`
    ends inside a compressed stream (truncated), the codec's own error when its bytes are
    corrupt."""

    def __init__(self, raw: BinaryIO, make: Callable[[], _Zlib | _Zstd], name: str):
        super().__init__()
        self._raw = raw
        self._make = make
        self._name = name
        self._obj = make()
        self._started = False  # compressed bytes seen since the last end-of-stream marker
        self._out = bytearray()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._out and self._fill():
            pass
        n = min(len(buffer), len(self._out))
        buffer[:n] = self._out[:n]
        del self._out[:n]
        return n

    def _fill(self) -> bool:
        """One decompression step into the output buffer; False at the end of the input."""
        if self._obj.eof:  # a stream ended: what follows is the next one (or nothing)
            rest = self._obj.unused_data + self._obj.pending
            self._obj, self._started = self._make(), bool(rest)
            if rest:
                self._out += self._obj.decompress(rest)
                return True
        if self._obj.pending:
            self._out += self._obj.decompress(b"")
            return True
        data = self._raw.read(CHUNK_BYTES)
        if not data:
            if self._started and not self._obj.eof:
                raise EOFError(f"{self._name} data ends before its end-of-stream marker (the "
                               "file is truncated)")
            return False
        self._started = True
        self._out += self._obj.decompress(data)
        return True


def zlib_reader(raw: BinaryIO) -> io.BufferedReader:
    """A .deflate file (a zlib stream, as Beam writes it), read strictly."""
    return io.BufferedReader(StrictDecompressor(raw, _Zlib, "deflate"), CHUNK_BYTES)


def zstd_reader(raw: BinaryIO) -> io.BufferedReader:
    """A .zst file (Zstandard frames), read strictly."""
    return io.BufferedReader(StrictDecompressor(raw, _Zstd, "zstd"), CHUNK_BYTES)
