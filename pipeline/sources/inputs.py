"""What a run reads: its input patterns resolved, once, into files that can be read again.

A batch audit reads its inputs more than once (the format sniff, the record count that sizes
the chunks, the read itself), which a pipe cannot give: `cat f | rt4chart audit -` lost the
bytes the sniff read, and a FIFO hung. So standard input (`-` or /dev/stdin), pipes, FIFOs
and character devices are read once, streamed to a file in the run's staging folder
(`.tmp-input/`, never part of the run's files, removed with the staging folder), and the run
reads that file. Its suffix comes from its first bytes (gzip, bzip2, xz, zstd, zlib magic
numbers, Parquet's PAR1), so a compressed or Parquet stream is read as such; text is checked
to be text (NUL bytes first, as /dev/zero gives, stop the run with a clear error rather than
an endless line).

A glob is expanded here into its files, and each file's format is later told by its content
(`sources/detect.py`); files under the run's output folder are left out (an `audit 'g/**'
--out g/out` would otherwise read its own earlier tables), with a log line saying so.
"""

from __future__ import annotations

import logging
import os
import stat
import sys

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.storage.text_files import (
    InputFileError,
    NotTextError,
    check_text_head,
    input_paths,
    read_at_least,
)

logger = logging.getLogger(__name__)

STDIN_NAMES = ("-", "/dev/stdin")
SPOOL = ".tmp-input"  # inside the staging folder; ".tmp-" files are never a run's files
SPOOL_CHUNK = 1 << 20
# First bytes -> the suffix that makes the readers decompress or read Parquet.
_MAGIC = ((b"\x1f\x8b", ".jsonl.gz"), (b"BZh", ".jsonl.bz2"),
          (b"\xfd7zXZ\x00", ".jsonl.xz"), (b"\x28\xb5\x2f\xfd", ".jsonl.zst"),
          (b"PAR1", ".parquet"))


def is_stream(path: str) -> bool:
    """Whether an input is read once only: standard input, a pipe, a FIFO, a socket or a
    character device (a local path that exists and is not a regular file or a folder)."""
    if path == "-":
        return True
    if FileSystems.get_scheme(path) is not None:
        return False
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _suffix(head: bytes) -> str:
    for magic, suffix in _MAGIC:
        if head.startswith(magic):
            return suffix
    if len(head) >= 2 and head[0] == 0x78 and (head[0] << 8 | head[1]) % 31 == 0:
        return ".jsonl.deflate"  # a zlib header (JSON text never starts with "x")
    return ".jsonl"


def spool(path: str, folder: str, index: int) -> str:
    """Copy a stream to a file under `folder`/.tmp-input (reading it once); the file's path.

    Raises:
        InputFileError: the stream is not text nor a compressed or Parquet file.
    """
    source = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        head = read_at_least(source, 8)
        suffix = _suffix(head)
        if suffix == ".jsonl":
            try:
                check_text_head(head)
            except NotTextError as exc:
                raise InputFileError(f"{path}: {exc}; nothing read") from exc
        target = FileSystems.join(folder, SPOOL, f"{index:03d}-stdin{suffix}")
        size = len(head)
        with FileSystems.create(target, compression_type=CompressionTypes.UNCOMPRESSED) as out:
            out.write(head)
            while chunk := source.read(SPOOL_CHUNK):
                out.write(chunk)
                size += len(chunk)
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    logger.info("%s: read once, %s bytes, into %s (a stream can be read only once; the run "
                "reads its inputs more than once)", path, f"{size:,}", target)
    return target


def _under(path: str, folder: str) -> bool:
    if FileSystems.get_scheme(path) is not None or FileSystems.get_scheme(folder) is not None:
        return path.rstrip("/").startswith(folder.rstrip("/") + "/")
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, root]) == root


def pattern_files(pattern: str, exclude: tuple[str, ...] = ()) -> list[str]:
    """The files of a path or glob, sorted, without folders; a glob's files under a folder
    of `exclude` are left out (logged)."""
    paths = [p for p in input_paths(pattern)
             if not (FileSystems.get_scheme(p) is None and os.path.isdir(p))]
    if not any(c in pattern for c in "*?["):
        return paths  # a file named on its own is read wherever it is
    for folder in exclude:
        inside = [p for p in paths if _under(p, folder)]
        if inside:
            logger.info("%s: left out %d file(s) under the output folder %s (a run never "
                        "reads its own output)", pattern, len(inside), folder)
            paths = [p for p in paths if p not in inside]
    return paths


def resolve_inputs(patterns: tuple[str, ...], work: str,
                   exclude: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The files a run reads: streams spooled under `work` (the staging folder), globs
    expanded into their files without those under `exclude` (the output folder).

    Raises:
        FileNotFoundError: a pattern whose every file is under `exclude`.
    """
    files: list[str] = []
    for index, pattern in enumerate(patterns):
        if pattern in STDIN_NAMES or is_stream(pattern):
            files.append(spool(pattern, work, index))
            continue
        found = pattern_files(pattern, exclude)
        if not found:
            raise FileNotFoundError(f"no input file matches {pattern} outside the output "
                                    f"folder {', '.join(exclude)}")
        files.extend(found)
    return tuple(dict.fromkeys(files))
