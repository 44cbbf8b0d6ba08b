"""The files of a batch audit run in chunks (see chunks.py): input shards keyed by trace_id, and
the rows each chunk carries to the run's aggregates.

All of them are local pickle streams (one `pickle.dumps` after the other), appended by one DoFn
instance per file, so that parallel writers never share a file and nothing is held in memory
beyond a buffer of FLUSH_BYTES.

- Shards: `WriteShards` puts each record in shard `shard_of(record)`, a hash of its trace_id as
  validation reads it (the stripped string), so that every copy of a trace_id lands in the same
  shard, and the dedupe inside one shard sees them all. A record without a readable trace_id
  is dead-lettered by validation whichever shard it is in; the read stage's dead letters go to
  shard 0. `ReadShard` gives a shard back as `ReadTraces` gives files: records and dead
  letters.
- Carried rows: `WritePickles` / `ReadPickles`, a chunk's answer rows and usage records, read
  back by the run's aggregate pipeline.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import apache_beam as beam

from rt4chart.pipeline.sources.traces import ReadOutputs
from rt4chart.schemas.records import DeadLetter
from rt4chart.transforms.common.guard import StorageDoFn
from rt4chart.transforms.validate import load_json, raw_text

FLUSH_BYTES = 8 << 20  # what one writer buffers before appending to its files


@dataclass(frozen=True)
class Chunk:
    """One pipeline run of a batch audit in chunks: its input shard (a folder of pickle
    streams), and the folder where it leaves its answer rows and usage records (`carry`), from
    which the run's rates and costs are computed once every chunk has run."""

    index: int
    shard: str
    carry: str


def shard_folder(folder: str, shard: int) -> str:
    return os.path.join(folder, f"shard-{shard:05d}")


def trace_key(record: Any) -> str | None:
    """The trace_id validation would give the record (a JSON line or a Parquet row), or None
    when it has none that validation could accept."""
    if isinstance(record, bytes | str):
        try:
            record = load_json(record)
        except Exception:  # noqa: BLE001 - not JSON: a dead letter in any shard
            return None
    value = record.get("trace_id") if isinstance(record, dict) else None
    return value if isinstance(value, str) else None


def shard_of(record: Any, shards: int) -> int:
    """The shard of a record: by its trace_id, else (an invalid record) by its text."""
    key = trace_key(record)
    text = key if key is not None else raw_text(record)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def append_pickles(path: str, parts: Iterable[bytes]) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "ab") as fh:
        fh.writelines(parts)


def read_pickles(path: str) -> Iterator[Any]:
    """The objects of one pickle stream, one at a time."""
    with open(path, "rb") as fh:
        while True:
            try:
                yield pickle.load(fh)
            except EOFError:
                return


class _AppendFn(StorageDoFn):
    """Elements -> pickles appended to files named by `file_of(element)` under `folder`, with a
    name of this DoFn instance's own."""

    def __init__(self, folder: str):
        self._folder = folder

    def file_of(self, element: Any) -> str:
        raise NotImplementedError

    def setup(self) -> None:
        self._writer = uuid.uuid4().hex

    def start_bundle(self) -> None:
        self._buffers: dict[str, list[bytes]] = {}
        self._size = 0

    # No return annotation: it yields nothing, and Beam 2.78 refuses a DoFn whose process is
    # declared to return None ("Return value not iterable") when it type-checks the chunked run.
    def process(self, element: Any):
        data = pickle.dumps(element, protocol=pickle.HIGHEST_PROTOCOL)
        self._buffers.setdefault(self.file_of(element), []).append(data)
        self._size += len(data)
        if self._size >= FLUSH_BYTES:
            self._flush()

    def finish_bundle(self) -> None:
        self._flush()

    def _flush(self) -> None:
        for name, parts in self._buffers.items():
            append_pickles(os.path.join(self._folder, name, f"{self._writer}.pkl"), parts)
        self._buffers, self._size = {}, 0


class _ShardFn(_AppendFn):
    def __init__(self, folder: str, shards: int):
        super().__init__(folder)
        self._shards = shards

    def file_of(self, element: Any) -> str:
        shard = 0 if isinstance(element, DeadLetter) else shard_of(element, self._shards)
        return os.path.basename(shard_folder(self._folder, shard))


class _CarryFn(_AppendFn):
    def __init__(self, folder: str, name: str):
        super().__init__(folder)
        self._name = name

    def file_of(self, element: Any) -> str:
        return self._name


def write_shards(read: ReadOutputs, folder: str, shards: int) -> None:
    """Records and the read stage's dead letters -> the shards under `folder`. Each output has
    its own writer: a Flatten before them would hold the whole input in the local runner's
    memory (it materialises every Flatten)."""
    read.records | "ShardRecords" >> beam.ParDo(_ShardFn(folder, shards))
    read.dead_letters | "ShardDeadLetters" >> beam.ParDo(_ShardFn(folder, shards))


class _ReadShardFn(StorageDoFn):
    def process(self, folder: str) -> Iterator:
        names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        for name in names:
            for item in read_pickles(os.path.join(folder, name)):
                yield beam.pvalue.TaggedOutput("dead", item) if isinstance(
                    item, DeadLetter) else item


class ReadShard(beam.PTransform):
    """A shard folder -> its records and the read stage's dead letters it holds (as
    `ReadTraces` gives them from files)."""

    def __init__(self, folder: str):
        super().__init__()
        self._folder = folder

    def expand(self, pbegin: beam.pvalue.PBegin) -> ReadOutputs:
        parts = (pbegin
                 | "Shard" >> beam.Create([self._folder])
                 | "Records" >> beam.ParDo(_ReadShardFn()).with_outputs("dead", main="records"))
        return ReadOutputs(parts.records, parts.dead)


class WritePickles(beam.PTransform):
    """Elements -> pickle streams under FOLDER/NAME/ (one per writer)."""

    def __init__(self, folder: str, name: str):
        super().__init__()
        self._folder, self._name = folder, name

    def expand(self, elements: beam.PCollection) -> beam.PCollection:
        return elements | "Append" >> beam.ParDo(_CarryFn(self._folder, self._name))


class ReadPickles(beam.PTransform):
    """The elements `WritePickles(folder, name)` wrote, in earlier pipeline runs."""

    def __init__(self, folder: str, name: str):
        super().__init__()
        self._folder, self._name = folder, name

    def expand(self, pbegin: beam.pvalue.PBegin) -> beam.PCollection:
        directory = os.path.join(self._folder, self._name)
        paths = sorted(os.path.join(directory, n) for n in (
            os.listdir(directory) if os.path.isdir(directory) else []))
        return (pbegin
                | "Files" >> beam.Create(paths)
                | "Read" >> beam.FlatMap(read_pickles))
