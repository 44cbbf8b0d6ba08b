"""Output tables, each derived from its row class in `rt4chart.schemas.rows`; the Arrow and the
BigQuery schemas (and the Terraform JSON, `infra/export_schemas.py`) are derived from a table."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pyarrow as pa

from rt4chart.schemas.rows import (
    AlertRow,
    AnswerRow,
    ClaimRow,
    CostRow,
    DeadLetterRow,
    JudgeCacheRow,
    RouteRateRow,
    SkippedRow,
    TraceRow,
)


@dataclass(frozen=True)
class Column:
    """One column: BigQuery-style type name and mode; RECORD columns have sub-columns."""

    name: str
    type: str  # STRING | INT64 | FLOAT64 | BOOL | TIMESTAMP | RECORD
    mode: str = "NULLABLE"  # NULLABLE | REQUIRED | REPEATED
    fields: tuple[Column, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Table:
    """A named output table, with how BigQuery partitions (by day) and clusters it."""

    name: str
    columns: tuple[Column, ...]
    description: str = ""
    partition_field: str = ""  # a TIMESTAMP column; tables are partitioned by its UTC day
    cluster_fields: tuple[str, ...] = ()
    insert_id: tuple[str, ...] = ()  # columns that identify a row, for idempotent inserts
    row_type: type | None = None  # the row class the columns come from

    @classmethod
    def of(cls, name: str, row_type: type, description: str, *, partition_field: str,
           cluster_fields: tuple[str, ...], insert_id: tuple[str, ...]) -> Table:
        """A table whose columns are the fields of `row_type` (see `columns_of`)."""
        return cls(name, columns_of(row_type), description, partition_field, cluster_fields,
                   insert_id, row_type)

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


_SCALARS = {
    "STRING": pa.string(),
    "INT64": pa.int64(),
    "FLOAT64": pa.float64(),
    "BOOL": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}


def _arrow_type(col: Column) -> pa.DataType:
    if col.type == "RECORD":
        base: pa.DataType = pa.struct([_arrow_field(c) for c in col.fields])
    else:
        base = _SCALARS[col.type]
    return pa.list_(base) if col.mode == "REPEATED" else base


def _arrow_field(col: Column) -> pa.Field:
    return pa.field(col.name, _arrow_type(col), nullable=col.mode != "REQUIRED")


def arrow_schema(table: Table) -> pa.Schema:
    """The pyarrow schema of a table (REPEATED becomes list, RECORD becomes struct)."""
    return pa.schema([_arrow_field(c) for c in table.columns])


def _bq_field(col: Column) -> dict:
    field: dict = {"name": col.name, "type": col.type, "mode": col.mode}
    if col.fields:
        field["fields"] = [_bq_field(c) for c in col.fields]
    if col.description:
        field["description"] = col.description
    return field


def row_insert_id(table: Table, row: dict) -> str:
    """A stable id of a row (from the table's identifying columns), for idempotent inserts."""
    return "|".join(str(row[name]) for name in table.insert_id)


def bigquery_schema(table: Table) -> dict:
    """The BigQuery JSON schema ({"fields": [...]}) of a table."""
    return {"fields": [_bq_field(c) for c in table.columns]}


def columns_of(row_type: type) -> tuple[Column, ...]:
    """The columns of a row class (`rt4chart.schemas.rows`), from its fields' metadata."""
    return tuple(
        Column(f.name, f.metadata["type"], f.metadata["mode"],
               columns_of(f.metadata["record"]) if f.metadata["record"] else (),
               f.metadata["description"])
        for f in dataclasses.fields(row_type)
    )


ANSWERS = Table.of(
    "answers", AnswerRow, "One row per audited answer.",
    partition_field="event_time", cluster_fields=("route", "label"), insert_id=("trace_id",),
)
CLAIMS = Table.of(
    "claims", ClaimRow, "One row per claim.",
    partition_field="event_time", cluster_fields=("route", "label"),
    insert_id=("trace_id", "claim_index"),
)
ROUTE_RATES = Table.of(
    "route_rates", RouteRateRow,
    "Per route and event-time window: hallucination rate of complete answers.",
    partition_field="window_start", cluster_fields=("route",),
    insert_id=("route", "window_start", "pane_index"),
)
COSTS = Table.of(
    "costs", CostRow,
    "Per route, judge model and event-time window: judge calls, tokens and USD.",
    partition_field="window_start", cluster_fields=("route", "judge_model"),
    insert_id=("route", "judge_model", "window_start", "pane_index"),
)
DEAD_LETTERS = Table.of(
    "dead_letters", DeadLetterRow, "Records that could not be processed.",
    partition_field="received_at", cluster_fields=("stage",), insert_id=("dead_letter_id",),
)
ALERTS = Table.of(
    "alerts", AlertRow,
    "A route whose windowed hallucination rate crossed an alert rule (once per window and rule).",
    partition_field="window_start", cluster_fields=("route",),
    insert_id=("route", "window_start", "rule"),
)
JUDGE_CACHE = Table.of(
    "judge_cache", JudgeCacheRow,
    "Every successful judge call's result, content-addressed: a later run reuses it (--reuse).",
    partition_field="created_at", cluster_fields=("stage",), insert_id=("key",),
)
TRACES = Table.of(
    "traces", TraceRow,
    "Opt-in (--write-traces): each audited trace's raw text (question, contexts, answer), so "
    "that a report from these tables shows it. Holds the RAG system's data as received.",
    partition_field="event_time", cluster_fields=("route",), insert_id=("trace_id",),
)

SKIPPED = Table.of(
    "skipped", SkippedRow,
    "Traces not audited because a spend cap was reached (--max-usd, --max-usd-per-hour), "
    "with the reason and the raw record; --redo reads it.",
    partition_field="skipped_at", cluster_fields=("route",),
    insert_id=("trace_id", "skipped_at"),
)

TABLES: dict[str, Table] = {
    t.name: t for t in (ANSWERS, CLAIMS, ROUTE_RATES, COSTS, DEAD_LETTERS, ALERTS, JUDGE_CACHE,
                        TRACES, SKIPPED)
}
# Tables written only when asked for (`--write-traces`); created in BigQuery all the same.
OPT_IN_TABLES = ("traces",)
