"""The BigQuery sink's pure parts: dataset specs, row conversion, table resources."""

from __future__ import annotations

import datetime as dt
import json
import re

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from rt4chart.pipeline.sources.traces import dead_letter_message
from rt4chart.pipeline.storage import bigquery as bq
from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.records import DeadLetter
from rt4chart.schemas.rows import DeadLetterRow, dead_letter_id
from rt4chart.schemas.tables import TABLES, bigquery_schema, row_insert_id


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("my-project:rt4chart", ("my-project", "rt4chart")),
        ("my-project.rt4chart_out", ("my-project", "rt4chart_out")),
        ("example.com:my-project:audits", ("example.com:my-project", "audits")),
        ("example.com:my-project.audits", ("example.com:my-project", "audits")),
        ("  p1-x:d  ", ("p1-x", "d")),
    ],
)
def test_parse_dataset_accepts_colon_and_dot(spec, expected):
    assert bq.parse_dataset(spec) == expected


@pytest.mark.parametrize(
    "spec", ["rt4chart", "", "my-project:", ":ds", "proj:ds.table", "Proj:ds", "p:d-x", None]
)
def test_parse_dataset_rejects_other_forms(spec):
    with pytest.raises(ValueError, match="PROJECT:DATASET or PROJECT.DATASET"):
        bq.parse_dataset(spec)


def test_to_bq_row_converts_timestamps_nested_and_keeps_every_field(sample_rows):
    for name, rows in sample_rows.items():
        for row in rows:
            out = bq.to_bq_row(name, row)
            assert set(out) == set(row), name
            json.dumps(out, allow_nan=False)  # plain JSON, nothing left to a default encoder

    answer = bq.to_bq_row("answers", sample_rows["answers"][1])
    # 23:59:59.999999 at UTC+2 is 21:59:59.999999 UTC, written with microseconds and "Z".
    assert answer["event_time"] == "2024-05-01T21:59:59.999999Z"
    claim = bq.to_bq_row("claims", sample_rows["claims"][0])
    assert claim["evidence"][1] == {
        "doc_id": "faq", "sentence_index": 0, "char_start": 0, "char_end": 19,
        "text": "Trials: two weeks.",
    }
    assert claim["window_labels"] == ["NIC", "CON"]


def test_to_bq_row_edge_values():
    naive = dt.datetime(2024, 5, 1, 9, 30)
    row = {"route": "r", "window_start": naive, "rate": float("nan"), "rate_low": float("inf"),
           "extra": {"kept": True}}
    out = bq.to_bq_row(TABLES["route_rates"], row)
    assert out["window_start"] == "2024-05-01T09:30:00.000000Z"  # naive is UTC
    assert out["rate"] == "NaN" and out["rate_low"] == "Infinity"
    assert out["sample_trace_ids"] == []  # missing REPEATED -> empty list
    assert out["extra"] == {"kept": True}  # unknown keys go to BigQuery, which rejects them
    assert "rate_high" in out and out["rate_high"] is None


def test_to_bq_row_rejects_unknown_table():
    with pytest.raises(ValueError, match="unknown table 'answer'"):
        bq.to_bq_row("answer", {})


@pytest.mark.parametrize("name", list(TABLES))
def test_table_resource_partitions_clusters_and_describes(name):
    table = TABLES[name]
    res = bq.table_resource("p", "d", name)
    assert res["tableReference"] == {"projectId": "p", "datasetId": "d", "tableId": name}
    assert res["schema"] == bigquery_schema(table)
    assert res["timePartitioning"] == {"type": "DAY", "field": table.partition_field}
    assert res["clustering"] == {"fields": list(table.cluster_fields)}
    assert res["description"] == table.description


