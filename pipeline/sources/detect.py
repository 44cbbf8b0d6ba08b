"""Which format an input file is in: by `--input-format`, or (auto) by what the file says."""

from __future__ import annotations

import logging

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.sources import phoenix
from rt4chart.pipeline.storage.text_files import READ_ERRORS, open_input

logger = logging.getLogger(__name__)

SPAN_FORMATS = ("otlp", "openinference", "phoenix", "langfuse")
INPUT_FORMATS = ("auto", "jsonl", "parquet", *SPAN_FORMATS)
STREAM_FORMATS = ("json", "otlp")
PARQUET_SUFFIXES = (".parquet", ".pq")
HEAD_BYTES = 1 << 16
# Keys that tell a format when the first line is not a whole JSON value (a pretty-printed
# export); checked in this order.
_MARKS = ((b'"resourceSpans"', "otlp"), (b'"resource_spans"', "otlp"),
          (b'"traceId"', "langfuse"), (b'"observations"', "langfuse"),
          (b'"span_kind"', "openinference"))


def _parquet_format(path: str) -> str:
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            names = set(pq.read_schema(fh).names)
    except (pa.ArrowException, OSError, ValueError, EOFError):
        return "parquet"  # the Parquet reader reports what is wrong with it
    return "phoenix" if set(phoenix.MARK_COLUMNS) <= names else "parquet"


def _object_format(value: object) -> str | None:
    if isinstance(value, list) and value:
        return _object_format(value[0])
    if not isinstance(value, dict):
        return None
    if "resourceSpans" in value or "resource_spans" in value:
        return "otlp"
    context = value.get("context")
    if isinstance(context, dict) and "trace_id" in context and "span_id" in context:
        return "openinference"
    if "traceId" in value or "observations" in value:
        return "langfuse"
    if isinstance(value.get("data"), list) and "id" not in value:
        return _object_format(value["data"])
    return None


def _text_format(path: str) -> str:
    try:
        with open_input(path) as stream:
            head = stream.read(HEAD_BYTES)
    except READ_ERRORS:
        return "jsonl"  # the line reader reports what is wrong with it
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    first = head.split(b"\n", 1)[0]
    try:
        found = _object_format(orjson.loads(first))
    except orjson.JSONDecodeError:
        found = None
        if head[:1] in (b"[", b"{"):
            found = next((fmt for mark, fmt in _MARKS if mark in head), None)
    return found or "jsonl"


def _is_parquet_file(path: str) -> bool:
    """Whether a file starts with Parquet's magic number (PAR1), whatever its name."""
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def file_format(path: str, input_format: str = "auto") -> str:
    """The format to read a file in: `input_format` unless "auto"; else by what the file holds:
    Parquet (its PAR1 magic, or a .parquet/.pq name; a Phoenix spans export when it has
    context.trace_id and context.span_id columns), else by its first line: OTLP JSON
    (resourceSpans), OpenInference span JSON (context.trace_id), a Langfuse export (traceId,
    observations), else JSON lines in the trace schema."""
    if input_format != "auto":
        return input_format
    if path.lower().endswith(PARQUET_SUFFIXES) or _is_parquet_file(path):
        return _parquet_format(path)
    return _text_format(path)


def pattern_format(pattern: str, input_format: str = "auto") -> str:
    """The format of a path or glob: that of its first file (sorted). Reading goes by each
    file's own format (`io.ReadTraces`); this is for a pattern that names one kind."""
    if input_format != "auto":
        return input_format
    try:
        paths = sorted(m.path for result in FileSystems.match([pattern])
                       for m in result.metadata_list)
    except (OSError, ValueError):
        paths = []
    if not paths:
        return "parquet" if pattern.lower().rstrip("*").endswith(PARQUET_SUFFIXES) else "jsonl"
    return file_format(paths[0])
