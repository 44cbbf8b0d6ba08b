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
    """A named output table, with how BigQuery partitions (by day) and clusters it."""

    name: str
    columns: tuple[Column, ...]
    description: str = ""
    partition_field: str = ""  # a TIMESTAMP column; tables are partitioned by its UTC day
    cluster_fields: tuple[str, ...] = ()
    insert_id: tuple[str, ...] = ()  # columns that identify a row, for idempotent inserts

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


def _c(name: str, type_: str, mode: str = "NULLABLE", desc: str = "", *fields: Column) -> Column:
    return Column(name, type_, mode, tuple(fields), desc)


# Offsets are `char_start`/`char_end`: END is a reserved word in BigQuery SQL.
SPAN = (
    _c("char_start", "INT64", "REQUIRED"),
    _c("char_end", "INT64", "REQUIRED"),
    _c("label", "STRING", "REQUIRED"),
)
EVIDENCE = (
    _c("doc_id", "STRING", "REQUIRED"),
    _c("sentence_index", "INT64", "REQUIRED"),
    _c("char_start", "INT64", "REQUIRED"),
    _c("char_end", "INT64", "REQUIRED"),
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
        _c("p_hallucinated", "FLOAT64",
           desc="1 - prod(1 - p_unsupported) over decided claims; null when undecided"),
        _c("status", "STRING", "REQUIRED", "ok or incomplete (a judge call failed)"),
        _c("n_claims", "INT64", "REQUIRED"),
        _c("hallucinated_spans", "RECORD", "REPEATED", "answer character offsets", *SPAN),
        _c("reason", "STRING", desc="why the answer is incomplete"),
        _c("input_tokens", "INT64", "REQUIRED"),
        _c("cached_tokens", "INT64", "REQUIRED"),
        _c("output_tokens", "INT64", "REQUIRED"),
        _c("judge_calls", "INT64", "REQUIRED"),
        _c("reused_calls", "INT64", "REQUIRED", "results reused from an earlier run (--reuse)"),
        _c("cost_usd", "FLOAT64", "REQUIRED"),
        _c("judge_model", "STRING", "REQUIRED"),
        _c("prompt_hash", "STRING", "REQUIRED"),
        _c("task", "STRING"),
        _c("generator", "STRING"),
        _c("audited_at", "TIMESTAMP", "REQUIRED", "when the verdict was reached"),
        _c("late", "BOOL", "REQUIRED",
           "streaming: arrived after its rate window closed (kept out of route_rates)"),
    ),
    "One row per audited answer.",
    partition_field="event_time",
    cluster_fields=("route", "label"),
    insert_id=("trace_id",),
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
        _c("p_unsupported", "FLOAT64",
           desc="the final verification's P(not ENT): from log-probabilities, else 0/1"),
        _c("judge_model", "STRING", "REQUIRED"),
        _c("prompt_hash", "STRING", "REQUIRED"),
    ),
    "One row per claim.",
    partition_field="event_time",
    cluster_fields=("route", "label"),
    insert_id=("trace_id", "claim_index"),
)

WINDOW = (
    _c("window_start", "TIMESTAMP", "REQUIRED", "event-time window (batch: the UTC day)"),
    _c("window_end", "TIMESTAMP", "REQUIRED"),
    _c("day", "STRING", "REQUIRED", "UTC day of window_start, YYYY-MM-DD"),
    _c("pane", "STRING", "REQUIRED",
       "EARLY, ON_TIME or LATE firing; rows accumulate, so a window's latest pane holds it all"),
    _c("pane_index", "INT64", "REQUIRED", "0, 1, ... per window; the highest is the latest"),
    _c("emitted_at", "TIMESTAMP", "REQUIRED"),
)

