"""A local batch audit in chunks, so that its memory stays bounded whatever the input's size.

Beam's local batch runner (FnApiRunner) holds each stage's whole output in memory until the
next stage has read it (every GroupByKey, side input and Flatten is materialised), so one
pipeline run over the whole input needs memory in proportion to it: about 0.3 MB per trace
with the offline judge. With more input records than the chunk size (`--chunk-traces`, default
DEFAULT_CHUNK_TRACES), a local run:

1. counts the input records (lines, Parquet rows; `count_records`);
2. splits the input into S = ceil(records / chunk size) shards in one streaming pipeline run
   (`ReadTraces` -> `WriteShards`, no grouping), each record to the shard of its trace_id's
   hash (shards.py): every copy of a trace_id is in the same shard, so the dedupe within a
   shard (validation keeps the earliest copy) keeps the copy one run over the whole input
   would keep, and a trace_id seen twice is still audited once;
3. audits the shards one pipeline run after the other, each writing its tables to a folder of
   its own, whose files then move into the run's table folders as `part-cNNNNN-...`: one set of
   tables, as one run writes;
4. computes route_rates and costs in a last pipeline run over the answer rows and usage records
   each chunk left behind (the same transforms as one run's, so the same rows).

The work files (shards, carried rows, each chunk's tables until they move) stay inside the
run's staging folder (`.tmp-chunks/`, never part of the run's files; removed on success and on
failure), or in a temporary folder when --out is not local. Remote runners (Dataflow) get the
whole input as one job: their shuffles are not held in memory. The Batch API judge runs in one
pipeline unless `--chunk-traces` is given: each chunk would wait for its own batches.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace

import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.chunk_files import Chunk, shard_folder, write_shards
from rt4chart.pipeline.run.config import DEFAULT_CHUNK_TRACES, AuditConfig
from rt4chart.pipeline.sources.detect import file_format
from rt4chart.pipeline.sources.traces import input_paths
from rt4chart.pipeline.storage.folder_scan import list_files
from rt4chart.pipeline.storage.run_lock import new_pipeline
from rt4chart.pipeline.storage.table_files import is_work_file
from rt4chart.pipeline.storage.text_files import CHUNK_BYTES, READ_ERRORS, open_input

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_CHUNK_TRACES", "chunk_size", "is_local"]

# Runners that run a job in this process (or its local workers), holding its data in memory.
LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner", "BundleBasedDirectRunner",
                 "SwitchingDirectRunner", "PrismRunner")
WORK = ".tmp-chunks"  # inside the staging folder; ".tmp-" files are never a run's files


def chunk_size(config: AuditConfig) -> int:
    """Traces per pipeline run (0: one run): `--chunk-traces`, else the default (none for the
    Batch API judge, whose every chunk would wait for its own batches)."""
    if config.chunk_traces is not None:
        return config.chunk_traces
    return 0 if config.judge.kind().traits.batch_api else DEFAULT_CHUNK_TRACES


def is_local(options: PipelineOptions) -> bool:
    runner = options.view_as(StandardOptions).runner
    name = runner if isinstance(runner, str) else type(runner).__name__
    return str(name).rsplit(".", 1)[-1] in LOCAL_RUNNERS


def _count_lines(path: str) -> int:
    """About how many lines a text file holds: its line breaks (CR LF, CR and LF each one, as
    `textfiles.split_lines` reads them), plus a last line without one."""
    breaks, last = 0, b"\n"
    try:
        with open_input(path) as stream:
            while data := stream.read(CHUNK_BYTES):
                breaks += data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
                breaks -= last == b"\r" and data[:1] == b"\n"  # a CR LF across two reads
                last = data[-1:]
    except READ_ERRORS:
        pass  # a damaged file: the read fails or dead-letters it, as in one run
    return breaks + (last not in (b"\n", b"\r"))


def _count_rows(path: str) -> int:
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
            return pq.ParquetFile(fh).metadata.num_rows
    except (OSError, ValueError):
        return 0


def count_records(inputs: tuple[str, ...], input_format: str = "auto") -> int:
    """About how many records the inputs hold (lines of text files, rows of Parquet files);
    only the number of chunks depends on it."""
    return sum(_count_rows(path) if file_format(path, input_format) in ("parquet", "phoenix")
               else _count_lines(path) for pattern in inputs for path in input_paths(pattern))


def shard_count(config: AuditConfig, options: PipelineOptions) -> int:
    """How many pipeline runs the audit takes: 1 unless it runs locally over more records than
    the chunk size."""
    size = chunk_size(config)
    if size <= 0 or not is_local(options):
        return 1
    return max(1, math.ceil(record_count(config) / size))


def record_count(config: AuditConfig) -> int:
    """About how many records the run reads: its files' and its in-memory records'."""
    records = 0 if config.records is None else len(config.records)
    return count_records(config.inputs, config.input_format) + records


def audit_runs(config: AuditConfig, options: PipelineOptions,
               temp: str | None = None) -> Iterator[tuple[AuditConfig, Chunk | None]]:
    """The pipeline runs of a batch audit writing to `config.out` (the staging folder): yields
    (config, chunk) for the caller to build and run with `graph.build(..., chunk=chunk)`, in
    order. One run over the whole input yields (config, None) alone; otherwise this splits the
    input before the first chunk, moves each chunk's tables in after it has run, and runs the
    aggregates after the last. Close the iterator when a run fails (its work files go).
    `temp`: the run's temporary folder (runlock.run_temp_folder)."""
    shards = shard_count(config, options)
    if shards == 1:
        yield config, None
        return
    local = FileSystems.get_scheme(config.out) is None
    work = os.path.join(config.out, WORK) if local else tempfile.mkdtemp(prefix="rt4chart-")
    carry = os.path.join(work, "carry")
    try:
        logger.info("auditing in %d chunks of about %d traces (--chunk-traces)", shards,
                    chunk_size(config))
        _split(config, options, work, shards, temp)
        for index in range(shards):
            chunk = Chunk(index, shard_folder(work, index), carry)
            out = FileSystems.join(config.out, f"{WORK}-out-{index:05d}")
            logger.info("chunk %d of %d", index + 1, shards)
            yield replace(config, out=out), chunk
            move_tables(out, config.out, f"c{index:05d}")
            gc.collect()  # the last run's pipeline and runner (cyclic) go before the next run
        _aggregate(config, options, carry, temp)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _split(config: AuditConfig, options: PipelineOptions, work: str, shards: int,
           temp: str | None = None) -> None:
    pipeline = new_pipeline(options, temp)
    read = pipeline | "ReadTraces" >> graph.read_traces(config)
    write_shards(read, work, shards)
    pipeline.run().wait_until_finish()


