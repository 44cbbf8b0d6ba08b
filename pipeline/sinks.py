"""The sink fan-out of the audit's tables: Parquet files, BigQuery tables, Pub/Sub topics.

Rows stay rows (`rt4chart.schemas.rows`) up to here; each sink turns them into what it writes.
"""

from __future__ import annotations

from dataclasses import dataclass

import apache_beam as beam

from rt4chart.pipeline.io import WriteTable, WriteTableStreaming, dead_letter_message
from rt4chart.transforms.alerts import alert_message


@dataclass(frozen=True)
class Sinks:
    """Where the tables go; a sink left None is not written.

    `bigquery_method` overrides the BigQuery write method (a test hook, as is the client
    `WriteTables` takes).
    """

    out: str | None = None
    streaming: bool = False
    bigquery: str | None = None
    bigquery_method: str | None = None
    dead_letter_topic: str | None = None
    alerts_topic: str | None = None


def _bigquery_sink(sinks: Sinks, table: str, test_client=None) -> beam.PTransform:
    from rt4chart.pipeline.bigquery import WriteBigQueryTable  # the GCP client libraries

    return WriteBigQueryTable(sinks.bigquery, table, streaming=sinks.streaming,
                              method=sinks.bigquery_method, test_client=test_client)


def _publish(rows: beam.PCollection, topic: str, to_message, what: str) -> None:
    (rows
     | f"{what}Messages" >> beam.Map(to_message)
     | f"Publish{what}s" >> beam.io.WriteToPubSub(topic, with_attributes=True))


class WriteTables(beam.PTransform):
    """{table name: rows} -> Parquet files under `out`, BigQuery tables and Pub/Sub topics.

    Rows BigQuery rejects join the dead letters, which are then written (and published to the
    dead-letter topic) with the others; alerts, if given, go to the alerts topic. Labels are
    per table: `BigQuery_<table>`, `Write_<table>`.
    """

    def __init__(self, sinks: Sinks, bigquery_client=None):
        super().__init__()
        self._sinks = sinks
        self._client = bigquery_client

    def expand(self, tables: dict[str, beam.PCollection]) -> beam.pvalue.PDone:
        sinks = self._sinks
        if sinks.bigquery:
            rejected = [rows | f"BigQuery_{name}" >> _bigquery_sink(sinks, name, self._client)
                        for name, rows in tables.items()]
            tables = {**tables, "dead_letters": (tables["dead_letters"], *rejected)
                      | "AllDeadLetters" >> beam.Flatten()}
        write = WriteTableStreaming if sinks.streaming else WriteTable
        for name, rows in tables.items():
            if sinks.out:
                rows | f"Write_{name}" >> write(sinks.out, name)
        if sinks.dead_letter_topic:
            _publish(tables["dead_letters"], sinks.dead_letter_topic, dead_letter_message,
                     "DeadLetter")
        if sinks.alerts_topic and "alerts" in tables:
            _publish(tables["alerts"], sinks.alerts_topic, alert_message, "Alert")
        return beam.pvalue.PDone(tables["dead_letters"].pipeline)
