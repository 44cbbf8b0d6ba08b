"""BigQuery sink: rt4chart's output tables, created and written with partitioning and clustering.

Tables come from `rt4chart.schemas.tables`: partitioned by the UTC day of `partition_field`
(partitions expire after `--partition-expiration-days`, if given), clustered on
`cluster_fields`, with the table and column descriptions. `ensure_tables` makes them ready up
front (google-cloud-bigquery, idempotent): it creates a missing dataset in the location given
(`--bigquery-location`; none given is an error, never a default region) and missing tables, and
adds to an existing table the columns rt4chart added since (NULLABLE or REPEATED only; nothing
is ever dropped). `WriteBigQueryTable` also creates a missing table (CREATE_IF_NEEDED) with the
same definition, and appends. Beam never creates the dataset: call `ensure_tables` before the
pipeline starts.

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

from rt4chart.schemas.columns import to_dict
from rt4chart.schemas.records import DeadLetter
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.schemas.tables import TABLES, Column, Table, bigquery_schema
from rt4chart.transforms.common.guard import GuardedDoFn, element_letter

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


def additional_bq_parameters(table: Table | str, partition_expiration_ms: int | None = None
                             ) -> dict:
    """tables.insert fields beyond the schema: description, DAY partitioning (with its expiry,
    when given), clustering."""
    t = _table(table)
    params: dict = {"description": t.description}
    if t.partition_field:
        params["timePartitioning"] = {"type": "DAY", "field": t.partition_field}
        if partition_expiration_ms:
            params["timePartitioning"]["expirationMs"] = str(partition_expiration_ms)
    if t.cluster_fields:
        params["clustering"] = {"fields": list(t.cluster_fields)}
    return params


def table_resource(project: str, dataset: str, table: Table | str,
                   partition_expiration_ms: int | None = None) -> dict:
    """The tables.insert body (REST JSON) of an rt4chart table."""
    t = _table(table)
    return {
        "tableReference": {"projectId": project, "datasetId": dataset, "tableId": t.name},
        "schema": bigquery_schema(t),
        **additional_bq_parameters(t, partition_expiration_ms),
    }


def added_fields(existing: list[dict], wanted: list[dict], prefix: str = ""
                 ) -> tuple[list[dict], list[str]]:
    """A table's schema fields with the columns of `wanted` it lacks appended (also inside
    RECORD columns), and the names added. Nothing is dropped: columns rt4chart no longer writes
    stay, an existing column keeps its type. The one change is the one BigQuery allows: a
    REQUIRED column rt4chart now declares NULLABLE (a cost that is unknown for an unpriced
    model) is relaxed, listed as "NAME (now NULLABLE)". Names compare as BigQuery does,
    case-insensitively.

    Raises:
        ValueError: a missing column is REQUIRED (BigQuery adds only NULLABLE or REPEATED ones
            to a table that has rows).
    """
    merged = [dict(f) for f in existing]
    index = {f["name"].lower(): i for i, f in enumerate(merged)}
    added: list[str] = []
    for field in wanted:
        name = prefix + field["name"]
        i = index.get(field["name"].lower())
        if i is None:
            if field.get("mode") == "REQUIRED":
                raise ValueError(f"cannot add the REQUIRED column {name} to an existing table: "
                                 "BigQuery adds only NULLABLE or REPEATED columns")
            merged.append(field)
            added.append(name)
        elif merged[i].get("mode") == "REQUIRED" and field.get("mode", "NULLABLE") == "NULLABLE":
            merged[i] = {**merged[i], "mode": "NULLABLE"}
            added.append(f"{name} (now NULLABLE)")
        elif field.get("fields") and merged[i].get("fields") is not None:
            sub, sub_added = added_fields(merged[i]["fields"], field["fields"], f"{name}.")
            merged[i] = {**merged[i], "fields": sub}
            added += sub_added
    return merged, added


def _update_table(client, existing, table: Table, partition_expiration_ms: int | None):
    """An existing table with rt4chart's new columns added and, when given, the partition
    expiry set (tables.patch); the table as it is when nothing changes."""
    from google.cloud import bigquery

    fields, added = added_fields([f.to_api_repr() for f in existing.schema],
                                 bigquery_schema(table)["fields"])
    changed = []
    if added:
        existing.schema = [bigquery.SchemaField.from_api_repr(f) for f in fields]
        changed.append("schema")
        logger.info("BigQuery table %s: adding or relaxing columns %s", existing.table_id,
                    ", ".join(added))
    partitioning = existing.time_partitioning
    if partition_expiration_ms and partitioning is not None and (
            partitioning.expiration_ms != partition_expiration_ms):
        partitioning.expiration_ms = partition_expiration_ms
        existing.time_partitioning = partitioning
        changed.append("time_partitioning")
    return client.update_table(existing, changed) if changed else existing


def _ensure_dataset(client, project: str, dataset: str, location: str | None) -> None:
    from google.api_core.exceptions import NotFound
    from google.cloud import bigquery

    try:
        found = client.get_dataset(f"{project}.{dataset}")
    except NotFound:
        if not location:
            raise ValueError(
                f"BigQuery dataset {project}:{dataset} does not exist: pass --bigquery-location "
                "LOCATION (US, EU, europe-west1, ...) to create it there") from None
        ds = bigquery.Dataset(bigquery.DatasetReference(project, dataset))
        ds.location = location
        client.create_dataset(ds, exists_ok=True)
        logger.info("created BigQuery dataset %s:%s in %s", project, dataset, location)
        return
    if location and found.location and found.location.lower() != location.lower():
        raise ValueError(f"BigQuery dataset {project}:{dataset} is in {found.location}, not in "
                         f"{location} (--bigquery-location)")


def ensure_tables(client, project: str, dataset: str, location: str | None = None,
                  partition_expiration_ms: int | None = None) -> list:
    """Make the dataset and every rt4chart table in it ready, before a job writes to them.

    A missing dataset is created in `location` (ValueError without one; an existing dataset in
    another location is a ValueError too). A missing table is created (schema, DAY
    partitioning, clustering); an existing one gains the columns rt4chart added since it was
    created (`added_fields`: never a drop or a change). With `partition_expiration_ms`, every
    table's partitions expire that long after their day, existing tables included. Idempotent.
    `client` is a `google.cloud.bigquery.Client`.

    Returns:
        The `google.cloud.bigquery.Table` of every table, in `TABLES` order.
    """
    from google.api_core.exceptions import NotFound
    from google.cloud import bigquery

    _ensure_dataset(client, project, dataset, location)
    ready = []
    for table in TABLES.values():
        try:
            existing = client.get_table(f"{project}.{dataset}.{table.name}")
        except NotFound:
            body = table_resource(project, dataset, table, partition_expiration_ms)
            ready.append(client.create_table(bigquery.Table.from_api_repr(body), exists_ok=True))
            continue
        ready.append(_update_table(client, existing, table, partition_expiration_ms))
    logger.info("BigQuery tables ready in %s:%s: %s", project, dataset, ", ".join(TABLES))
    return ready


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


class FailedInsertToDeadLetter(GuardedDoFn):
    """(destination, row, errors) from WriteToBigQuery -> a dead_letters row, counted."""

    stage = STAGE

    def fault(self, element, reason: str) -> Iterable[DeadLetterRow]:
        yield DeadLetterRow.of(element_letter(STAGE, reason, element))

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
        partition_expiration_ms: the partitions' expiry, should Beam create the table.
    """

    def __init__(self, dataset_spec: str, table: str, streaming: bool,
                 method: str | None = None, test_client=None,
                 partition_expiration_ms: int | None = None):
        super().__init__()
        self._project, self._dataset = parse_dataset(dataset_spec)
        self._table = _table(table)
        self._method = _method(streaming, method)
        self._test_client = test_client
        self._expiration_ms = partition_expiration_ms

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
                additional_bq_parameters=additional_bq_parameters(t, self._expiration_ms),
                test_client=self._test_client,
            )
        )
        if self._method == WriteToBigQuery.Method.FILE_LOADS:
            return rows.pipeline | "NoFailedRows" >> beam.Create([])
        return result.failed_rows_with_errors | "DeadLetters" >> beam.ParDo(
            FailedInsertToDeadLetter()
        )