def test_write_method_follows_streaming_unless_overridden():
    assert bq.WriteBigQueryTable("p:d", "answers", streaming=True).method == "STREAMING_INSERTS"
    assert bq.WriteBigQueryTable("p:d", "answers", streaming=False).method == "FILE_LOADS"
    forced = bq.WriteBigQueryTable("p:d", "answers", streaming=False, method="streaming_inserts")
    assert forced.method == "STREAMING_INSERTS"
    with pytest.raises(ValueError, match="write method"):
        bq.WriteBigQueryTable("p:d", "answers", streaming=True, method="DML")
    with pytest.raises(ValueError, match="unknown table"):
        bq.WriteBigQueryTable("p:d", "nope", streaming=True)
    with pytest.raises(ValueError, match="PROJECT:DATASET"):
        bq.WriteBigQueryTable("d", "answers", streaming=True)


def test_natural_keys_are_deterministic_and_unique(sample_rows):
    for name, rows in sample_rows.items():
        table = TABLES[name]
        ids = [row_insert_id(table, row) for row in rows]
        assert ids == [row_insert_id(table, dict(row)) for row in rows]
        assert len(set(ids)) == len(ids), name
        assert f"PARTITION BY {', '.join(f'`{c}`' for c in table.insert_id)}" in bq.dedup_query(
            "p", "d", name
        )


def test_failed_insert_becomes_a_dead_letter_row():
    row = {"trace_id": "t-9", "route": "r", "cost_usd": "n/a"}
    errors = [{"reason": "invalid", "location": "cost_usd", "message": "Cannot convert"}]
    (dead,) = bq.FailedInsertToDeadLetter().process(("p:d.answers", row, errors))
    letter = to_dict(dead)
    assert set(letter) == set(TABLES["dead_letters"].column_names)
    assert letter["stage"] == "write_bigquery"
    assert letter["trace_id"] == "t-9" and letter["route"] == "r"
    assert "invalid at cost_usd: Cannot convert" in letter["reason"]
    assert "p:d.answers" in letter["reason"]
    assert json.loads(letter["raw"]) == row
    assert letter["dead_letter_id"] == dead_letter_id(
        "write_bigquery", letter["reason"], letter["raw"]
    )
    assert letter["received_at"].tzinfo is not None


def test_dead_letters_of_every_stage_and_sink_have_one_id_format():
    letter = DeadLetter("validate", "not valid JSON", "{x", "t-1", "r")
    row = DeadLetterRow.of(letter)
    assert re.fullmatch("[0-9a-f]{64}", row.dead_letter_id)  # the whole sha256
    assert row.dead_letter_id == dead_letter_id("validate", "not valid JSON", "{x")
    assert DeadLetterRow.of(letter).dead_letter_id == row.dead_letter_id  # a retry: same id
    assert dead_letter_id("validate", "not valid JSON", "{y") != row.dead_letter_id
    message = dead_letter_message(row)
    assert message.data == b"{x"
    assert message.attributes == {"stage": "validate", "reason": "not valid JSON",
                                  "dead_letter_id": row.dead_letter_id, "trace_id": "t-1",
                                  "route": "r"}
    (rejected,) = bq.FailedInsertToDeadLetter().process(("p:d.answers", {"x": 1}, "bad"))
    assert re.fullmatch("[0-9a-f]{64}", rejected.dead_letter_id)
    assert (rejected.trace_id, rejected.route) == (None, None)


def test_batch_graph_uses_file_loads_and_reports_no_row_failures():
    options = PipelineOptions(["--temp_location=gs://bucket/tmp", "--project=p"])
    pipeline = beam.Pipeline(options=options)  # built, not run: load jobs need GCS
    out = (
        pipeline
        | beam.Create([{"trace_id": "t"}])
        | bq.WriteBigQueryTable("p:d", "answers", streaming=False)
    )
    labels = [t.unique_name for t in pipeline.to_runner_api().components.transforms.values()]
    assert any("BigQueryBatchFileLoads" in label for label in labels)
    assert not any("StreamInsertRows" in label for label in labels)
    assert out.producer.full_label.startswith("WriteBigQueryTable/NoFailedRows")
