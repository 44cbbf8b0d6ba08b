"""Span files and OTLP messages -> spans -> assembled traces, as the audit takes them.

`ReadSpanTraces` (batch) reads files of the span formats (`detect.SPAN_FORMATS`) into spans, a
record that is not of its format being a dead letter (stage "read"), and assembles each trace
from its spans wherever they were (`transforms/assemble.py`). `AssembleOtlpMessages`
(streaming) does the same for OTLP messages on Pub/Sub, emitting each complete trace as a
Message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import apache_beam as beam
import orjson

from rt4chart.pipeline.sources import langfuse, otlp, phoenix
from rt4chart.pipeline.sources import records as readers
from rt4chart.pipeline.sources.common import SpanDecodeError
from rt4chart.pipeline.storage.text_files import (
    DEFAULT_MAX_RECORD_BYTES,
    READ_ERRORS,
    STAGE,
    Oversize,
    numbered_lines,
    open_input,
)
from rt4chart.schemas.records import DeadLetter, Message
from rt4chart.transforms.assemble import AssembleStream, AssembleTraces
from rt4chart.transforms.checks.json_text import load_strict
from rt4chart.transforms.common.fields import InvalidTrace
from rt4chart.transforms.common.guard import GuardedDoFn, StorageDoFn
from rt4chart.transforms.common.span_mapping import SpanMapping

logger = logging.getLogger(__name__)

# The JSON-lines span formats: each line's spans.
LINE_DECODERS: dict[str, Callable[[Any], list]] = {
    "otlp": otlp.line_spans, "openinference": phoenix.line_spans,
}
_LABELS = {"otlp": "Otlp", "openinference": "OpenInference", "phoenix": "Phoenix",
           "langfuse": "Langfuse"}


def _raw(record: Any) -> str:
    if isinstance(record, bytes):
        return record.decode("utf-8", errors="replace")
    if isinstance(record, str):
        return record
    return orjson.dumps(record, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class _DecodeFn(GuardedDoFn):
    """A record (line, row, message; or a numbered line, ("PATH line N", text)) -> its
    spans; one that is not of the format -> a dead letter naming the format and why (and the
    file and line). A span that cannot be read (`otlp.BadSpan`) -> a dead letter naming its
    span id, and a stand-in in its trace so that the trace is not assembled without it."""

    stage = STAGE

    def fault(self, record: Any, reason: str) -> Iterator:
        where, record = record if isinstance(record, tuple) else ("", record)
        yield beam.pvalue.TaggedOutput("dead", DeadLetter(STAGE, reason, self._raw(record)))

    def __init__(self, what: str, decode: Callable[[Any], list], raw: Callable[[Any], str]):
        self._what = what
        self._decode = decode
        self._raw = raw

    def process(self, record: Any) -> Iterator:
        where, record = record if isinstance(record, tuple) else ("", record)
        where = f"{where}: " if where else ""
        try:
            spans = self._decode(record)
        except (SpanDecodeError, ValueError, TypeError) as exc:
            yield beam.pvalue.TaggedOutput("dead", DeadLetter(
                STAGE, f"{where}not {self._what}: {exc}"[:500], self._raw(record)))
            return
        for span in spans:
            if isinstance(span, otlp.BadSpan):
                yield from _bad_span(span, where, self._what)
            else:
                yield span


def _bad_span(bad: otlp.BadSpan, where: str, what: str) -> Iterator:
    yield beam.pvalue.TaggedOutput("dead", DeadLetter(
        STAGE, f"{where}span {bad.span_id or '(no id)'}: not {what}: {bad.reason}"[:500],
        bad.raw, bad.trace_id or None))
    marker = otlp.unreadable_marker(bad)
    if marker is not None:
        yield marker


class _LangfuseFileFn(StorageDoFn):
    """A Langfuse export file -> its spans: one JSON document, else JSON lines. A file over
    `max_bytes` is read as JSON lines, each line within the limit (a single document that
    large is one dead letter, never held whole)."""

    def __init__(self, allow_partial: bool, max_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        self._allow_partial = allow_partial
        self._max_bytes = max_bytes

    def process(self, path: str) -> Iterator:
        try:
            with open_input(path) as stream:
                data = stream.read(self._max_bytes + 1)
        except READ_ERRORS as exc:
            letter = readers.partial_input(path, "0 records", exc, self._allow_partial)
            yield beam.pvalue.TaggedOutput("dead", letter)
            return
        if len(data) > self._max_bytes:
            del data
            yield from _large_export(path, self._max_bytes, self._allow_partial)
            return
        try:
            documents = [(path, load_strict(data))]
        except orjson.JSONDecodeError:  # JSON lines: one document a line
            documents = list(_json_lines(path, data))
        except InvalidTrace as exc:  # a key given twice: ambiguous (json_text)
            documents = [(path, DeadLetter(STAGE, f"{path}: not a Langfuse export: {exc}"[:500],
                                           _raw(data)))]
        for where, document in documents:
            if isinstance(document, DeadLetter):
                yield beam.pvalue.TaggedOutput("dead", document)
                continue
            yield from _objects_spans(where, document)


def _large_export(path: str, max_bytes: int, allow_partial: bool) -> Iterator:
    """A Langfuse export over `max_bytes`, read as JSON lines (each line within the limit)."""
    line_no = 0
    try:
        with open_input(path) as stream:
            for line_no, data, codec in numbered_lines(stream, max_bytes, path):
                if isinstance(data, Oversize):
                    yield beam.pvalue.TaggedOutput("dead", readers.oversize_letter(
                        f"{path} line {line_no}", data.size, data.head, codec, max_bytes))
                    continue
                for where, document in _json_lines(path, data, line_no - 1):
                    if isinstance(document, DeadLetter):
                        yield beam.pvalue.TaggedOutput("dead", document)
                    else:
                        yield from _objects_spans(where, document)
    except READ_ERRORS as exc:
        yield beam.pvalue.TaggedOutput("dead", readers.partial_input(
            path, f"{line_no} line(s)", exc, allow_partial))


def _json_lines(path: str, data: bytes, first: int = 0) -> Iterator[tuple[str, Any]]:
    for line_no, line in enumerate(data.splitlines(), first + 1):
        if not line.strip():
            continue
        try:
            yield f"{path} line {line_no}", load_strict(line)
        except orjson.JSONDecodeError as exc:
            yield path, DeadLetter(STAGE, f"{path} line {line_no}: not a Langfuse export: "
                                          f"not valid JSON: {exc}"[:500], _raw(line))
        except InvalidTrace as exc:
            yield path, DeadLetter(STAGE, f"{path} line {line_no}: not a Langfuse export: "
                                          f"{exc}"[:500], _raw(line))


def _objects_spans(where: str, document: Any) -> Iterator:
    try:
        objects = list(langfuse.objects(document))
    except SpanDecodeError as exc:
        objects = []
        yield beam.pvalue.TaggedOutput("dead", DeadLetter(
            STAGE, f"{where}: not a Langfuse export: {exc}"[:500], _raw(document)))
    for obj in objects:
        try:
            yield from langfuse.object_spans(obj)
        except (SpanDecodeError, ValueError, TypeError) as exc:
            yield beam.pvalue.TaggedOutput("dead", DeadLetter(
                STAGE, f"{where}: not a Langfuse trace or observation: {exc}"[:500],
                _raw(obj)))


def _file_spans(pbegin: beam.pvalue.PBegin, fmt: str, paths: tuple[str, ...],
                allow_partial: bool, max_bytes: int,
                ) -> tuple[beam.PCollection, list[beam.PCollection]]:
    label = _LABELS[fmt]
    if fmt == "langfuse":
        out = (pbegin
               | f"{label}Paths" >> beam.Create(paths)
               | f"{label}Match" >> beam.FlatMap(readers.input_paths)
               | f"{label}Read" >> beam.ParDo(_LangfuseFileFn(allow_partial, max_bytes))
               .with_outputs("dead", main="spans"))
        return out.spans, [out.dead]
    read = pbegin | f"{label}Records" >> (
        readers.ReadRecordFiles(paths, "parquet", allow_partial, max_bytes)
        if fmt == "phoenix" else readers.ReadNumberedLines(paths, allow_partial, max_bytes))
    decode = phoenix.row_span if fmt == "phoenix" else LINE_DECODERS[fmt]
    fn = _DecodeFn(f"{fmt} spans", (lambda r: [decode(r)]) if fmt == "phoenix" else decode,
                   _raw)
    out = read.records | f"{label}Spans" >> beam.ParDo(fn).with_outputs("dead", main="spans")
    return out.spans, [read.dead_letters, out.dead]


class ReadSpanTraces(beam.PTransform):
    """Span files ({path or glob: format}) -> trace records (dicts in the input schema) and
    dead letters: records not of their format (stage "read") and traces whose spans make no
    trace (stage "assemble")."""

    def __init__(self, inputs: dict[str, str], allow_partial_input: bool = False,
                 mapping: SpanMapping | None = None,
                 max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES):
        super().__init__()
        self._inputs = dict(inputs)
        self._partial = allow_partial_input
        self._mapping = mapping or SpanMapping()
        self._max_bytes = max_record_bytes

    def expand(self, pbegin: beam.pvalue.PBegin) -> readers.ReadOutputs:
        spans, dead = [], []
        for fmt in sorted(set(self._inputs.values())):
            paths = tuple(p for p, f in self._inputs.items() if f == fmt)
            got, letters = _file_spans(pbegin, fmt, paths, self._partial, self._max_bytes)
            spans.append(got)
            dead.extend(letters)
        traces = (tuple(spans) | "AllSpans" >> beam.Flatten()
                  | "Assemble" >> AssembleTraces(self._mapping))
        dead.append(traces.dead_letters)
        return readers.ReadOutputs(traces.traces, tuple(dead) | "SpanDeadLetters" >> beam.Flatten())


class StreamOutputs(NamedTuple):
    messages: beam.PCollection[Message]
    dead_letters: beam.PCollection[DeadLetter]


class AssembleOtlpMessages(beam.PTransform):
    """OTLP messages (as the Collector's googlecloudpubsub exporter publishes them) -> one
    Message per complete trace (body: the trace record as JSON), and dead letters: messages
    that are not OTLP traces (stage "read") and incomplete traces (stage "assemble")."""

    def __init__(self, mapping: SpanMapping, horizon_s: float = 86_400.0):
        super().__init__()
        self._mapping = mapping
        self._horizon_s = horizon_s

    def expand(self, messages: beam.PCollection[Message]) -> StreamOutputs:
        spans = messages | "Spans" >> beam.ParDo(_DecodeFn(
            "OTLP traces", otlp.message_spans, otlp.message_raw)).with_outputs(
                "dead", main="spans")
        traces = spans.spans | "Assemble" >> AssembleStream(self._mapping, self._horizon_s)
        dead = (spans.dead, traces.dead_letters) | "DeadLetters" >> beam.Flatten()
        return StreamOutputs(traces.traces, dead)
