"""Sources (JSONL, Parquet, the span formats) and the dead-letter message (the table files:
tablefiles.py).

`ReadTraces` reads each file in its format: record files through `records.py`, span formats
through `sources/spans.py` (which reads its files through `records.py` too).
"""

from __future__ import annotations

import apache_beam as beam

from rt4chart.pipeline.sources.detect import SPAN_FORMATS
from rt4chart.pipeline.sources.records import (
    InputFileError,
    ReadNumberedLines,
    ReadOutputs,
    _Parts,
    batch_rows,
    check_inputs,
    file_formats,
    input_paths,
    is_parquet,
    read_files,
)
from rt4chart.pipeline.sources.spans import ReadSpanTraces
from rt4chart.pipeline.storage.text_files import DEFAULT_MAX_RECORD_BYTES
from rt4chart.schemas.rows import DeadLetterRow

# Read through here by the rest of the pipeline (and its tests) since before readers.py.
__all__ = ["InputFileError", "ReadNumberedLines", "ReadOutputs", "ReadTraces", "batch_rows",
           "check_inputs", "dead_letter_message", "input_paths", "is_parquet"]


class ReadTraces(beam.PTransform):
    """Trace files (JSONL lines or Parquet rows, paths or globs) -> raw records and dead letters.

    JSONL lines stay text so that a line that is not JSON reaches the dead letters as received;
    blank lines are not records and are skipped. The format of each file (of a glob too) is
    told by its content (Parquet's magic or a .parquet/.pq name, else JSON lines; .gz, .bz2,
    .xz, .zst, .deflate decompressed) unless `input_format` says. A line or row over
    `max_record_bytes` is a dead letter, skipped while read (never parsed or held whole).
    Text is decoded line by line (UTF-8, or UTF-16 when the file says so): an undecodable line
    is a dead letter naming its file and line, and the other lines are audited. A truncated or
    corrupt file raises `InputFileError` naming it, or with `allow_partial_input` becomes a
    warning and a dead letter saying how far it was read. A pattern matching no file raises
    FileNotFoundError when the pipeline is built. Span formats (OTLP JSON, OpenInference span
    JSON, a Phoenix spans export, a Langfuse export; `input_format` or told by the file) are
    assembled into trace records by `pipeline/sources` with the SpanMapping `spans`.
    """

    def __init__(self, inputs: tuple[str, ...], input_format: str = "auto",
                 allow_partial_input: bool = False, spans=None,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        super().__init__()
        self._inputs = tuple(inputs)
        self._format = input_format
        self._partial = allow_partial_input
        self._spans = spans  # SpanMapping of the span formats (docs/sources.md)
        self._max_bytes = max_record_bytes

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadOutputs:
        check_inputs(self._inputs)
        # Each file of a glob in its own format, told by its content (a glob over JSONL and
        # Parquet files reads each as what it is). Span formats (OTLP, OpenInference, Phoenix,
        # Langfuse) are read and assembled into traces by pipeline/sources; a run's own redo
        # file is always trace JSON lines.
        formats = file_formats(self._inputs, self._format)
        spans = {f: fmt for f, fmt in formats.items() if fmt in SPAN_FORMATS}
        parts = []
        if spans:
            read = pbegin | "Spans" >> ReadSpanTraces(spans, self._partial, self._spans,
                                                      self._max_bytes)
            parts.append(_Parts(read.records, read.dead_letters))
        records = {f: fmt for f, fmt in formats.items() if f not in spans}
        return read_files(pbegin, records, self._partial, self._max_bytes, parts)


def dead_letter_message(row: DeadLetterRow) -> beam.io.PubsubMessage:
    """A dead-letter row as a Pub/Sub message: the payload as received, why as attributes."""
    attributes = {"stage": row.stage, "reason": row.reason[:1024],
                  "dead_letter_id": row.dead_letter_id}
    for name, value in (("trace_id", row.trace_id), ("route", row.route)):
        if value:
            attributes[name] = value[:1024]
    return beam.io.PubsubMessage(row.raw.encode(), attributes)
