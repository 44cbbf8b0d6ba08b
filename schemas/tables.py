"""Output tables, each defined once; the Arrow and the BigQuery schemas are derived from it."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa


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
    """A named output table."""

    name: str
    columns: tuple[Column, ...]
    description: str = ""

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


def bigquery_schema(table: Table) -> dict:
    """The BigQuery JSON schema ({"fields": [...]}) of a table."""
    return {"fields": [_bq_field(c) for c in table.columns]}


def _c(name: str, type_: str, mode: str = "NULLABLE", desc: str = "", *fields: Column) -> Column:
    return Column(name, type_, mode, tuple(fields), desc)


SPAN = (
    _c("start", "INT64", "REQUIRED"),
    _c("end", "INT64", "REQUIRED"),
    _c("label", "STRING", "REQUIRED"),
)
EVIDENCE = (
    _c("doc_id", "STRING", "REQUIRED"),
    _c("sentence_index", "INT64", "REQUIRED"),
    _c("start", "INT64", "REQUIRED"),
    _c("end", "INT64", "REQUIRED"),
    _c("text", "STRING", "REQUIRED"),
)

ANSWERS = Table(
    "answers",
    (
        _c("trace_id", "STRING", "REQUIRED"),
        _c("route", "STRING", "REQUIRED"),
        _c("event_time", "TIMESTAMP", "REQUIRED"),
        _c("label", "STRING", desc="ENT, CON or NIC; null when incomplete and undecided"),
        _c("hallucinated", "BOOL", desc="label != ENT; null when undecided"),
        _c("status", "STRING", "REQUIRED", "ok or incomplete (a judge call failed)"),
        _c("n_claims", "INT64", "REQUIRED"),
        _c("hallucinated_spans", "RECORD", "REPEATED", "answer character offsets", *SPAN),
        _c("reason", "STRING", desc="why the answer is incomplete"),
        _c("input_tokens", "INT64", "REQUIRED"),
        _c("cached_tokens", "INT64", "REQUIRED"),
        _c("output_tokens", "INT64", "REQUIRED"),
        _c("judge_calls", "INT64", "REQUIRED"),
        _c("cost_usd", "FLOAT64", "REQUIRED"),
        _c("judge_model", "STRING", "REQUIRED"),
        _c("prompt_hash", "STRING", "REQUIRED"),
        _c("task", "STRING"),
        _c("generator", "STRING"),
    ),
    "One row per audited answer.",
)

CLAIMS = Table(
    "claims",
    (
        _c("trace_id", "STRING", "REQUIRED"),
        _c("route", "STRING", "REQUIRED"),
        _c("event_time", "TIMESTAMP", "REQUIRED"),
        _c("claim_index", "INT64", "REQUIRED"),
        _c("claim", "STRING", "REQUIRED"),
        _c("sentence_index", "INT64", "REQUIRED"),
        _c("sentence", "STRING", "REQUIRED", "the answer sentence the claim comes from"),
        _c("answer_start", "INT64", "REQUIRED"),
        _c("answer_end", "INT64", "REQUIRED"),
        _c("window_labels", "STRING", "REPEATED", "local label per window (ERR on failure)"),
        _c("local_label", "STRING"),
        _c("deciding_window", "INT64"),
        _c("label", "STRING"),
        _c("status", "STRING", "REQUIRED", "ok or judge_error"),
        _c("note", "STRING", desc="why a label was changed or missing"),
        _c("evidence", "RECORD", "REPEATED", "context spans, offsets within doc", *EVIDENCE),
        _c("judge_model", "STRING", "REQUIRED"),
        _c("prompt_hash", "STRING", "REQUIRED"),
    ),
    "One row per claim.",
)

ROUTE_RATES = Table(
    "route_rates",
    (
        _c("route", "STRING", "REQUIRED"),
        _c("day", "STRING", "REQUIRED", "UTC day of the event time, YYYY-MM-DD"),
        _c("traces", "INT64", "REQUIRED", "complete answers (the rate's denominator)"),
        _c("hallucinated", "INT64", "REQUIRED"),
        _c("rate", "FLOAT64"),
        _c("rate_low", "FLOAT64", desc="95% Wilson interval"),
        _c("rate_high", "FLOAT64"),
        _c("con", "INT64", "REQUIRED"),
        _c("nic", "INT64", "REQUIRED"),
        _c("incomplete", "INT64", "REQUIRED", "answers kept out of the rate"),
        _c("input_tokens", "INT64", "REQUIRED"),
        _c("cached_tokens", "INT64", "REQUIRED"),
        _c("output_tokens", "INT64", "REQUIRED"),
        _c("cost_usd", "FLOAT64", "REQUIRED"),
    ),
    "Per route and day: hallucination rate of complete answers.",
)

COSTS = Table(
    "costs",
    (
        _c("route", "STRING", "REQUIRED"),
        _c("judge_model", "STRING", "REQUIRED"),
        _c("day", "STRING", "REQUIRED"),
        _c("calls", "INT64", "REQUIRED"),
        _c("input_tokens", "INT64", "REQUIRED"),
        _c("cached_tokens", "INT64", "REQUIRED"),
        _c("output_tokens", "INT64", "REQUIRED"),
        _c("cost_usd", "FLOAT64", "REQUIRED"),
    ),
    "Per route, judge model and day: judge calls, tokens and USD.",
)

DEAD_LETTERS = Table(
    "dead_letters",
    (
        _c("stage", "STRING", "REQUIRED"),
        _c("reason", "STRING", "REQUIRED"),
        _c("trace_id", "STRING"),
        _c("raw", "STRING", "REQUIRED", "the record as received"),
    ),
    "Records that could not be processed.",
)

TABLES: dict[str, Table] = {
    t.name: t for t in (ANSWERS, CLAIMS, ROUTE_RATES, COSTS, DEAD_LETTERS)
}
