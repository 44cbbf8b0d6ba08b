"""The BigQuery sink against bqemulator: tables, Beam's streaming inserts, ids, rejected rows."""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
import urllib.request

import apache_beam as beam
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.util import assert_that

from rt4chart.pipeline.storage import bigquery as bq
from rt4chart.schemas.columns import from_dict, to_dict
from rt4chart.schemas.tables import TABLES, Column, bigquery_schema

import bq_emulator

logger = logging.getLogger(__name__)

PROJECT = "rt4chart-test"  # the emulator's default project (conftest)

BEAM_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+$")


def _options() -> PipelineOptions:
    return PipelineOptions(["--runner=FnApiRunner"])


def _fields(schema_fields) -> list[dict]:
    """google-cloud-bigquery SchemaFields -> our {"name", "type", "mode", ...} dicts."""
    out = []
    for f in schema_fields:
        d = {"name": f.name, "type": f.field_type, "mode": f.mode}
        if f.fields:
            d["fields"] = _fields(f.fields)
        if f.description:
            d["description"] = f.description
        out.append(d)
    return out


def _sql_type(col: Column) -> str:
    return {"INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN"}.get(col.type, col.type)


def _assert_schema(got: list[dict], columns) -> None:
    assert [g["name"] for g in got] == [c.name for c in columns]
    for g, col in zip(got, columns, strict=True):
        assert g["type"] in (col.type, _sql_type(col)), col.name
        assert g["mode"] == col.mode, col.name
        assert g.get("description", "") == col.description, col.name
        if col.fields:
            _assert_schema(g["fields"], col.fields)


def test_ensure_tables_creates_all_six_idempotently(emulator, dataset):
    client = emulator.client()
    first = bq.ensure_tables(client, PROJECT, dataset, location="EU")
    again = bq.ensure_tables(client, PROJECT, dataset)  # exists_ok: no error, same tables

    assert [t.table_id for t in first] == list(TABLES) == [t.table_id for t in again]
    assert sorted(t.table_id for t in client.list_tables(f"{PROJECT}.{dataset}")) == sorted(
        TABLES
    )
    assert client.get_dataset(f"{PROJECT}.{dataset}").location == "EU"
    for name, table in TABLES.items():
        got = client.get_table(f"{PROJECT}.{dataset}.{name}")
        _assert_schema(_fields(got.schema), table.columns)
        assert got.time_partitioning.type_ == "DAY"
        assert got.time_partitioning.field == table.partition_field
        assert got.clustering_fields == list(table.cluster_fields)
        assert got.description == table.description


def _write(emu, dataset: str, rows_by_table: dict, **client_kwargs):
    """Run a batch pipeline writing each table's rows (given as dicts, written as the table's
    row class) with STREAMING_INSERTS through test_client."""
    test_client = emu.beam_client(**client_kwargs)
    failed: dict[str, list] = {}
    pipeline = beam.Pipeline(options=_options())
    for name, rows in rows_by_table.items():
        out = (
            pipeline
            | f"Create_{name}" >> beam.Create([from_dict(TABLES[name].row_type, r) for r in rows])
            | f"Write_{name}" >> bq.WriteBigQueryTable(
                f"{PROJECT}:{dataset}", name, streaming=True, test_client=test_client
            )
        )
        failed[name] = out
    return pipeline, failed, test_client


def _read(emu, dataset: str, name: str) -> list[dict]:
    key = ", ".join(TABLES[name].insert_id)
    return emu.query(f"SELECT * FROM `{PROJECT}.{dataset}.{name}` ORDER BY {key}")


def _no_failures(actual) -> None:
    assert list(actual) == [], f"rows rejected: {actual}"


def test_beam_writes_every_table_and_reads_back_equal(emulator, dataset, sample_rows):
    # Only the dataset exists: Beam creates each table (CREATE_IF_NEEDED) through test_client.
    emulator.client().create_dataset(f"{PROJECT}.{dataset}")
    pipeline, failed, _ = _write(emulator, dataset, sample_rows)
    for name, out in failed.items():
        assert_that(out, _no_failures, label=f"NoFailures_{name}")
    pipeline.run().wait_until_finish()

    for name, rows in sample_rows.items():
        key = TABLES[name].insert_id
        expected = sorted(rows, key=lambda r, key=key: tuple(r[k] for k in key))
        assert _read(emulator, dataset, name) == expected, name
    # The tables Beam created carry the partitioning and clustering of ensure_tables.
    client = emulator.client()
    for name, table in TABLES.items():
        got = client.get_table(f"{PROJECT}.{dataset}.{name}")
        assert got.time_partitioning.field == table.partition_field
        assert got.clustering_fields == list(table.cluster_fields)
        assert got.description == table.description
        assert [f.name for f in got.schema] == [c["name"] for c in bigquery_schema(table)["fields"]]

    # Nested records are queryable as such.
    spans = emulator.query(
        f"SELECT a.trace_id, s.char_start, s.char_end, s.label "
        f"FROM `{PROJECT}.{dataset}.answers` a, UNNEST(a.hallucinated_spans) s "
        f"ORDER BY s.char_start"
    )
    assert spans == [
        {"trace_id": "t-1", "char_start": 0, "char_end": 29, "label": "CON"},
        {"trace_id": "t-1", "char_start": 30, "char_end": 61, "label": "NIC"},
    ]
    day = emulator.query(
        f"SELECT COUNT(*) AS n FROM `{PROJECT}.{dataset}.answers` "
        f"WHERE TIMESTAMP_TRUNC(event_time, DAY) = TIMESTAMP '2024-05-01'"
    )
    assert day == [{"n": 2}]  # 23:59:59.999999+02:00 is still May 1st in UTC


