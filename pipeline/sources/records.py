"""Record files (JSON lines, Parquet rows) read with their dead letters: what `io.ReadTraces`
and the span sources (`sources/spans.py`) both read through.

Inputs are read file by file, line by line: a line that cannot be decoded is a dead letter
naming its file and line, and a file that breaks off (a truncated .gz) stops the run with its
name, or, when partial input is allowed, becomes a dead letter saying how far it was read.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import apache_beam as beam
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.sources.detect import file_format
from rt4chart.pipeline.sources.inputs import STDIN_NAMES, is_stream
from rt4chart.pipeline.storage.folder_scan import REDO_INPUT
from rt4chart.pipeline.storage.parquet_names import ambiguous_rows, repeated_name
from rt4chart.pipeline.storage.text_files import (
    DEFAULT_MAX_RECORD_BYTES,
    HEAD_KEEP,
    READ_ERRORS,
    STAGE,
    InputFileError,
    Oversize,
    input_paths,
    numbered_lines,
    open_input,
    undecodable,
)
from rt4chart.schemas.records import DeadLetter
from rt4chart.transforms.common import rfc3339
from rt4chart.transforms.common.guard import StorageDoFn

logger = logging.getLogger(__name__)

PARQUET_SUFFIXES = (".parquet", ".pq")
PARQUET_BATCH_ROWS = 1024  # rows of a row group in memory at a time
# What a damaged Parquet file raises while it is read (ArrowInvalid is also a ValueError).
_PARQUET_ERRORS = (pa.ArrowException, OSError, ValueError, EOFError)
# What converting one Arrow value to Python raises (a timestamp beyond datetime's range).
_VALUE_ERRORS = (OverflowError, ValueError, pa.ArrowException)


def is_parquet(path: str, input_format: str = "auto") -> bool:
    """Whether to read a path as Parquet: by `input_format`, or by its suffix when "auto"."""
    if input_format != "auto":
        return input_format == "parquet"
    return path.lower().rstrip("*").endswith(PARQUET_SUFFIXES)


def check_inputs(patterns: tuple[str, ...] | list[str]) -> None:
    """Raise FileNotFoundError naming every pattern that matches no file (or only a folder)."""
    missing = []
    for pattern in patterns:
        if pattern in STDIN_NAMES or is_stream(pattern):
            continue  # read once, when the run starts (inputs.py)
        paths = input_paths(pattern)
        if not paths or all(_is_local_dir(p) for p in paths):
            missing.append(pattern)
    if missing:
        raise FileNotFoundError(
            f"no input file matches {', '.join(missing)} (give JSONL or Parquet files, or globs "
            "such as DIR/*.jsonl)")


def _is_local_dir(path: str) -> bool:
    return FileSystems.get_scheme(path) is None and os.path.isdir(path)


def _paths_or_fail(pattern: str) -> list[str]:
    paths = [p for p in input_paths(pattern) if not _is_local_dir(p)]
    if not paths:
        raise FileNotFoundError(f"no input file matches {pattern}")
    return paths


def partial_input(path: str, done: str, exc: BaseException, allow: bool) -> DeadLetter:
    """A file that broke off while being read: raise `InputFileError`, or (`allow`) log a
    warning and return a dead letter recording how far it was read (`done`)."""
    error = f"{type(exc).__name__}: {exc}"
    if not allow:
        raise InputFileError(
            f"{path}: truncated or corrupt input: read {done}, then {error}. Repair "
            "or remove the file, or pass --allow-partial-input to audit what can be read "
            "(the rest becomes a dead letter)") from exc
    logger.warning("%s: truncated or corrupt input: read %s, then %s; the rest of the file is "
                   "not audited (--allow-partial-input)", path, done, error)
    raw = orjson.dumps({"file": path, "read": done, "error": error}).decode()
    return DeadLetter(STAGE, f"{path}: truncated or corrupt input: read {done}, then {error}; "
                             "the rest of the file was not audited", raw)


class _ReadLinesFn(StorageDoFn):
    """A text file's path -> its non-blank lines as text (`numbered`: as ("PATH line N",
    text), for decoders whose dead letters name the line); undecodable lines, lines over
    `max_bytes` (and, with `allow_partial`, a truncated file) -> dead letters."""

    def __init__(self, allow_partial: bool, max_bytes: int = DEFAULT_MAX_RECORD_BYTES,
                 numbered: bool = False):
        self._allow_partial = allow_partial
        self._max_bytes = max_bytes
        self._numbered = numbered

    def process(self, path: str) -> Iterator:
        line_no = 0
        try:
            with open_input(path) as stream:
                for line_no, data, codec in numbered_lines(stream, self._max_bytes, path):
                    if isinstance(data, Oversize):
                        yield beam.pvalue.TaggedOutput("dead", oversize_letter(
                            f"{path} line {line_no}", data.size, data.head, codec,
                            self._max_bytes))
                        continue
                    for text in _decoded(path, line_no, data, codec):
                        numbered = self._numbered and isinstance(text, str)
                        yield (f"{path} line {line_no}", text) if numbered else text
        except READ_ERRORS as exc:
            letter = partial_input(path, f"{line_no} line(s)", exc, self._allow_partial)
            yield beam.pvalue.TaggedOutput("dead", letter)


def oversize_letter(where: str, size: int, head: bytes, codec: str, limit: int) -> DeadLetter:
    """The dead letter of a record over --max-record-bytes: `raw` is its first bytes only (the
    record was skipped while read, never held whole)."""
    text = head.decode(codec, errors="backslashreplace")
    reason = (f"{where}: record of {size:,} bytes is over --max-record-bytes={limit:,}; skipped "
              f"unread (raw holds its first {len(head):,} bytes)")
    trace_id = next(iter(re.findall(r'"trace_id"\s*:\s*"([^"\\]{1,256})"', text)), None)
    return DeadLetter(STAGE, reason, text, trace_id)


def _decoded(path: str, line_no: int, data: bytes, codec: str) -> Iterator:
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        yield beam.pvalue.TaggedOutput("dead", undecodable(path, line_no, data, codec, exc))
        return
    if text.strip():
        yield text


class _RowGroupsFn(StorageDoFn):
    """A Parquet file's path -> (path, row group index), one per row group."""

    def __init__(self, allow_partial: bool):
        self._allow_partial = allow_partial

    def process(self, path: str) -> Iterator:
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                groups = pq.ParquetFile(fh).num_row_groups
        except _PARQUET_ERRORS as exc:
            letter = partial_input(path, "0 rows (not a readable Parquet file)", exc,
                                   self._allow_partial)
            yield beam.pvalue.TaggedOutput("dead", letter)
            return
        for group in range(groups):
            yield path, group


