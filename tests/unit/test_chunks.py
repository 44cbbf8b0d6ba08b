"""A batch audit in chunks (pipeline/run/chunked_audit.py, chunk_files.py), piece by piece,
without the audit: shards keyed by trace_id, record counts, chunk sizes, file names."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.run.chunk_files import (
    read_pickles,
    shard_folder,
    shard_of,
    trace_key,
    write_shards,
)
from rt4chart.pipeline.run.chunked_audit import (
    DEFAULT_CHUNK_TRACES,
    chunk_file,
    chunk_size,
    count_records,
    is_local,
    shard_count,
)
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.sources.traces import ReadTraces
from rt4chart.schemas.records import DeadLetter
from rt4chart.transforms.judges.contract import JudgeSpec


def _config(inputs=("x.jsonl",), judge="offline", **kw) -> AuditConfig:
    return AuditConfig(inputs=tuple(inputs), out="out",
                       stages=StagesConfig(judge=JudgeSpec.of(judge, {})), **kw)


def test_every_copy_of_a_trace_id_has_the_shard_validation_would_key_it_by():
    line = json.dumps({"trace_id": "t-7", "answer": "a", "contexts": ["c"]})
    row = {"trace_id": "t-7", "answer": "another copy", "contexts": ["d"],
           "timestamp": datetime(2024, 5, 1, tzinfo=UTC)}
    assert trace_key(line) == trace_key(row) == "t-7"
    # ids are kept byte for byte (issue 33): " t-7 " is another trace, keyed as it is
    assert trace_key({**row, "trace_id": " t-7 "}) == " t-7 "
    for shards in (2, 7, 64):
        assert shard_of(line, shards) == shard_of(row, shards) == shard_of(line.encode(), shards)
    spread = {shard_of(json.dumps({"trace_id": f"t-{i}"}), 8) for i in range(200)}
    assert spread == set(range(8))


@pytest.mark.parametrize("record", ["{not json", json.dumps([1, 2]), json.dumps({"trace_id": 5}),
                                    {"answer": "no id"}, "\"\\ud800\""])
def test_a_record_without_a_valid_trace_id_still_has_a_shard(record):
    assert trace_key(record) is None
    assert 0 <= shard_of(record, 5) < 5


def test_records_are_counted_in_text_gzip_and_parquet_files(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n{"x": 2}\n{"x": 3}')  # no final newline
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(f'{{"x": {i}}}\n' for i in range(5)))
    pq.write_table(pa.table({"trace_id": [f"p{i}" for i in range(4)]}), tmp_path / "c.parquet")
    truncated = gzip.compress(b'{"x": 1}\n' * 1000)[:200]
    (tmp_path / "d.jsonl.gz").write_bytes(truncated)
    assert count_records((str(tmp_path / "a.jsonl"),)) == 3
    (tmp_path / "m.jsonl").write_bytes(b'{"x": 1}\r{"x": 2}\n{"x": 3}\r\n{"x": 4}\n')  # mixed
    assert count_records((str(tmp_path / "m.jsonl"),)) == 4
    assert count_records((str(tmp_path / "*.jsonl.gz"),)) >= 5  # what the damaged one holds
    assert count_records((str(tmp_path / "b.jsonl.gz"), str(tmp_path / "c.parquet"))) == 9


def test_chunks_only_for_local_runners_and_not_by_default_for_the_batch_api(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(f'{{"trace_id": "t{i}"}}\n' for i in range(10)))
    local = PipelineOptions(["--runner", "FnApiRunner"])
    assert is_local(local) and not is_local(PipelineOptions(["--runner", "DataflowRunner"]))
    assert shard_count(_config([str(path)], chunk_traces=3), local) == 4
    assert shard_count(_config([str(path)], chunk_traces=0), local) == 1
    assert shard_count(_config([str(path)], chunk_traces=3),
                       PipelineOptions(["--runner", "DataflowRunner"])) == 1
    assert chunk_size(_config()) == DEFAULT_CHUNK_TRACES
    assert chunk_size(_config(judge="openai-batch")) == 0
    assert chunk_size(_config(judge="openai-batch", chunk_traces=50)) == 50
    with pytest.raises(ValueError, match="--chunk-traces"):
        _config(chunk_traces=-1)


def test_a_chunk_file_keeps_its_table_and_partition_folders():
    assert chunk_file("answers/part-00000-of-00001.parquet", "c00003") == (
        "answers/part-c00003-00000-of-00001.parquet")
    assert chunk_file("claims/dt=2024-05-01/part-00001-of-00002.parquet", "cagg") == (
        "claims/dt=2024-05-01/part-cagg-00001-of-00002.parquet")


def test_splitting_puts_a_duplicate_id_of_two_files_in_one_shard(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text(json.dumps({"trace_id": "dup", "answer": "first"}) + "\n{broken\n"
                 + "".join(json.dumps({"trace_id": f"a{i}"}) + "\n" for i in range(20)))
    b.write_text(json.dumps({"trace_id": "dup", "answer": "second"}) + "\n"
                 + "".join(json.dumps({"trace_id": f"b{i}"}) + "\n" for i in range(20)))
    work = tmp_path / "work"
    with beam.Pipeline(options=PipelineOptions(["--runner", "FnApiRunner"])) as p:
        write_shards(p | ReadTraces((str(a), str(b))), str(work), 6)
    shards = {}
    for shard in range(6):
        folder = work / shard_folder("", shard)
        items = [x for f in sorted(folder.glob("*.pkl")) for x in read_pickles(str(f))]
        shards[shard] = items
    everything = [x for items in shards.values() for x in items]
    assert len(everything) == 43 and not any(isinstance(x, DeadLetter) for x in everything)
    (holding,) = [s for s, items in shards.items() if any("dup" in str(x) for x in items)]
    assert sum("dup" in str(x) for x in shards[holding]) == 2
    assert sum(len(items) > 0 for items in shards.values()) >= 4
