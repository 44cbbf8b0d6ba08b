"""Rows of the output tables: one frozen dataclass per table, the one definition of its columns.

Every field is a column, in the table's order; its BigQuery type, mode and description are the
field's metadata (`columns.column`). `schemas/tables.py` derives the tables from these classes,
and from the tables the Arrow schemas, the BigQuery schemas and the Terraform JSON. Transforms
emit and consume rows; only a sink turns a row into a dict (`columns.to_dict`), and a reader of
a written table turns a dict back into a row (`columns.from_dict`).

Rows are keyword-only and have no defaults: a NULLABLE column may sit between REQUIRED ones, and
building a row names every column. REPEATED columns are tuples, so rows are hashable.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from rt4chart.schemas.columns import column
from rt4chart.schemas.records import DeadLetter, Trace
from rt4chart.schemas.usage import Usage


# Offsets are `char_start`/`char_end`: END is a reserved word in BigQuery SQL.
@dataclass(frozen=True, kw_only=True)
class SpanRow:
    """A hallucinated span of an answer (character offsets in the answer)."""

    char_start: int = column("INT64", "REQUIRED")
    char_end: int = column("INT64", "REQUIRED")
    label: str = column("STRING", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class EvidenceRow:
    """A context span a verdict rests on (offsets within its document)."""

    doc_id: str = column("STRING", "REQUIRED")
    sentence_index: int = column("INT64", "REQUIRED")
    char_start: int = column("INT64", "REQUIRED")
    char_end: int = column("INT64", "REQUIRED")
    text: str = column("STRING", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class ClaimSpanRow:
    """Answer words a claim restates (character offsets in the answer)."""

    char_start: int = column("INT64", "REQUIRED")
    char_end: int = column("INT64", "REQUIRED")


REUSED = "results reused from an earlier run (--reuse)"
UNPRICED = "USD; null when the judge model has no price (see the run's warnings)"


@dataclass(frozen=True, kw_only=True)
class AnswerRow:
    """One audited answer."""

    trace_id: str = column("STRING", "REQUIRED")
    route: str = column("STRING", "REQUIRED")
    event_time: datetime = column("TIMESTAMP", "REQUIRED")
    label: str | None = column(
        "STRING", description="ENT, CON or NIC; null when incomplete and undecided")
    hallucinated: bool | None = column("BOOL", description="label != ENT; null when undecided")
    p_hallucinated: float | None = column(
        "FLOAT64",
        description="calibrated P(the answer is hallucinated), from its largest claim "
        "p_unsupported; >= p_threshold exactly when label is CON or NIC; null when undecided")
    status: str = column("STRING", "REQUIRED", "ok or incomplete (a judge call failed)")
    n_claims: int = column("INT64", "REQUIRED")
    hallucinated_spans: tuple[SpanRow, ...] = column(
        "RECORD", "REPEATED", "answer character offsets", SpanRow)
    reason: str | None = column("STRING", description="why the answer is incomplete")
    input_tokens: int = column("INT64", "REQUIRED")
    cached_tokens: int = column("INT64", "REQUIRED")
    output_tokens: int = column("INT64", "REQUIRED")
    judge_calls: int = column("INT64", "REQUIRED")
    reused_calls: int = column("INT64", "REQUIRED", REUSED)
    cost_usd: float | None = column("FLOAT64", description=UNPRICED)
    judge_model: str = column("STRING", "REQUIRED")
    prompt_hash: str = column("STRING", "REQUIRED")
    task: str | None = column("STRING")
    generator: str | None = column("STRING")
    audited_at: datetime = column("TIMESTAMP", "REQUIRED", "when the verdict was reached")
    late: bool = column(
        "BOOL", "REQUIRED",
        "streaming: arrived after its rate window closed (kept out of route_rates)")
    # Added after the first release: NULLABLE, so that an existing table can take them.
    partial: bool | None = column(
        "BOOL", description="over a work limit with --oversize truncate: audited on its first "
        "sentences or claims only")
    partial_reason: str | None = column(
        "STRING", description="the limit the trace was over and what was audited")
    suspicious_input: bool | None = column(
        "BOOL", description="the trace holds instruction-like text aimed at an evaluator "
        "(\"ignore previous instructions\", \"respond with ENT\", role tags, fake delimiters)")
    suspicious_snippets: tuple[str, ...] = column(
        "STRING", "REPEATED", "what matched, as \"where: snippet\" (question, context N, answer)")
    p_threshold: float | None = column(
        "FLOAT64", description="the run's answer threshold: hallucinated <=> p_hallucinated >= "
        "it (rt4chart.transforms.common.probability)")
    sample_weight: float | None = column(
        "FLOAT64", description="1/rate of a trace picked by --sample, 1 for --always or no "
        "sampling: its weight in route_rates.rate_weighted")
    empty_retrieval: bool | None = column(
        "BOOL", description="the trace's retrieval returned nothing (contexts: []): every "
        "checkable claim is NIC, \"nothing was retrieved\" (NULL: a run before the column)")


@dataclass(frozen=True, kw_only=True)
class ClaimRow:
    """One claim of an answer, with its verdict."""

    trace_id: str = column("STRING", "REQUIRED")
    route: str = column("STRING", "REQUIRED")
    event_time: datetime = column("TIMESTAMP", "REQUIRED")
    claim_index: int = column("INT64", "REQUIRED")
    claim: str = column("STRING", "REQUIRED")
    sentence_index: int = column("INT64", "REQUIRED")
    sentence: str = column("STRING", "REQUIRED", "the answer sentence the claim comes from")
    answer_start: int = column("INT64", "REQUIRED")
    answer_end: int = column("INT64", "REQUIRED")
    window_labels: tuple[str, ...] = column(
        "STRING", "REPEATED", "local label per window (ERR on failure)")
    local_label: str | None = column("STRING")
    deciding_window: int | None = column("INT64")
    label: str | None = column("STRING")
    status: str = column(
        "STRING", "REQUIRED", "ok, judge_error, or no_claim (the claim's text asserts nothing "
        "checkable: no label, not part of the answer's label)")
    note: str | None = column("STRING", description="why a label was changed or missing")
    evidence: tuple[EvidenceRow, ...] = column(
        "RECORD", "REPEATED", "context spans, offsets within doc", EvidenceRow)
    p_unsupported: float | None = column(
        "FLOAT64",
        description="calibrated P(the claim is not supported by the context), from the judge's "
        "score; < p_threshold exactly when label is ENT; null without a verdict")
    judge_model: str = column("STRING", "REQUIRED")
    prompt_hash: str = column("STRING", "REQUIRED")
    # Added after the first release: NULLABLE, so that an existing table can take them.
    kind: str | None = column(
        "STRING", description="fact (about the world), source (what the sources say) or "
        "absence (what they do not say; checked against the full context only)")
    spans: tuple[ClaimSpanRow, ...] = column(
        "RECORD", "REPEATED", "answer offsets of the words the claim restates (the note says "
        "when they are its own text or its whole sentence)", ClaimSpanRow)
    p_threshold: float | None = column(
        "FLOAT64", description="the run's claim threshold: ENT <=> p_unsupported < it "
        "(rt4chart.transforms.common.probability)")


# route_rates and costs share their leading columns; a dataclass lists a base class's fields
# first (the bases in reverse method resolution order), so `RouteRateRow(WindowColumns, _Route)`
# has route, then the window columns, and `CostRow(WindowColumns, _RouteModel)` route,
# judge_model, then the window columns.
@dataclass(frozen=True, kw_only=True)
class _Route:
    route: str = column("STRING", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class _RouteModel(_Route):
    judge_model: str = column("STRING", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class WindowColumns:
    """The event-time window and pane of an aggregate row (`transforms.windows`)."""

    window_start: datetime = column(
        "TIMESTAMP", "REQUIRED", "event-time window (batch: the UTC day)")
    window_end: datetime = column("TIMESTAMP", "REQUIRED")
    day: str = column("STRING", "REQUIRED", "UTC day of window_start, YYYY-MM-DD")
    pane: str = column(
        "STRING", "REQUIRED",
        "EARLY, ON_TIME or LATE firing; rows accumulate, so a window's latest pane holds it all")
    pane_index: int = column(
        "INT64", "REQUIRED", "0, 1, ... per window; the highest is the latest")
    emitted_at: datetime = column("TIMESTAMP", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class RouteRateRow(WindowColumns, _Route):
    """A route's hallucination rate of complete answers in one window and pane."""

    traces: int = column("INT64", "REQUIRED", "complete answers (the rate's denominator)")
    hallucinated: int = column("INT64", "REQUIRED")
    rate: float | None = column("FLOAT64")
    rate_low: float | None = column("FLOAT64", description="95% Wilson interval")
    rate_high: float | None = column("FLOAT64")
    con: int = column("INT64", "REQUIRED")
    nic: int = column("INT64", "REQUIRED")
    incomplete: int = column("INT64", "REQUIRED", "answers kept out of the rate")
    late: int = column("INT64", "REQUIRED", "traces counted after the window's on-time firing")
    input_tokens: int = column("INT64", "REQUIRED")
    cached_tokens: int = column("INT64", "REQUIRED")
    output_tokens: int = column("INT64", "REQUIRED")
    cost_usd: float | None = column("FLOAT64", description=UNPRICED)
    sample_trace_ids: tuple[str, ...] = column(
        "STRING", "REPEATED", "a few hallucinated traces, CON first")
    # Added after the first release: NULLABLE, so that an existing table can take it.
    suspicious: int | None = column(
        "INT64", description="answers marked suspicious_input (incomplete ones too)")
    # Traffic (transforms/sampling.py): seen - sampled - always were left out by sampling.
    seen: int | None = column("INT64", description="valid traces that reached the sampling "
                              "decision")
    sampled: int | None = column("INT64", description="traces picked by the --sample rate")
    always: int | None = column("INT64", description="traces picked by an --always rule")
    audited: int | None = column("INT64", description="answers: complete + incomplete")
    skipped_cap: int | None = column("INT64", description="picked but not audited: a spend cap")
    dead_lettered: int | None = column(
        "INT64", description="dead letters of the route (every stage; audited answers' judge "
        "dead letters not)")
    rate_weighted: float | None = column(
        "FLOAT64", description="Horvitz-Thompson rate of complete answers, weight sample_weight")
    rate_weighted_low: float | None = column(
        "FLOAT64", description="95% Wilson interval at Kish's effective sample size")
    rate_weighted_high: float | None = column("FLOAT64")