ROUTE_RATES = Table(
    "route_rates",
    (
        _c("route", "STRING", "REQUIRED"),
        *WINDOW,
        _c("traces", "INT64", "REQUIRED", "complete answers (the rate's denominator)"),
        _c("hallucinated", "INT64", "REQUIRED"),
        _c("rate", "FLOAT64"),
        _c("rate_low", "FLOAT64", desc="95% Wilson interval"),
        _c("rate_high", "FLOAT64"),
        _c("con", "INT64", "REQUIRED"),
        _c("nic", "INT64", "REQUIRED"),
        _c("incomplete", "INT64", "REQUIRED", "answers kept out of the rate"),
        _c("late", "INT64", "REQUIRED", "traces counted after the window's on-time firing"),
        _c("input_tokens", "INT64", "REQUIRED"),
        _c("cached_tokens", "INT64", "REQUIRED"),
        _c("output_tokens", "INT64", "REQUIRED"),
        _c("cost_usd", "FLOAT64", "REQUIRED"),
        _c("sample_trace_ids", "STRING", "REPEATED", "a few hallucinated traces, CON first"),
    ),
    "Per route and event-time window: hallucination rate of complete answers.",
    partition_field="window_start",
    cluster_fields=("route",),
    insert_id=("route", "window_start", "pane_index"),
)

COSTS = Table(
    "costs",
    (
        _c("route", "STRING", "REQUIRED"),
        _c("judge_model", "STRING", "REQUIRED"),
        *WINDOW,
        _c("calls", "INT64", "REQUIRED"),
        _c("reused_calls", "INT64", "REQUIRED", "results reused from an earlier run (--reuse)"),
        _c("input_tokens", "INT64", "REQUIRED"),
        _c("cached_tokens", "INT64", "REQUIRED"),
        _c("output_tokens", "INT64", "REQUIRED"),
        _c("cost_usd", "FLOAT64", "REQUIRED"),
    ),
    "Per route, judge model and event-time window: judge calls, tokens and USD.",
    partition_field="window_start",
    cluster_fields=("route", "judge_model"),
    insert_id=("route", "judge_model", "window_start", "pane_index"),
)

DEAD_LETTERS = Table(
    "dead_letters",
    (
        _c("stage", "STRING", "REQUIRED"),
        _c("reason", "STRING", "REQUIRED"),
        _c("trace_id", "STRING"),
        _c("route", "STRING", desc="when the record names one"),
        _c("raw", "STRING", "REQUIRED", "the record as received"),
        _c("received_at", "TIMESTAMP", "REQUIRED"),
        _c("dead_letter_id", "STRING", "REQUIRED", "hash of stage, reason and raw record"),
    ),
    "Records that could not be processed.",
    partition_field="received_at",
    cluster_fields=("stage",),
    insert_id=("dead_letter_id",),
)

ALERTS = Table(
    "alerts",
    (
        _c("route", "STRING", "REQUIRED"),
        _c("window_start", "TIMESTAMP", "REQUIRED"),
        _c("window_end", "TIMESTAMP", "REQUIRED"),
        _c("rule", "STRING", "REQUIRED", "absolute or relative"),
        _c("threshold", "FLOAT64", "REQUIRED", "the rate the window's rate exceeded"),
        _c("baseline", "FLOAT64", desc="relative rule: the route's trailing rate"),
        _c("rate", "FLOAT64", "REQUIRED"),
        _c("rate_low", "FLOAT64", "REQUIRED"),
        _c("rate_high", "FLOAT64", "REQUIRED"),
        _c("traces", "INT64", "REQUIRED"),
        _c("hallucinated", "INT64", "REQUIRED"),
        _c("sample_trace_ids", "STRING", "REPEATED"),
        _c("emitted_at", "TIMESTAMP", "REQUIRED"),
    ),
    "A route whose windowed hallucination rate crossed an alert rule (once per window and rule).",
    partition_field="window_start",
    cluster_fields=("route",),
    insert_id=("route", "window_start", "rule"),
)

JUDGE_CACHE = Table(
    "judge_cache",
    (
        _c("key", "STRING", "REQUIRED",
           "sha256 of the stage, judge model, prompt hash and the call's inputs"),
        _c("stage", "STRING", "REQUIRED", "decompose, verify_local or verify_global"),
        _c("judge_model", "STRING", "REQUIRED"),
        _c("prompt_hash", "STRING", "REQUIRED"),
        _c("result", "STRING", "REQUIRED", "the judge's answer as JSON, before grounding"),
        _c("created_at", "TIMESTAMP", "REQUIRED"),
    ),
    "Every successful judge call's result, content-addressed: a later run reuses it (--reuse).",
    partition_field="created_at",
    cluster_fields=("stage",),
    insert_id=("key",),
)

TABLES: dict[str, Table] = {
    t.name: t for t in (ANSWERS, CLAIMS, ROUTE_RATES, COSTS, DEAD_LETTERS, ALERTS, JUDGE_CACHE)
}
