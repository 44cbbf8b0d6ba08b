"""Sources (JSONL, Parquet) and file sinks (Parquet tables; batch and streaming)."""

from __future__ import annotations

import logging
import time
import uuid

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from rt4chart.schemas.rows import DeadLetterRow, to_dict
from rt4chart.schemas.tables import TABLES, arrow_schema

logger = logging.getLogger(__name__)

PARQUET_SUFFIXES = (".parquet", ".pq")


def is_parquet(path: str, input_format: str = "auto") -> bool:
    """Whether to read a path as Parquet: by `input_format`, or by its suffix when "auto"."""
    if input_format != "auto":
        return input_format == "parquet"
    return path.lower().rstrip("*").endswith(PARQUET_SUFFIXES)


class ReadTraces(beam.PTransform):
    """Trace files (JSONL lines or Parquet rows, paths or globs) -> raw records.

    JSONL lines stay text so that a line that is not JSON reaches the dead letters as received.
    Blank lines are not records and are skipped. The format is told by the file suffix
    (.parquet/.pq, else JSON lines, .gz and .bz2 decompressed) unless `input_format` says.
    """

    def __init__(self, inputs: tuple[str, ...], input_format: str = "auto"):
        super().__init__()
        self._inputs = inputs
        self._format = input_format

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        parts = []
        for i, path in enumerate(self._inputs):
            if is_parquet(path, self._format):
                part = pbegin | f"ReadParquet{i}" >> beam.io.ReadFromParquet(path)
            else:
                part = (
                    pbegin
                    | f"ReadJsonl{i}" >> beam.io.ReadFromText(path)
                    | f"SkipBlank{i}" >> beam.Filter(lambda line: bool(line.strip()))
                )
            parts.append(part)
        return tuple(parts) | "Records" >> beam.Flatten()


class WriteTable(beam.PTransform):
    """Rows (of the table's row class) -> Parquet files under OUT/<table>/, with the table's
    Arrow schema."""

    def __init__(self, out: str, table: str):
        super().__init__()
        self._out = out.rstrip("/")
        self._table = TABLES[table]

    def expand(self, rows: beam.PCollection):
        return rows | "Dicts" >> beam.Map(to_dict) | "Parquet" >> beam.io.WriteToParquet(
            FileSystems.join(self._out, self._table.name, "part"),
            arrow_schema(self._table),
            file_name_suffix=".parquet",
        )


def dead_letter_message(row: DeadLetterRow) -> beam.io.PubsubMessage:
    """A dead-letter row as a Pub/Sub message: the payload as received, why as attributes."""
    attributes = {"stage": row.stage, "reason": row.reason[:1024],
                  "dead_letter_id": row.dead_letter_id}
    for name, value in (("trace_id", row.trace_id), ("route", row.route)):
        if value:
            attributes[name] = value[:1024]
    return beam.io.PubsubMessage(row.raw.encode(), attributes)


class _WriteBundleFn(beam.DoFn):
    """Streaming file sink: one Parquet file per bundle (and per `max_rows`), written to a
    temporary name and renamed, so that a reader never sees a partial file and a window that
    fires many times loses no row (WriteToParquet's windowed writes did, locally)."""

    def __init__(self, directory: str, table: str, max_rows: int = 10_000):
        self._dir = directory
        self._table = table
        self._max_rows = max_rows

    def setup(self) -> None:
        self._schema = arrow_schema(TABLES[self._table])

    def start_bundle(self) -> None:
        self._rows: list[dict] = []

    def process(self, row) -> None:
        self._rows.append(to_dict(row))
        if len(self._rows) >= self._max_rows:
            self._flush()

    def finish_bundle(self) -> None:
        self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        table = pa.Table.from_pylist(self._rows, schema=self._schema)
        name = f"part-{time.time_ns()}-{uuid.uuid4().hex[:12]}.parquet"
        final = FileSystems.join(self._dir, name)
        temp = FileSystems.join(self._dir, f".tmp-{name}")
        with FileSystems.create(temp) as fh:
            pq.write_table(table, fh)
        FileSystems.rename([temp], [final])
        self._rows = []


class WriteTableStreaming(beam.PTransform):
    """Rows (of the table's row class) -> Parquet files under OUT/<table>/, one per bundle
    (streaming)."""

    def __init__(self, out: str, table: str):
        super().__init__()
        self._dir = FileSystems.join(out.rstrip("/"), TABLES[table].name)
        self._table = table

    def expand(self, rows: beam.PCollection):
        FileSystems.mkdirs(self._dir) if not FileSystems.exists(self._dir) else None
        return rows | "Files" >> beam.ParDo(_WriteBundleFn(self._dir, self._table))


def existing_outputs(out: str) -> list[str]:
    """Table files already present under OUT."""
    found = []
    for name in TABLES:
        pattern = FileSystems.join(out.rstrip("/"), name, "*")
        for result in FileSystems.match([pattern]):
            found.extend(m.path for m in result.metadata_list)
    return found


def prepare_output(out: str, overwrite: bool) -> None:
    """Refuse to mix runs in one output directory unless told to replace the old tables."""
    old = existing_outputs(out)
    if old and not overwrite:
        raise FileExistsError(
            f"{out} already holds {len(old)} table file(s) of an earlier run; "
            "pass --overwrite to replace them or choose another --out"
        )
    if old:
        logger.info("removing %d table files of an earlier run under %s", len(old), out)
        FileSystems.delete(old)