@dataclass(frozen=True, kw_only=True)
class CostRow(WindowColumns, _RouteModel):
    """Judge calls, tokens and USD of a route and judge model in one window and pane."""

    calls: int = column("INT64", "REQUIRED")
    reused_calls: int = column("INT64", "REQUIRED", REUSED)
    input_tokens: int = column("INT64", "REQUIRED")
    cached_tokens: int = column("INT64", "REQUIRED")
    output_tokens: int = column("INT64", "REQUIRED")
    cost_usd: float | None = column("FLOAT64", description=UNPRICED)


@dataclass(frozen=True, kw_only=True)
class AlertRow:
    """A route whose windowed rate crossed an alert rule."""

    route: str = column("STRING", "REQUIRED")
    window_start: datetime = column("TIMESTAMP", "REQUIRED")
    window_end: datetime = column("TIMESTAMP", "REQUIRED")
    rule: str = column("STRING", "REQUIRED", "absolute or relative")
    threshold: float = column("FLOAT64", "REQUIRED", "the rate the window's rate exceeded")
    baseline: float | None = column(
        "FLOAT64", description="relative rule: the route's trailing rate")
    rate: float = column("FLOAT64", "REQUIRED")
    rate_low: float = column("FLOAT64", "REQUIRED")
    rate_high: float = column("FLOAT64", "REQUIRED")
    traces: int = column("INT64", "REQUIRED")
    hallucinated: int = column("INT64", "REQUIRED")
    sample_trace_ids: tuple[str, ...] = column("STRING", "REPEATED")
    emitted_at: datetime = column("TIMESTAMP", "REQUIRED")