def test_insert_ids_come_with_every_row_and_survive_a_retry(emulator, dataset, sample_rows):
    bq.ensure_tables(emulator.client(), PROJECT, dataset, "US")
    rows = {"answers": sample_rows["answers"]}
    # The first insertAll reaches the emulator but answers "backendError" (a lost response):
    # Beam must send the same rows again, with the same insert ids.
    pipeline, _, client = _write(emulator, dataset, rows, lost_responses=1)
    pipeline.run().wait_until_finish()

    calls = client.calls()
    assert len(calls) == 2
    first, retry = calls
    assert len(first["row_ids"]) == 3 and all(BEAM_ID.match(i) for i in first["row_ids"])
    assert len(set(first["row_ids"])) == 3
    by_id = {i: r["trace_id"] for i, r in zip(first["row_ids"], first["rows"], strict=True)}
    assert {i: r["trace_id"] for i, r in zip(retry["row_ids"], retry["rows"], strict=True)} == (
        by_id
    )
    # bqemulator ignores insert ids, so here the retry duplicates (BigQuery would drop it);
    # reading through the natural key gives each answer once either way.
    assert len(_read(emulator, dataset, "answers")) == 6
    dedup = emulator.query(bq.dedup_query(PROJECT, dataset, "answers"))
    assert sorted(r["trace_id"] for r in dedup) == ["t-1", "t-2", "t-3"]


def test_rejected_row_comes_back_as_a_dead_letter(emulator, dataset, sample_rows):
    bq.ensure_tables(emulator.client(), PROJECT, dataset, "US")
    good = sample_rows["answers"][0]
    bad = {**sample_rows["answers"][1], "trace_id": "t-bad", "cost_usd": "n/a"}
    pipeline, failed, _ = _write(emulator, dataset, {"answers": [good, bad]})

    def check(letters):
        (letter,) = [to_dict(d) for d in letters]
        assert letter["stage"] == "write_bigquery" and letter["trace_id"] == "t-bad"
        assert f"{PROJECT}:{dataset}.answers" in letter["reason"] and "invalid" in letter["reason"]
        assert '"cost_usd": "n/a"' in letter["raw"]
        assert set(letter) == set(TABLES["dead_letters"].column_names)

    assert_that(failed["answers"], check)
    result = pipeline.run()
    result.wait_until_finish()

    counters = result.metrics().query(MetricsFilter().with_name("bigquery_failed_rows"))
    assert sum(c.committed for c in counters["counters"]) == 1
    assert [r["trace_id"] for r in _read(emulator, dataset, "answers")] == ["t-1"]


def test_throughput_through_beam(emulator, dataset, sample_rows):
    n = 5000
    template = sample_rows["answers"][0]
    start = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    rows = [
        {**template, "trace_id": f"t-{i:05d}", "event_time": start + dt.timedelta(seconds=i)}
        for i in range(n)
    ]
    bq.ensure_tables(emulator.client(), PROJECT, dataset, "US")
    pipeline, _, _ = _write(emulator, dataset, {"answers": rows})
    t0 = time.perf_counter()
    pipeline.run().wait_until_finish()
    elapsed = time.perf_counter() - t0
    got = emulator.query(
        f"SELECT COUNT(DISTINCT trace_id) AS n, SUM(ARRAY_LENGTH(hallucinated_spans)) AS spans "
        f"FROM `{PROJECT}.{dataset}.answers`"
    )
    assert got == [{"n": n, "spans": 2 * n}]
    logger.warning("BigQuery sink: %d rows in %.2f s (%.0f rows/s)", n, elapsed, n / elapsed)


def test_start_failure_reports_the_log_tail(tmp_path, monkeypatch):
    script = tmp_path / "broken_emulator.py"
    script.write_text("import sys\nprint('no such engine: boom', flush=True)\nsys.exit(3)\n")
    monkeypatch.setattr(bq_emulator, "WRAPPER", script)
    with pytest.raises(RuntimeError, match=r"(?s)exited with code 3.*no such engine: boom"):
        bq_emulator.start_bqemulator(PROJECT, ready_timeout_s=10, log_dir=str(tmp_path))


def test_stop_ends_the_emulator(tmp_path):
    emu = bq_emulator.start_bqemulator("other-project", log_dir=str(tmp_path))
    try:
        assert list(emu.client().list_datasets(timeout=5)) == []
    finally:
        emu.stop()
    assert emu.process.returncode is not None
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{emu.endpoint}/healthz", timeout=1)
