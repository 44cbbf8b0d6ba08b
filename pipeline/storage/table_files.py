"""Parquet table folders, laid out for query engines: OUT/<table>/dt=YYYY-MM-DD/part-*.parquet.

Each table's files go into Hive-style partition folders named by the UTC day of the table's
partition column (`Table.partition_field`, the column BigQuery partitions the table by:
event_time, window_start, received_at or created_at), so that pyarrow
(`pyarrow.dataset.dataset(DIR, partitioning="hive")`), DuckDB
(`read_parquet('DIR/*/*.parquet', hive_partitioning = true)`) and BigQuery external tables
(`hive_partition_uri_prefix = "gs://.../DIR"`) read `dt` as a column and skip the days a query
does not ask for. The files hold no `dt` column themselves (the folder is the value). A table
with no rows is one empty file in Hive's folder for a null key, `dt=__HIVE_DEFAULT_PARTITION__`,
so that every table folder exists and has the one layout.

Runs written before this layout put their files directly in OUT/<table>/; `table_files` finds
both, so every reader of a run folder (the summary, `report`, `--redo`, `--reuse`) reads either.

Batch writes are atomic as Beam's file sinks are: each bundle writes temporary files under
OUT/<table>/beam-temp-<id>/, and one finalising step renames the files of bundles that
succeeded into place and removes the temporary folder (a retried bundle's files are dropped).
Streaming writes one file per bundle and day, under a temporary name, renamed when complete.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindows

from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.tables import TABLES, Table, arrow_schema
from rt4chart.transforms.common.guard import StorageDoFn

if TYPE_CHECKING:
    from rt4chart.pipeline.stream.pubsub_leases import LeaseHandle

logger = logging.getLogger(__name__)

PARTITION_KEY = "dt"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Hive's folder name for a null key
TEMP_PREFIX = "beam-temp-"
# What names a work file or folder: Beam's temporary folders, and rt4chart's own (".tmp-part-…"
# of a streaming write, the staging folder's ".tmp-chunks/", ".tmp-run/", ".tmp-input/", …).
WORK_PREFIXES = (TEMP_PREFIX, ".tmp-")
# Query engines skip files whose names start so (Spark's "_SUCCESS", a writer's ".…" file).
HIDDEN_PREFIXES = (".", "_")
ROW_GROUP_ROWS = 1024  # rows held per open file before they are written out
MAX_OPEN_FILES = 16  # per bundle; beyond, every open file is closed and new ones started


def partition_folder(value: dt.datetime | None) -> str:
    """The partition folder of a row whose partition column holds `value`: dt=YYYY-MM-DD (UTC
    day; a naive datetime is taken as UTC)."""
    if value is None:
        return f"{PARTITION_KEY}={NULL_PARTITION}"
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC)
    return f"{PARTITION_KEY}={value.date().isoformat()}"


def table_patterns(out: str, name: str) -> tuple[str, str]:
    """The globs of a table's files: partitioned (dt=*/), then flat (runs before partitions)."""
    base = FileSystems.join(out.rstrip("/"), name)
    return (FileSystems.join(base, f"{PARTITION_KEY}=*", "*.parquet"),
            FileSystems.join(base, "*.parquet"))


def is_work_file(rel: str) -> bool:
    """Whether `rel` ("/"-separated, relative to a run, staging or chunk folder, or a bare file
    name) is a work file, not a table's file: it, or a folder it is in, is named `beam-temp-…`
    or `.tmp-…` (a write in progress or cut short, or a job's work folder)."""
    return any(part.startswith(WORK_PREFIXES) for part in rel.split("/"))


def table_files(out: str, name: str) -> list[str]:
    """Every Parquet file of one table of a run folder, in either layout, sorted. Hidden files
    (".tmp-part-…" of a streaming write still open, or "_…", as engines hide them) are not the
    table's."""
    found = {m.path for r in FileSystems.match(list(table_patterns(out, name)))
             for m in r.metadata_list}
    names = ((p, p.rsplit("/", 1)[-1]) for p in found)
    return sorted(p for p, n in names if not (is_work_file(n) or n.startswith(HIDDEN_PREFIXES)))


@dataclass
class OpenFile:
    """A Parquet file being written, with the rows not yet written to it."""

    path: str
    schema: pa.Schema
    rows: list[dict] = field(default_factory=list)
    keys: list = field(default_factory=list)  # what a streaming sink settles once durable
    _handle: object = None
    _writer: pq.ParquetWriter | None = None

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.rows:
            return
        if self._writer is None:
            self._handle = FileSystems.create(self.path)
            self._writer = pq.ParquetWriter(self._handle, self.schema)
        self._writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
        self.rows = []

    def close(self) -> None:
        self.flush()
        if self._writer is not None:
            self._writer.close()
            self._handle.close()


