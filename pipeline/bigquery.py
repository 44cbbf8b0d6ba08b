"""BigQuery sink: rt4chart's output tables, created and written with partitioning and clustering.

Tables come from `rt4chart.schemas.tables`: partitioned by the UTC day of `partition_field`,
clustered on `cluster_fields`, with the table and column descriptions. `ensure_tables` creates
them up front (google-cloud-bigquery, idempotent); `WriteBigQueryTable` also creates a missing
table (CREATE_IF_NEEDED) with the same definition, and appends. Beam never creates the dataset:
call `ensure_tables` before the pipeline starts.

Write methods. Streaming pipelines use STREAMING_INSERTS (tabledata.insertAll); batch pipelines
use FILE_LOADS (load jobs from files under the pipeline's GCS ``temp_location``). The Storage
Write API is not used: Beam's Python SDK runs it through a Java expansion service.

Insert ids (STREAMING_INSERTS). Beam (2.77, ``apache_beam/io/gcp/bigquery.py``) assigns them
itself and offers no way to supply ours: `WriteToBigQuery` expands to ``AppendDestination`` ->
``AddInsertIds`` -> ``WithFixedSharding`` -> ``CommitInsertIds`` (a `ReshufflePerKey`) ->
`BigQueryWriteFn`. ``AddInsertIds`` (`_StreamToBigQuery.InsertIdPrefixFn`) draws a uuid4 per
bundle and gives each row ``"<uuid>-<n>"``, n counting rows in the bundle. Because this happens
before the reshuffle, which runners such as Dataflow checkpoint, a retried write bundle resends
each row with the id it had, and `BigQueryWriteFn` resends the rows an insertAll rejected with a
transient error with their original ids too; BigQuery drops a repeated id, best effort, within
about a minute. Ids are not stable across a rerun of the upstream steps before the reshuffle
has committed (harmless: that attempt wrote nothing) nor across runs of the pipeline (a backfill
run twice writes rows twice). The only knob is ``ignore_insert_ids=True``, which sends none;
`BigQueryWriteFn` would take (destination, (row, id)) pairs, but it is not public API
(not in ``apache_beam.io.gcp.bigquery.__all__``) and bypasses the commit step. So every row
carries its natural key instead (`Table.insert_id`, `rt4chart.schemas.tables.row_insert_id`),
and `dedup_query` reads a table with one row per key, whatever was written twice.

Failed inserts. Rows that BigQuery rejects for good (reason ``invalid`` and other
non-transient reasons) come out of `WriteBigQueryTable` as a PCollection of `DeadLetterRow`s
(stage ``write_bigquery``, built like every other dead letter) and are counted in
``rt4chart/bigquery_failed_rows``. Transient errors are retried with backoff, up to Beam's
10,000 times. (Beam's default strategy, RETRY_ALWAYS, would retry invalid rows as well and
never return them.)
FILE_LOADS has no per-row failures: a load job that fails fails the pipeline, and the returned
PCollection is empty.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
from collections.abc import Iterable
from typing import Any

import apache_beam as beam
from apache_beam.io.gcp.bigquery import BigQueryDisposition, WriteToBigQuery
from apache_beam.io.gcp.bigquery_tools import RetryStrategy

from rt4chart.schemas.records import DeadLetter
from rt4chart.schemas.rows import DeadLetterRow, to_dict
from rt4chart.schemas.tables import TABLES, Column, Table, bigquery_schema

logger = logging.getLogger(__name__)

STAGE = "write_bigquery"
METHODS = (
    WriteToBigQuery.Method.STREAMING_INSERTS,
    WriteToBigQuery.Method.FILE_LOADS,
    WriteToBigQuery.Method.STORAGE_WRITE_API,
)

# Optional "domain.com:" prefix, then a project id; the dataset id after the last ":" or ".".
_DATASET_SPEC = re.compile(
    r"^(?P<project>(?:[a-z0-9-]+(?:\.[a-z0-9-]+)+:)?[a-z](?:[a-z0-9-]*[a-z0-9])?)"
    r"[:.](?P<dataset>[A-Za-z0-9_]+)$"
)


def parse_dataset(spec: str) -> tuple[str, str]:
    """Split "PROJECT:DATASET" or "PROJECT.DATASET" into (project, dataset).

    Raises:
        ValueError: `spec` is not of that form.
    """
    match = _DATASET_SPEC.match(spec.strip()) if isinstance(spec, str) else None
    if not match:
        raise ValueError(
            f"BigQuery dataset must be PROJECT:DATASET or PROJECT.DATASET "
            f"(project id in lower case, dataset id of letters, digits and _), got {spec!r}"
        )
    return match["project"], match["dataset"]


def _table(table: Table | str) -> Table:
    if isinstance(table, Table):
        return table
    try:
        return TABLES[table]
    except KeyError:
        raise ValueError(f"unknown table {table!r}; tables: {', '.join(TABLES)}") from None


def rfc3339(value: dt.datetime) -> str:
    """A timestamp as BigQuery reads it: UTC, microseconds, "Z" (a naive one is taken as UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _scalar(col: Column, value: Any) -> Any:
    if value is None:
        return None
    if col.type == "RECORD":
        return _record(col.fields, value)
    if isinstance(value, dt.datetime):
        return rfc3339(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _record(columns: tuple[Column, ...], row: dict) -> dict:
    out = dict(row)  # keys outside the schema stay: BigQuery rejects them, nothing is hidden
    for col in columns:
        value = row.get(col.name)
        if col.mode == "REPEATED":
            out[col.name] = [_scalar(col, v) for v in value or ()]
        else:
            out[col.name] = _scalar(col, value)
    return out


def to_bq_row(table: Table | str, row: dict) -> dict:
    """A pipeline row as BigQuery's JSON row: TIMESTAMPs as RFC 3339 UTC strings, records as
    dicts, a missing REPEATED column as [], non-finite floats as "NaN"/"Infinity"; every key is
    kept, also keys the schema does not know."""
    return _record(_table(table).columns, row)


def additional_bq_parameters(table: Table | str) -> dict:
    """tables.insert fields beyond the schema: description, DAY partitioning, clustering."""
    t = _table(table)
    params: dict = {"description": t.description}
    if t.partition_field:
        params["timePartitioning"] = {"type": "DAY", "field": t.partition_field}
    if t.cluster_fields:
        params["clustering"] = {"fields": list(t.cluster_fields)}
    return params


def table_resource(project: str, dataset: str, table: Table | str) -> dict:
    """The tables.insert body (REST JSON) of an rt4chart table."""
    t = _table(table)
    return {
        "tableReference": {"projectId": project, "datasetId": dataset, "tableId": t.name},
        "schema": bigquery_schema(t),
        **additional_bq_parameters(t),
    }


def ensure_tables(client, project: str, dataset: str, location: str | None = None) -> list:
    """Create the dataset if missing and every rt4chart table in it that is missing.

    Idempotent: existing datasets and tables are left as they are (an existing table's schema
    is not updated). `client` is a `google.cloud.bigquery.Client`.

    Returns:
        The `google.cloud.bigquery.Table` of every table, in `TABLES` order.
    """
    from google.cloud import bigquery

    ds = bigquery.Dataset(bigquery.DatasetReference(project, dataset))
    if location:
        ds.location = location
    client.create_dataset(ds, exists_ok=True)
    created = []
    for table in TABLES.values():
        resource = bigquery.Table.from_api_repr(table_resource(project, dataset, table))
        created.append(client.create_table(resource, exists_ok=True))
    logger.info("BigQuery tables ready in %s:%s: %s", project, dataset, ", ".join(TABLES))
    return created


def dedup_query(project: str, dataset: str, table: Table | str) -> str:
    """Standard SQL reading a table with one row per natural key (`Table.insert_id`).

    Streaming-insert ids only deduplicate retries within a run; this also covers rows written
    twice by two runs.
    """
    t = _table(table)
    key = ", ".join(f"`{c}`" for c in t.insert_id)
    return (
        f"SELECT * FROM `{project}.{dataset}.{t.name}` WHERE TRUE "
        f"QUALIFY ROW_NUMBER() OVER (PARTITION BY {key}) = 1"
    )


def _error_text(errors: list | str) -> str:
    if isinstance(errors, str):
        return errors
    parts = []
    for err in errors or ():
        if isinstance(err, dict):
            where = f" at {err['location']}" if err.get("location") else ""
            parts.append(f"{err.get('reason', '?')}{where}: {err.get('message', '')}".strip())
        else:
            parts.append(str(err))
    return "; ".join(parts) or "rejected without a reason"


class FailedInsertToDeadLetter(beam.DoFn):
    """(destination, row, errors) from WriteToBigQuery -> a dead_letters row, counted."""

    def __init__(self):
        self._failed = beam.metrics.Metrics.counter("rt4chart", "bigquery_failed_rows")

    def process(self, element) -> Iterable[DeadLetterRow]:
        destination, row, errors = element
        reason = f"BigQuery rejected the row for {destination}: {_error_text(errors)}"
        raw = json.dumps(row, sort_keys=True, default=str)
        named = row if isinstance(row, dict) else {}
        self._failed.inc()
        yield DeadLetterRow.of(
            DeadLetter(STAGE, reason, raw, named.get("trace_id"), named.get("route")))


def _method(streaming: bool, method: str | None) -> str:
    if method is None:
        return METHODS[0] if streaming else METHODS[1]
    chosen = method.upper()
    if chosen not in METHODS:
        raise ValueError(f"BigQuery write method must be one of {METHODS}, got {method!r}")
    return chosen


class WriteBigQueryTable(beam.PTransform):
    """Rows of one rt4chart table (its row class) -> appended to PROJECT:DATASET.<table>.

    The table is created if needed with its schema, DAY partitioning and clustering. Returns
    the rows BigQuery rejected, as ``dead_letters`` rows (empty with FILE_LOADS).

    Args:
        dataset_spec: "PROJECT:DATASET" or "PROJECT.DATASET".
        table: a name in `TABLES`.
        streaming: STREAMING_INSERTS when true, FILE_LOADS otherwise.
        method: overrides the method ("STREAMING_INSERTS", "FILE_LOADS",
            "STORAGE_WRITE_API").
        test_client: passed to `WriteToBigQuery` (tests against an emulator).
    """

    def __init__(self, dataset_spec: str, table: str, streaming: bool,
                 method: str | None = None, test_client=None):
        super().__init__()
        self._project, self._dataset = parse_dataset(dataset_spec)
        self._table = _table(table)
        self._method = _method(streaming, method)
        self._test_client = test_client

    @property
    def method(self) -> str:
        """The write method used: STREAMING_INSERTS, FILE_LOADS or STORAGE_WRITE_API."""
        return self._method

    def expand(self, rows: beam.PCollection) -> beam.PCollection[DeadLetterRow]:
        t = self._table
        result = (
            rows
            | "ToBigQueryRows" >> beam.Map(lambda row, table: to_bq_row(table, to_dict(row)), t)
            | "Write" >> WriteToBigQuery(
                table=t.name,
                dataset=self._dataset,
                project=self._project,
                schema=bigquery_schema(t),
                create_disposition=BigQueryDisposition.CREATE_IF_NEEDED,
                write_disposition=BigQueryDisposition.WRITE_APPEND,
                method=self._method,
                # Beam's default, RETRY_ALWAYS, retries an invalid row ~forever: never surfaced.
                insert_retry_strategy=RetryStrategy.RETRY_ON_TRANSIENT_ERROR,
                additional_bq_parameters=additional_bq_parameters(t),
                test_client=self._test_client,
            )
        )
        if self._method == WriteToBigQuery.Method.FILE_LOADS:
            return rows.pipeline | "NoFailedRows" >> beam.Create([])
        return result.failed_rows_with_errors | "DeadLetters" >> beam.ParDo(
            FailedInsertToDeadLetter()
        )