def dead_letter_id(stage: str, reason: str, raw: str) -> str:
    """The dead_letters key: sha256 (64 hex characters) of stage, reason and raw record, so
    that a retried write of the same dead letter is idempotent."""
    return hashlib.sha256("\x1f".join((stage, reason, raw)).encode()).hexdigest()


@dataclass(frozen=True, kw_only=True)
class DeadLetterRow:
    """A record that could not be processed, as written."""

    stage: str = column("STRING", "REQUIRED")
    reason: str = column("STRING", "REQUIRED")
    trace_id: str | None = column("STRING")
    route: str | None = column("STRING", description="when the record names one")
    raw: str = column("STRING", "REQUIRED", "the record as received")
    received_at: datetime = column("TIMESTAMP", "REQUIRED")
    dead_letter_id: str = column(
        "STRING", "REQUIRED", "hash of stage, reason and raw record")

    @classmethod
    def of(cls, letter: DeadLetter, received_at: datetime | None = None) -> DeadLetterRow:
        """The row of a dead letter (every dead letter of every stage and sink comes here)."""
        return cls(stage=letter.stage, reason=letter.reason, trace_id=letter.trace_id,
                   route=letter.route, raw=letter.raw,
                   received_at=received_at or datetime.now(UTC),
                   dead_letter_id=dead_letter_id(letter.stage, letter.reason, letter.raw))