class _DayFiles:
    """The files one bundle writes, one open per partition folder (at most MAX_OPEN_FILES)."""

    def __init__(self, table: Table, path_of):
        self._field = table.partition_field
        self._schema = arrow_schema(table)
        self._path_of = path_of  # folder -> a new file's path
        self._open: dict[str, OpenFile] = {}

    def add(self, row: dict, key=None) -> Iterator[tuple[str, OpenFile]]:
        """Add a row (and its settle key, if any); yields the (folder, file) pairs it had to
        close to make room."""
        folder = partition_folder(row.get(self._field))
        if folder not in self._open and len(self._open) >= MAX_OPEN_FILES:
            yield from self.close()
        if folder not in self._open:
            self._open[folder] = OpenFile(self._path_of(folder), self._schema)
        self._open[folder].add(row)
        if key is not None:
            self._open[folder].keys.append(key)

    def close(self) -> Iterator[tuple[str, OpenFile]]:
        """Close every open file; yields (folder, file)."""
        opened, self._open = self._open, {}
        for folder, open_file in opened.items():
            open_file.close()
            yield folder, open_file


class _WriteTempFilesFn(StorageDoFn):
    """Row dicts -> temporary Parquet files under `temp_dir`, per bundle and partition folder;
    -> (folder, temporary path) of each file, once closed."""

    def __init__(self, temp_dir: str, table: str):
        self._temp_dir = temp_dir
        self._table = table

    def start_bundle(self) -> None:
        self._files = _DayFiles(TABLES[self._table], self._path_of)

    def _path_of(self, folder: str) -> str:
        return FileSystems.join(self._temp_dir, f"{uuid.uuid4().hex}.parquet")

    def process(self, row: dict) -> Iterator[tuple[str, str]]:
        for folder, closed in self._files.add(row):
            yield folder, closed.path

    def finish_bundle(self) -> Iterator:
        for folder, closed in self._files.close():
            yield GlobalWindows.windowed_value((folder, closed.path))


def _rename(source: str, destination: str) -> None:
    """Move a file into place, idempotently (a retried finalisation finds it moved)."""
    if not FileSystems.exists(source) and FileSystems.exists(destination):
        return
    if FileSystems.get_scheme(destination) is None:  # a local rename makes no folders
        os.makedirs(os.path.dirname(destination), exist_ok=True)
    FileSystems.rename([source], [destination])


def _finalize(files: list[tuple[str, str]], directory: str, temp_dir: str, table: str,
              _made: object = None) -> list[str]:
    """Rename the temporary files into DIR/<folder>/part-NNNNN-of-MMMMM.parquet (numbered per
    folder), or write the empty placeholder when there is none; remove the temporary folder."""
    by_folder: dict[str, list[str]] = defaultdict(list)
    for folder, path in files:
        by_folder[folder].append(path)
    final = []
    for folder, paths in sorted(by_folder.items()):
        for i, path in enumerate(sorted(paths)):
            name = f"part-{i:05d}-of-{len(paths):05d}.parquet"
            target = FileSystems.join(directory, folder, name)
            _rename(path, target)
            final.append(target)
    if not final:
        target = FileSystems.join(directory, partition_folder(None), "part-00000-of-00001.parquet")
        with FileSystems.create(target) as fh:
            pq.write_table(arrow_schema(TABLES[table]).empty_table(), fh)
        final.append(target)
    _remove_folder(temp_dir)
    return final


def _make_folder(folder: str) -> None:
    if FileSystems.get_scheme(folder) is None:  # object stores have no folders
        os.makedirs(folder, exist_ok=True)


def _remove_folder(folder: str) -> None:
    """Delete a folder's files (files of retried bundles, never renamed), then the folder."""
    leftovers = [m.path for r in FileSystems.match([FileSystems.join(folder, "*")])
                 for m in r.metadata_list]
    if leftovers:
        FileSystems.delete(leftovers)
    if FileSystems.get_scheme(folder) is None and os.path.isdir(folder):
        os.rmdir(folder)


