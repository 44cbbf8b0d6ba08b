"""`rt4chart.open_run("bq:PROJECT:DATASET")`: the same typed results from the tables in
BigQuery (bqemulator) as from the run's Parquet files."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

import rt4chart
from rt4chart import prompts
from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.storage import bigquery as bq
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.segment import SegmentConfig

import fake_judges as fj
from bq_emulator import BeamBigQueryClient

PROJECT = "rt4chart-test"


def test_open_run_from_bigquery_gives_the_parquet_runs_results(emulator, dataset, tmp_path):
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(fj.RUNNING_TRACE) + "\n")
    bq.ensure_tables(emulator.client(), PROJECT, dataset, "US")
    config = AuditConfig(inputs=(str(traces),), out=str(tmp_path / "out"),
                         stages=StagesConfig(judge=JudgeSpec.of("fake_judges:running_example"),
                                             segment=SegmentConfig(2, 1)),
                         bigquery=f"{PROJECT}:{dataset}")
    with beam.Pipeline(options=PipelineOptions(flags=[], runner="FnApiRunner")) as p:
        graph.build(p, config, RunInfo("scripted", prompts.prompt_hash()),
                    bigquery_client=BeamBigQueryClient(emulator.endpoint, PROJECT),
                    bigquery_method="STREAMING_INSERTS")
    from_files = rt4chart.open_run(config.out)
    from_bq = rt4chart.open_run(f"bq:{PROJECT}:{dataset}", bigquery_client=emulator.client())
    assert from_bq.answers == from_files.answers
    assert [a.label for a in from_bq.answers] == ["CON"]
    assert [c.label for c in from_bq.answers[0].claims] == ["CON", "CON", "ENT", "ENT", "NIC"]
    assert from_bq.summary.routes == from_files.summary.routes
    assert from_bq.source == f"bq:{PROJECT}:{dataset}"
