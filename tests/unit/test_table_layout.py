"""Parquet laid out for engines: tables under OUT/<table>/dt=YYYY-MM-DD/, read by pyarrow
(hive partitioning) and DuckDB; the summary, `report`, `--redo` and `--reuse` read this layout
and the flat one of earlier runs alike; the run folder handles day folders. Also the options'
checks and the BigQuery schema merge, which need no emulator."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import apache_beam as beam
import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that, equal_to

from rt4chart.pipeline.cli import main as cli
from rt4chart.pipeline.results.earlier import read_cache, redo_traces
from rt4chart.pipeline.results.load import load_run
from rt4chart.pipeline.results.summary import read_table, summarise
from rt4chart.pipeline.sinks.options import TablesConfig, tables_config
from rt4chart.pipeline.storage.bigquery import added_fields
from rt4chart.pipeline.storage.folder_scan import MANIFEST, scan
from rt4chart.pipeline.storage.run_folder import RunFolder
from rt4chart.pipeline.storage.table_files import NULL_PARTITION, WriteTable, table_files
from rt4chart.schemas.records import RunInfo

from testutil import write_jsonl

CTX = "Tokyo is the capital of Japan. Kyoto was the capital until 1868."
RECORDS = [
    {"trace_id": "hit", "timestamp": "2024-05-01T23:30:00-02:00", "question": "Capital?",
     "contexts": [CTX], "answer": "Tokyo is the capital of Japan. Kyoto was the capital until "
                                 "1868."},
    {"trace_id": "clean", "timestamp": "2024-05-01T09:00:00Z", "question": "Capital now?",
     "contexts": [CTX], "answer": "Tokyo is the capital of Japan."},
    {"trace_id": "bad", "contexts": []},  # a dead letter
]


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """One audit (an incomplete answer, a dead letter, the traces table), and the same run
    moved into the flat layout of runs before day folders."""
    base = tmp_path_factory.mktemp("layout")
    traces = write_jsonl(base / "t.jsonl", RECORDS)
    out = base / "hive"
    code = cli.main(["audit", str(traces), "--out", str(out), "--judge", "fake_judges:flaky",
                     "--judge-option", "fail_on=Kyoto", "--write-traces"])
    assert code == 3  # succeeded with an incomplete answer (the flaky judge's, on purpose)
    flat = base / "flat"
    shutil.copytree(out, flat)
    for table in [p for p in flat.iterdir() if p.is_dir()]:
        parts = sorted(table.glob("dt=*/*.parquet"))
        for i, part in enumerate(parts):
            part.rename(table / f"part-{i:05d}-of-{len(parts):05d}.parquet")
        for folder in table.glob("dt=*"):
            folder.rmdir()
    return out, flat


def test_tables_are_in_day_folders_that_pyarrow_and_duckdb_read(run_dirs):
    out, _ = run_dirs
    answers = read_table(str(out), "answers").to_pylist()
    # 23:30 at -02:00 is May 2nd in UTC: the folder is the UTC day of the partition column.
    days = {a["trace_id"]: a["event_time"].date().isoformat() for a in answers}
    assert days == {"hit": "2024-05-02", "clean": "2024-05-01"}
    assert sorted(p.name for p in (out / "answers").iterdir()) == [
        "dt=2024-05-01", "dt=2024-05-02"]
    assert all(p.parent.name.startswith("dt=") for p in out.rglob("*.parquet"))

    table = ds.dataset(str(out / "answers"), partitioning="hive").to_table().to_pylist()
    assert {r["trace_id"]: r["dt"] for r in table} == days
    con = duckdb.connect()
    rows = con.execute(
        "SELECT trace_id, CAST(dt AS VARCHAR) FROM read_parquet(?, hive_partitioning = true)",
        [str(out / "claims" / "*" / "*.parquet")]).fetchall()
    claims = read_table(str(out), "claims").to_pylist()
    assert sorted(rows) == sorted((c["trace_id"], days[c["trace_id"]]) for c in claims)
    # The opt-in traces table holds the question and context.
    traces = {t["trace_id"]: t for t in read_table(str(out), "traces").to_pylist()}
    assert traces["hit"]["question"] == "Capital?"
    assert [d["text"] for d in traces["hit"]["contexts"]] == [CTX]
    assert not (out / "alerts").exists()  # batch writes no alerts table at all
    dead = [Path(p) for p in table_files(str(out), "dead_letters")]
    assert len(dead) == 1 and dead[0].parent.name.startswith("dt=")


def test_an_empty_table_is_one_empty_file_in_the_null_partition(tmp_path):
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        _ = p | beam.Create([]) | WriteTable(str(tmp_path), "alerts")
    files = [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()]
    assert [str(f) for f in files] == [
        f"alerts/dt={NULL_PARTITION}/part-00000-of-00001.parquet"]
    # "hive" cannot infer dt's type from a null partition alone: name it.
    hive = ds.partitioning(pa.schema([("dt", pa.string())]), flavor="hive")
    assert ds.dataset(str(tmp_path / "alerts"), partitioning=hive).count_rows() == 0
    assert read_table(str(tmp_path), "alerts").num_rows == 0


def _same(rows_a: list[dict], rows_b: list[dict]) -> bool:
    def key(r):
        return json.dumps(r, sort_keys=True, default=str)
    return sorted(map(key, rows_a)) == sorted(map(key, rows_b)) and bool(rows_a)


def test_summary_report_redo_and_reuse_read_both_layouts(run_dirs):
    out, flat = run_dirs
    assert not list(flat.rglob("dt=*"))
    for name in ("answers", "claims", "dead_letters", "judge_cache", "traces"):
        assert _same(read_table(str(out), name).to_pylist(),
                     read_table(str(flat), name).to_pylist()), name
    new, old = summarise(str(out), 1.0), summarise(str(flat), 1.0)
    assert dataclasses.asdict(new) == dataclasses.asdict(old)
    assert (new.traces, new.incomplete, new.dead_letters) == (2, 1, 1)
    assert [json.loads(r)["trace_id"] for r in redo_traces(str(out))] == ["hit"]
    assert redo_traces(str(flat)) == redo_traces(str(out))
    for folder in (out, flat):
        run = load_run(str(folder))
        assert {a["trace_id"] for a in run.answers} == {"hit", "clean"}
        assert run.traces["clean"].trace.question == "Capital now?"
    keys = sorted(r["key"] for r in read_table(str(out), "judge_cache").to_pylist())
    assert keys
    run = RunInfo("flaky", "unused")
    with beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        for label, folder in (("Hive", out), ("Flat", flat)):
            got = (p | f"Read{label}" >> read_cache(str(folder), run)
                   | f"Keys{label}" >> beam.Map(lambda row: row.key))
            assert_that(got, equal_to(keys), label=f"Check{label}")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_run_folder_takes_day_folders_and_removes_those_it_empties(tmp_path):
    out = tmp_path / "R"
    first = RunFolder(str(out))
    first.check()
    _write(Path(first.staging) / "answers" / "dt=2024-05-01" / "part-00000-of-00001.parquet", "a")
    _write(Path(first.staging) / "answers" / "beam-temp-1" / "x.parquet", "cut short")
    first.commit()
    assert json.loads((out / MANIFEST).read_text())["files"] == [
        "answers/dt=2024-05-01/part-00000-of-00001.parquet"]
    # A stream's day files, which no manifest lists, are the run's too.
    _write(out / "claims" / "dt=2024-05-03" / "part-1733000000-abcdef012345.parquet", "s")
    _write(out / "claims" / f"dt={NULL_PARTITION}" / "part-00000-of-00001.parquet", "e")
    _write(out / "claims" / "dt=2024-05-03" / "notes.txt", "mine")
    state = scan(str(out))
    assert "claims/dt=2024-05-03/part-1733000000-abcdef012345.parquet" in state.run_files
    assert state.foreign == ("claims/dt=2024-05-03/notes.txt",)
    (out / "claims" / "dt=2024-05-03" / "notes.txt").unlink()

    second = RunFolder(str(out), overwrite=True)
    second.check()
    _write(Path(second.staging) / "answers" / "dt=2024-06-01" / "part-00000-of-00001.parquet",
           "b")
    second.commit()
    remaining = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert remaining == [MANIFEST, "answers", "answers/dt=2024-06-01",
                         "answers/dt=2024-06-01/part-00000-of-00001.parquet"]


def test_added_fields_appends_missing_columns_never_drops_or_changes():
    existing = [{"name": "Trace_ID", "type": "STRING", "mode": "REQUIRED"},
                {"name": "legacy", "type": "INTEGER", "mode": "NULLABLE"},
                {"name": "spans", "type": "RECORD", "mode": "REPEATED",
                 "fields": [{"name": "char_start", "type": "INTEGER", "mode": "REQUIRED"}]}]
    wanted = [{"name": "trace_id", "type": "STRING", "mode": "REQUIRED"},
              {"name": "spans", "type": "RECORD", "mode": "REPEATED",
               "fields": [{"name": "char_start", "type": "INT64", "mode": "REQUIRED"},
                          {"name": "label", "type": "STRING", "mode": "NULLABLE"}]},
              {"name": "notes", "type": "STRING", "mode": "REPEATED"}]
    merged, added = added_fields(existing, wanted)
    assert added == ["spans.label", "notes"]
    assert [f["name"] for f in merged] == ["Trace_ID", "legacy", "spans", "notes"]
    assert merged[2]["fields"][0]["type"] == "INTEGER"  # an existing column keeps its type
    assert [f["name"] for f in merged[2]["fields"]] == ["char_start", "label"]
    assert added_fields(merged, wanted) == (merged, [])
    with pytest.raises(ValueError, match="REQUIRED column cost"):
        added_fields(existing, [{"name": "cost", "type": "FLOAT64", "mode": "REQUIRED"}])


def test_a_required_column_now_nullable_is_relaxed_and_nothing_else_changes():
    # Tables made before unpriced models had NULL costs: cost_usd was REQUIRED.
    existing = [{"name": "trace_id", "type": "STRING", "mode": "REQUIRED"},
                {"name": "cost_usd", "type": "FLOAT", "mode": "REQUIRED"}]
    wanted = [{"name": "trace_id", "type": "STRING", "mode": "REQUIRED"},
              {"name": "cost_usd", "type": "FLOAT64", "mode": "NULLABLE"}]
    merged, changed = added_fields(existing, wanted)
    assert changed == ["cost_usd (now NULLABLE)"]
    assert merged == [existing[0], {"name": "cost_usd", "type": "FLOAT", "mode": "NULLABLE"}]
    assert added_fields(merged, wanted) == (merged, [])


def test_table_options_are_checked():
    parser = cli.parser()
    args = parser.parse_args(["audit", "x.jsonl", "--write-traces", "--bigquery", "p:d",
                              "--bigquery-location", "EU", "--partition-expiration-days", "30"])
    assert tables_config(args) == TablesConfig(True, "EU", 30)
    assert TablesConfig(partition_expiration_days=2).partition_expiration_ms == 172_800_000
    assert tables_config(parser.parse_args(["audit", "x.jsonl"])) == TablesConfig()
    with pytest.raises(ValueError, match="apply to --bigquery"):
        tables_config(parser.parse_args(["audit", "x.jsonl", "--bigquery-location", "EU"]))
    with pytest.raises(ValueError, match=">= 1"):
        TablesConfig(partition_expiration_days=0)


def test_a_streaming_write_still_open_is_not_part_of_the_table(tmp_path):
    # A stream writes .tmp-part-… (0 bytes until its first row group) and renames it when done;
    # a reader in between (summary, report, a test polling the tables) must not open it.
    day = tmp_path / "answers" / "dt=2024-05-02"
    day.mkdir(parents=True)
    done = day / "part-00000-of-00001.parquet"
    pq.write_table(pa.table({"trace_id": ["t1"]}), done)
    (day / ".tmp-part-123-abc.parquet").write_bytes(b"")
    (tmp_path / "answers" / "_SUCCESS.parquet").write_bytes(b"")
    assert table_files(str(tmp_path), "answers") == [str(done)]