def _aggregate(config: AuditConfig, options: PipelineOptions, carry: str,
               temp: str | None = None) -> None:
    out = FileSystems.join(config.out, f"{WORK}-out-aggregates")
    pipeline = new_pipeline(options, temp)
    graph.build_aggregates(pipeline, replace(config, out=out), carry)
    pipeline.run().wait_until_finish()
    move_tables(out, config.out, "cagg")


def chunk_file(rel: str, tag: str) -> str:
    """Where a chunk's file (relative to its folder) goes in the run's: its table folder (and
    any partition folders) kept, the file named `part-<tag>-...`."""
    folder, _, name = rel.rpartition("/")
    name = f"part-{tag}-{name.removeprefix('part-')}"
    return f"{folder}/{name}" if folder else name


def move_tables(source: str, out: str, tag: str) -> None:
    """Move the files a chunk wrote under `source` into `out` (see `chunk_file`), then remove
    `source`; what a write cut short left (beam-temp-, .tmp-) is not moved."""
    moves = [(rel, chunk_file(rel, tag)) for rel in list_files(source) if not is_work_file(rel)]
    for rel, dest in moves:
        target = FileSystems.join(out, *dest.split("/"))
        parent = target.rsplit("/", 1)[0]
        if FileSystems.get_scheme(parent) is None:
            os.makedirs(parent, exist_ok=True)
        FileSystems.rename([FileSystems.join(source, *rel.split("/"))], [target])
    rest = [FileSystems.join(source, *r.split("/")) for r in list_files(source)]
    if rest:
        FileSystems.delete(rest)
    if FileSystems.get_scheme(source) is None:
        shutil.rmtree(source, ignore_errors=True)
