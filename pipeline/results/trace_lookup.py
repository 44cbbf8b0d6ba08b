"""A run's traces read back from the files it audited, in any format `audit` reads.

The answers and claims tables hold neither the question nor the documents, so the report's
trace view and `export` read the traces again. They go through the very readers of the audit
(`ReadTraces`: trace JSONL or Parquet, OTLP JSON, OpenInference span JSON, a Phoenix spans
export, a Langfuse export, compressed or not; the format told by each file's content unless
given), in a small local Beam pipeline, so that a span source gives the same trace (the same
id, route, question and documents) as the audit saw. The run folder's `summary.json` records
the inputs, their format and the span mapping (`inputs`, `input_format`, `spans`), so that a
report finds them by itself while the files are still there.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
from collections.abc import Iterable

import apache_beam as beam
import orjson
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.sources.traces import ReadTraces
from rt4chart.schemas.records import PreparedTrace
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import InvalidTrace, parse_trace

logger = logging.getLogger(__name__)


def mapping_record(spans: SpanMapping | None) -> dict:
    """The span mapping as summary.json keeps it."""
    return dataclasses.asdict(spans or SpanMapping())


def mapping_of(record: dict | None) -> SpanMapping:
    """The span mapping summary.json recorded (the default when it recorded none)."""
    if not record:
        return SpanMapping()
    known = {f.name for f in dataclasses.fields(SpanMapping)}
    return SpanMapping(**{k: v for k, v in record.items() if k in known})


def _as_text(record: object) -> str:
    if isinstance(record, bytes):
        return record.decode("utf-8", "replace")
    if isinstance(record, str):
        return record
    return orjson.dumps(record, default=str).decode()


def read_records(paths: Iterable[str], input_format: str = "auto",
                 spans: SpanMapping | None = None) -> list[str]:
    """Every trace record of the files `paths` (as JSON text), read as `audit` reads them;
    records it would dead-letter are left out (the run's dead letters report them)."""
    paths = tuple(paths)
    with tempfile.TemporaryDirectory(prefix="rt4chart-traces-") as tmp:
        prefix = os.path.join(tmp, "records")
        options = PipelineOptions(["--runner", "FnApiRunner"])
        with beam.Pipeline(options=options) as pipeline:
            read = pipeline | "ReadTraces" >> ReadTraces(paths, input_format, True, spans)
            (read.records | "Text" >> beam.Map(_as_text)
             | "Write" >> beam.io.WriteToText(prefix, file_name_suffix=".jsonl"))
        out: list[str] = []
        for name in sorted(os.listdir(tmp)):
            with open(os.path.join(tmp, name), encoding="utf-8") as fh:
                out.extend(line.rstrip("\n") for line in fh if line.strip())
        return out


def find_traces(paths: Iterable[str], wanted: set[str], input_format: str = "auto",
                spans: SpanMapping | None = None,
                found: dict[str, PreparedTrace] | None = None) -> dict[str, PreparedTrace]:
    """The segmented traces of `paths` whose id is in `wanted` (first one of an id wins)."""
    found = {} if found is None else found
    for record in read_records(paths, input_format, spans):
        try:
            trace = parse_trace(record)
        except InvalidTrace:
            continue
        if trace.trace_id in wanted and trace.trace_id not in found:
            found[trace.trace_id] = prepare(trace, SegmentConfig())
    return found
