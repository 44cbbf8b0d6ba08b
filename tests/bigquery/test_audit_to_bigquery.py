"""`rt4chart audit --bigquery` graph: the real audit's rows of every table reach BigQuery
(through Beam's own sink, pointed at bqemulator by its test_client hook) equal to the Parquet
tables the same run writes."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart import prompts
from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.run.jobs import example_traces
from rt4chart.pipeline.storage import bigquery as bq
from rt4chart.schemas.records import RunInfo
from rt4chart.schemas.tables import TABLES
from rt4chart.transforms.judges.contract import JudgeSpec

from bq_emulator import BeamBigQueryClient
from testutil import read_tables

PROJECT = "rt4chart-test"


def test_audit_writes_the_same_rows_to_bigquery_and_parquet(emulator, dataset, tmp_path):
    bq.ensure_tables(emulator.client(), PROJECT, dataset, "US")
    config = AuditConfig(inputs=(example_traces(),), out=str(tmp_path / "out"),
                         stages=StagesConfig(judge=JudgeSpec.of("offline")),
                         bigquery=f"{PROJECT}:{dataset}")
    run = RunInfo("offline-lexical-v2", prompts.prompt_hash())
    client = BeamBigQueryClient(emulator.endpoint, PROJECT)
    with beam.Pipeline(options=PipelineOptions(flags=[], runner="FnApiRunner")) as p:
        graph.build(p, config, run, bigquery_client=client, bigquery_method="STREAMING_INSERTS")
    parquet = read_tables(tmp_path / "out")
    assert parquet["answers"] and parquet["claims"]
    assert not [d for d in parquet["dead_letters"] if d["stage"] == "write_bigquery"]
    for name in ("answers", "claims", "route_rates", "costs", "dead_letters"):
        rows = emulator.query(f"SELECT * FROM `{PROJECT}.{dataset}.{name}`")
        key = TABLES[name].insert_id
        assert sorted(tuple(r[k] for k in key) for r in rows) == sorted(
            tuple(r[k] for k in key) for r in parquet[name]), name
    by_id = {r["trace_id"]: r for r in emulator.query(
        f"SELECT trace_id, label, hallucinated_spans, event_time FROM "
        f"`{PROJECT}.{dataset}.answers`")}
    for row in parquet["answers"]:
        got = by_id[row["trace_id"]]
        assert got["label"] == row["label"] and got["event_time"] == row["event_time"]
        assert [dict(s) for s in got["hallucinated_spans"]] == row["hallucinated_spans"]
    evidence = emulator.query(
        f"SELECT c.trace_id, e.char_start, e.char_end, e.text FROM "
        f"`{PROJECT}.{dataset}.claims` c, UNNEST(c.evidence) e")
    expected = [(c["trace_id"], e["char_start"], e["char_end"], e["text"])
                for c in parquet["claims"] for e in c["evidence"]]
    assert sorted(tuple(e.values()) for e in evidence) == sorted(expected)