class _ReadRowGroupFn(StorageDoFn):
    """(Parquet path, row group) -> its rows as dicts, a batch in memory at a time; a row with a
    value Python cannot hold (a timestamp beyond year 9999) or over `max_bytes` -> a dead
    letter."""

    def __init__(self, allow_partial: bool, max_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        self._allow_partial = allow_partial
        self._max_bytes = max_bytes

    def process(self, element: tuple[str, int]) -> Iterator:
        path, group = element
        rows = 0
        where = f"{path} row group {group} row"
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
                parquet = pq.ParquetFile(fh)
                meta = parquet.metadata.row_group(group)
                if meta.num_rows == 1 and meta.total_byte_size > self._max_bytes:
                    # one row over the limit: told by the metadata, never decoded
                    yield beam.pvalue.TaggedOutput("dead", oversize_letter(
                        f"{where} 0", meta.total_byte_size, b"", "utf-8", self._max_bytes))
                    return
                size = _batch_size(meta.num_rows, meta.total_byte_size, self._max_bytes)
                for batch in parquet.iter_batches(size, row_groups=[group]):
                    yield from sized_rows(batch, where, rows, self._max_bytes)
                    rows += batch.num_rows
        except _PARQUET_ERRORS as exc:
            letter = partial_input(path, f"{rows} row(s) of row group {group}", exc,
                                   self._allow_partial)
            yield beam.pvalue.TaggedOutput("dead", letter)


def nanosecond_times_as_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with its `timestamp[ns]` columns as RFC 3339 text (UTC, nine digits).

    pyarrow converts a nanosecond value to Python only through pandas, which rt4chart does
    not install: without it every value with non-zero nanoseconds raised, and its row was
    dead-lettered as unreadable. The integer is read instead and written out whole: a trace's
    timestamp keeps what its event time holds (microseconds, the rest cut) and a span's time
    every nanosecond. A column of another unit is left as it is.
    """
    columns = list(batch.columns)
    for i, field in enumerate(batch.schema):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            columns[i] = pa.array([None if ns is None else rfc3339.format_ns(ns)
                                   for ns in columns[i].cast(pa.int64()).to_pylist()],
                                  pa.string())
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _batch_size(num_rows: int, total_bytes: int, max_bytes: int) -> int:
    """Rows per batch: PARQUET_BATCH_ROWS, fewer when the row group's rows are large, so that
    a batch holds about `max_bytes` on average."""
    if total_bytes <= max_bytes or num_rows <= 0:
        return PARQUET_BATCH_ROWS
    return max(1, min(PARQUET_BATCH_ROWS, num_rows * max_bytes // total_bytes))


def sized_rows(batch: pa.RecordBatch, where: str, first: int, max_bytes: int) -> Iterator:
    """`batch_rows`, with each row over `max_bytes` (its Arrow size) a dead letter instead:
    such a row is never converted to Python objects (which cost many times its size)."""
    if batch.nbytes <= max_bytes:
        yield from batch_rows(batch, where, first)
        return
    for i in range(batch.num_rows):
        row = batch.slice(i, 1)
        if row.nbytes <= max_bytes:
            yield from batch_rows(row, where, first + i)
            continue
        head = {name: column[0].as_py() for name, column in zip(
            row.schema.names, row.columns, strict=True) if column.nbytes <= HEAD_KEEP}
        yield beam.pvalue.TaggedOutput("dead", oversize_letter(
            f"{where} {first + i}", row.nbytes, orjson.dumps(head, default=str), "utf-8",
            max_bytes))


def batch_rows(batch: pa.RecordBatch, where: str, first: int = 0) -> Iterator:
    """A record batch's rows as dicts (nanosecond timestamps as text, see
    `nanosecond_times_as_text`); a row with a value that does not convert to Python -> a dead
    letter naming the row (`where` and its index from `first`) and the column; every row of a
    batch whose schema repeats a column or field name -> a dead letter (`repeated_name`)."""
    batch = nanosecond_times_as_text(batch)
    repeated = repeated_name(batch.schema)
    if repeated is not None:
        yield from ambiguous_rows(batch, where, first, repeated)
        return
    try:
        yield from batch.to_pylist()
        return
    except _VALUE_ERRORS:
        pass  # convert row by row, to find the rows at fault
    for i in range(batch.num_rows):
        row, bad = {}, []
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            try:
                row[name] = column[i].as_py()
            except _VALUE_ERRORS as exc:
                row[name] = repr(column[i])
                bad.append(f"column {name!r}: {exc}")
        if not bad:
            yield row
            continue
        raw = orjson.dumps(row, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
        trace_id, route = (v if isinstance(v := row.get(k), str) else None
                           for k in ("trace_id", "route"))
        yield beam.pvalue.TaggedOutput("dead", DeadLetter(
            STAGE, f"{where} {first + i}: unreadable value, {'; '.join(bad)}", raw, trace_id,
            route))


@beam.ptransform_fn
def _read_text(pbegin, patterns: tuple[str, ...], allow_partial: bool, max_bytes: int,
               numbered: bool = False):
    return (
        pbegin
        | "Patterns" >> beam.Create(patterns)
        | "Match" >> beam.FlatMap(_paths_or_fail)
        | "Spread" >> beam.Reshuffle()
        | "Lines" >> beam.ParDo(_ReadLinesFn(allow_partial, max_bytes, numbered)).with_outputs(
            "dead", main="records")
    )


class ReadNumberedLines(beam.PTransform):
    """Text files (paths or globs) -> their non-blank lines as ("PATH line N", text), and the
    dead letters of lines or files that cannot be read (as `ReadTraces` reads JSON lines):
    for span formats, whose every record (a span of a line) names its file and line."""

    def __init__(self, patterns: tuple[str, ...], allow_partial_input: bool = False,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        super().__init__()
        self._patterns = tuple(patterns)
        self._partial = allow_partial_input
        self._max_bytes = max_record_bytes

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadOutputs:
        check_inputs(self._patterns)
        read = pbegin | "Jsonl" >> _read_text(self._patterns, self._partial, self._max_bytes,
                                              numbered=True)
        return ReadOutputs(read.records, read.dead)


@beam.ptransform_fn
def _read_parquet(pbegin, patterns: tuple[str, ...], allow_partial: bool, max_bytes: int):
    files = (
        pbegin
        | "Patterns" >> beam.Create(patterns)
        | "Match" >> beam.FlatMap(_paths_or_fail)
        | "RowGroups" >> beam.ParDo(_RowGroupsFn(allow_partial)).with_outputs("dead", main="ok")
    )
    rows = (
        files.ok
        | "Spread" >> beam.Reshuffle()
        | "Rows" >> beam.ParDo(_ReadRowGroupFn(allow_partial, max_bytes)).with_outputs(
            "dead", main="ok")
    )
    return _Parts(rows.ok, (files.dead, rows.dead) | "AllDead" >> beam.Flatten())


class _Parts(NamedTuple):
    records: beam.PCollection
    dead: beam.PCollection


class ReadOutputs(NamedTuple):
    """What `ReadTraces` gives: raw records, and the dead letters of lines or files it could not
    read (stage "read")."""

    records: beam.PCollection
    dead_letters: beam.PCollection[DeadLetter]


def file_formats(patterns: Iterable[str], input_format: str) -> dict[str, str]:
    """{file: format} of the files the patterns match (FileNotFoundError for one that matches
    none): each file's own format, told by its content unless `input_format` says; a run's
    own redo file is always trace JSON lines."""
    files = dict.fromkeys(f for p in patterns for f in _paths_or_fail(p))
    return {f: "jsonl" if f.endswith(REDO_INPUT) else file_format(f, input_format)
            for f in files}


def read_files(pbegin: beam.pvalue.PBegin, formats: dict[str, str], allow_partial: bool,
               max_bytes: int, parts: Iterable[_Parts] = ()) -> ReadOutputs:
    """JSON-lines and Parquet files ({file: format}) read, with `parts` read already (the
    span formats'), into one ReadOutputs (steps "Jsonl", "Parquet", "Records", "DeadLetters")."""
    parts = list(parts)
    text = tuple(f for f, fmt in formats.items() if not is_parquet(f, fmt))
    parquet = tuple(f for f, fmt in formats.items() if is_parquet(f, fmt))
    if text:
        parts.append(pbegin | "Jsonl" >> _read_text(text, allow_partial, max_bytes))
    if parquet:
        parts.append(pbegin | "Parquet" >> _read_parquet(parquet, allow_partial, max_bytes))
    return ReadOutputs(
        tuple(p.records for p in parts) | "Records" >> beam.Flatten(),
        tuple(p.dead for p in parts) | "DeadLetters" >> beam.Flatten(),
    )


class ReadRecordFiles(beam.PTransform):
    """Record files (paths or globs) in the formats that are records as they are (JSON lines,
    Parquet rows) -> raw records and dead letters, as `io.ReadTraces` reads them (which also
    reads the span formats)."""

    def __init__(self, patterns: tuple[str, ...], input_format: str = "auto",
                 allow_partial_input: bool = False,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        super().__init__()
        self._patterns = tuple(patterns)
        self._format = input_format
        self._partial = allow_partial_input
        self._max_bytes = max_record_bytes

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadOutputs:
        check_inputs(self._patterns)
        formats = file_formats(self._patterns, self._format)
        return read_files(pbegin, formats, self._partial, self._max_bytes)