@dataclass(frozen=True, kw_only=True)
class SkippedRow:
    """A trace not audited because a spend cap was reached (transforms/spend_cap.py); --redo
    reads it."""

    trace_id: str = column("STRING", "REQUIRED")
    route: str = column("STRING", "REQUIRED")
    reason: str = column("STRING", "REQUIRED", "max_usd or max_usd_per_hour")
    detail: str = column("STRING", "REQUIRED", "which cap, the spend then, the trace's need")
    cap_route: str = column("STRING", "REQUIRED", "the capped route, or * (the whole job)")
    cap_usd: float = column("FLOAT64", "REQUIRED", "the cap's share of the process skipping")
    spent_usd: float = column("FLOAT64", "REQUIRED", "spent or reserved under that cap then")
    reservation_usd: float = column("FLOAT64", "REQUIRED", "the trace's estimated cost")
    raw: str = column("STRING", "REQUIRED", "the record as received")
    event_time: datetime = column("TIMESTAMP", "REQUIRED")
    skipped_at: datetime = column("TIMESTAMP", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class JudgeCacheRow:
    """A successful judge call's result, under its content address."""

    key: str = column(
        "STRING", "REQUIRED", "sha256 of the stage, judge model, prompt hash and the call's inputs")
    stage: str = column("STRING", "REQUIRED", "decompose, verify_local or verify_global")
    judge_model: str = column("STRING", "REQUIRED")
    prompt_hash: str = column("STRING", "REQUIRED")
    result: str = column("STRING", "REQUIRED", "the judge's answer as JSON, before grounding")
    created_at: datetime = column("TIMESTAMP", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class DocumentRow:
    """A retrieved passage of a trace."""

    doc_id: str = column("STRING", "REQUIRED")
    text: str = column("STRING", "REQUIRED")


@dataclass(frozen=True, kw_only=True)
class TraceRow:
    """A trace as audited (opt-in, `--write-traces`): its raw text, so that a report built from
    the tables alone can show the question and the context. Holds the RAG system's data as
    received (not redacted); the metadata map is not kept."""

    trace_id: str = column("STRING", "REQUIRED")
    route: str = column("STRING", "REQUIRED")
    event_time: datetime = column("TIMESTAMP", "REQUIRED")
    question: str = column("STRING", "REQUIRED", "may be empty (summarisation)")
    contexts: tuple[DocumentRow, ...] = column(
        "RECORD", "REPEATED", "the retrieved passages, in order", DocumentRow)
    answer: str = column("STRING", "REQUIRED")
    task: str | None = column("STRING")
    generator: str | None = column("STRING")

    @classmethod
    def of(cls, trace: Trace) -> TraceRow:
        """The row of a validated trace."""
        return cls(trace_id=trace.trace_id, route=trace.route,
                   event_time=datetime.fromtimestamp(trace.event_time_us / 1e6, UTC),
                   question=trace.question,
                   contexts=tuple(DocumentRow(doc_id=d.doc_id, text=d.text)
                                  for d in trace.contexts),
                   answer=trace.answer, task=trace.task, generator=trace.generator)


# The usage columns a table may have, and the `Usage` attribute each holds.
USAGE_COLUMNS = {
    "judge_calls": "calls",
    "calls": "calls",
    "reused_calls": "reused",
    "input_tokens": "input_tokens",
    "cached_tokens": "cached_tokens",
    "output_tokens": "output_tokens",
    "cost_usd": "cost_usd",
}


def usage_columns(row_type: type, usage: Usage) -> dict[str, int | float]:
    """The usage columns of `row_type` (any dataclass), filled from `usage`, as keywords."""
    names = {f.name for f in fields(row_type)}
    return {name: getattr(usage, attr) for name, attr in USAGE_COLUMNS.items() if name in names}


def usage_of(row: Any) -> Usage:
    """A row's usage columns as a `Usage` (what the row has no column for counts 0)."""
    names = {f.name for f in fields(row)}
    return Usage(**{attr: getattr(row, name) for name, attr in USAGE_COLUMNS.items()
                    if name in names})


