"""`rt4chart report bq:PROJECT:DATASET`: the same report from the tables in BigQuery (bqemulator)
as from the run's Parquet files."""

from __future__ import annotations

import json

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart import prompts
from rt4chart.pipeline.report.packing import unpacked
from rt4chart.pipeline.report.page import render
from rt4chart.pipeline.results.load import load_run, route_totals
from rt4chart.pipeline.run import graph
from rt4chart.pipeline.run.config import AuditConfig, StagesConfig
from rt4chart.pipeline.storage import bigquery as bq
from rt4chart.schemas.records import RunInfo
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.segment import SegmentConfig

import fake_judges as fj
from bq_emulator import BeamBigQueryClient

PROJECT = "rt4chart-test"


def test_report_from_bigquery_tables_matches_the_report_from_parquet(emulator, dataset,
                                                                      tmp_path):
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
    from_files = load_run(config.out, [str(traces)])
    from_bq = load_run(f"bq:{PROJECT}:{dataset}", [str(traces)],
                       bigquery_client=emulator.client())
    assert [a["trace_id"] for a in from_bq.answers] == ["running-example"]
    assert from_bq.answers[0]["label"] == from_files.answers[0]["label"] == "CON"
    key = lambda c: c["claim_index"]  # noqa: E731
    assert [(c["label"], c["evidence"]) for c in sorted(from_bq.claims, key=key)] == [
        (c["label"], c["evidence"]) for c in sorted(from_files.claims, key=key)]
    assert [(r.route, r.traces, r.hallucinated) for r in route_totals(from_bq.route_rates)] == [
        (r.route, r.traces, r.hallucinated) for r in route_totals(from_files.route_rates)] == [
        ("support-bot", 1, 1)]
    html = unpacked(render(from_bq, None, max_traces=10, title="from BigQuery"))
    assert 'id="trace-running-example' in html
    assert "support-bot" in html