class WriteTable(beam.PTransform):
    """Rows (of the table's row class) -> Parquet files under OUT/<table>/dt=YYYY-MM-DD/ with
    the table's Arrow schema (batch; atomic, see the module's docstring). Returns the paths
    written."""

    def __init__(self, out: str, table: str):
        super().__init__()
        self._dir = FileSystems.join(out.rstrip("/"), TABLES[table].name)
        self._table = table

    def expand(self, rows: beam.PCollection) -> beam.PCollection[str]:
        temp_dir = FileSystems.join(self._dir, f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        # As Beam's file sinks do, the temporary folder is made when the pipeline starts.
        made = (rows.pipeline | "Begin" >> beam.Create([temp_dir])
                | "TempFolder" >> beam.Map(_make_folder))
        return (
            rows
            | "Global" >> beam.WindowInto(GlobalWindows())  # rows may come windowed
            | "Dicts" >> beam.Map(to_dict)
            | "TempFiles" >> beam.ParDo(_WriteTempFilesFn(temp_dir, self._table))
            | "AllFiles" >> beam.combiners.ToList()
            | "Finalize" >> beam.FlatMap(_finalize, self._dir, temp_dir, self._table,
                                         beam.pvalue.AsList(made))  # after TempFolder
        )


class _WriteBundleFn(StorageDoFn):
    """Streaming file sink: one Parquet file per bundle and partition folder, written to a
    temporary name, fsync'd and renamed, so that a reader never sees a partial file and a window
    that fires many times loses no row (WriteToParquet's windowed writes did, locally).

    With `settle` (the run's `pubsub_leases.LeaseHandle`, local runner), each row that ends a
    Pub/Sub message is reported once its file is durable, so that the message is acknowledged
    then.
    """

    def __init__(self, directory: str, table: str, settle: LeaseHandle | None = None):
        self._dir = directory
        self._table = table
        self._settle = settle

    def start_bundle(self) -> None:
        self._files = _DayFiles(TABLES[self._table], self._path_of)

    def _path_of(self, folder: str) -> str:
        name = f"part-{time.time_ns()}-{uuid.uuid4().hex[:12]}.parquet"
        return FileSystems.join(self._dir, folder, f".tmp-{name}")

    # No return annotation: Beam 2.78 refuses a process declared to return None.
    def process(self, row):
        values = to_dict(row)
        key = None
        if self._settle is not None:
            from rt4chart.pipeline.stream.pubsub_leases import outcome_key

            key = outcome_key(self._table, values)
        self._publish(self._files.add(values, key))

    def finish_bundle(self) -> None:
        self._publish(self._files.close())

    def _publish(self, closed: Iterator[tuple[str, OpenFile]]) -> None:
        for _, open_file in closed:
            folder, name = open_file.path.rsplit("/", 1)
            final = f"{folder}/{name[len('.tmp-'):]}"
            _sync(open_file.path)
            FileSystems.rename([open_file.path], [final])
            _sync(folder)  # the rename itself
            if self._settle is not None:
                from rt4chart.pipeline.stream.pubsub_leases import settle

                settle(self._settle, open_file.keys)


def _sync(path: str) -> None:
    """fsync a local file or folder (object stores are durable once a write is closed)."""
    if FileSystems.get_scheme(path) is not None:
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriteTableStreaming(beam.PTransform):
    """Rows (of the table's row class) -> Parquet files under OUT/<table>/dt=YYYY-MM-DD/, one
    per bundle and day (streaming). `settle`: see `_WriteBundleFn`."""

    def __init__(self, out: str, table: str, settle: LeaseHandle | None = None):
        super().__init__()
        self._dir = FileSystems.join(out.rstrip("/"), TABLES[table].name)
        self._table = table
        self._settle = settle

    def expand(self, rows: beam.PCollection) -> beam.PCollection:
        return rows | "Files" >> beam.ParDo(_WriteBundleFn(self._dir, self._table,
                                                            self._settle))


def salvage_temp_files(table_dir: str, table: str) -> list[str]:
    """After a failed batch job (local files only): move the whole temporary Parquet files its
    bundles wrote under TABLE_DIR/beam-temp-…/ into partition folders as part files, so that
    what the job completed stays readable; files a cut-short write left unreadable are
    dropped with their folders. The paths moved in.

    Only for local folders: there a bundle is not retried, so no row is in two files (a
    remote runner retries bundles, and its leftover files may repeat rows)."""
    if FileSystems.get_scheme(table_dir) is not None or not os.path.isdir(table_dir):
        return []
    field_name = TABLES[table].partition_field
    moved = []
    for temp in sorted(os.listdir(table_dir)):
        folder = os.path.join(table_dir, temp)
        if not temp.startswith(TEMP_PREFIX) or not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            try:
                data = pq.read_table(os.path.join(folder, name), columns=[field_name])
            except (OSError, pa.ArrowException):
                continue  # cut short while written: not a whole file
            if data.num_rows == 0:
                continue
            day = partition_folder(data.column(field_name)[0].as_py())
            target = os.path.join(table_dir, day, f"part-salvaged-{name}")
            _rename(os.path.join(folder, name), target)
            moved.append(target)
        _remove_folder(folder)
    return moved
