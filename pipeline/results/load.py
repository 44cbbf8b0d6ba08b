"""A run's tables and traces, loaded for the report.

The answers and claims tables hold neither the question nor the context: the trace view reads
them from `--traces`, else from the run's opt-in traces table (`--write-traces`; the way for a
run in BigQuery), else from the run's inputs (recorded in `summary.json` by `audit`, with
their format and span mapping). Files are read as `audit` reads them, in any of its input
formats (trace_lookup.py).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.results.earlier import is_bigquery, stored_traces, table_reader
from rt4chart.pipeline.results.trace_lookup import find_traces, mapping_of
from rt4chart.pipeline.sinks.fanout import redact_value
from rt4chart.pipeline.storage.run_reads import read_one_run
from rt4chart.schemas.records import PreparedTrace
from rt4chart.schemas.usage import add_cost
from rt4chart.transforms.common.joins import wilson
from rt4chart.transforms.common.redact import configured_secrets, redact_document
from rt4chart.transforms.common.span_mapping import SpanMapping
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import InvalidTrace, parse_trace

logger = logging.getLogger(__name__)

# Worst first: the order of the flagged list and of a span's colour when claims disagree.
# NO_CLAIM: a judge's claim that asserts nothing checkable (status no_claim), below ENT.
SEVERITY = {"CON": 0, "NIC": 1, "ERR": 2, "ENT": 3, "NO_CLAIM": 4}


@dataclass
class Run:
    """One audit run, as the report needs it."""

    out_dir: str
    answers: list[dict]
    claims: list[dict]
    route_rates: list[dict]  # the latest pane of each (route, window)
    costs: list[dict]  # the latest pane of each (route, judge model, window)
    dead_letters: list[dict]
    summary: dict
    traces: dict[str, PreparedTrace] = field(default_factory=dict)

    def claims_of(self, trace_id: str) -> list[dict]:
        return [c for c in self.claims if c["trace_id"] == trace_id]


@dataclass(frozen=True)
class RouteRate:
    """A route's rate over the whole run, summed over its windows."""

    route: str
    traces: int
    hallucinated: int
    con: int
    nic: int
    incomplete: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: a judge model with no price
    # Traffic (transforms/sampling.py): valid traces seen by the sampling decision, answers
    # (complete + incomplete); 0 in a run written before sampling.
    seen: int = 0
    audited: int = 0

    @property
    def rate(self) -> float | None:
        return self.hallucinated / self.traces if self.traces else None

    @property
    def interval(self) -> tuple[float | None, float | None]:
        return wilson(self.hallucinated, self.traces)


def answer_counts(answers: Iterable[dict]) -> tuple[int, int, int]:
    """(answers, complete, hallucinated complete answers): the counts the overview and the
    report command's closing line both give (an incomplete answer is never counted
    hallucinated, even one written with a label by an older run)."""
    answers = list(answers)
    complete = [a for a in answers if a["status"] == "ok"]
    return len(answers), len(complete), sum(bool(a["hallucinated"]) for a in complete)


def latest_panes(rows: Iterable[dict], key: tuple[str, ...]) -> list[dict]:
    """One row per key: the one with the highest pane_index (panes accumulate)."""
    best: dict[tuple, dict] = {}
    for row in rows:
        k = tuple(row[name] for name in key)
        if k not in best or row["pane_index"] > best[k]["pane_index"]:
            best[k] = row
    return sorted(best.values(), key=lambda r: (r["window_start"], r["route"]))


_SUMMED = ("traces", "hallucinated", "con", "nic", "incomplete", "input_tokens",
           "cached_tokens", "output_tokens", "cost_usd", "seen", "audited")


def route_totals(route_rates: list[dict]) -> list[RouteRate]:
    """Per route, the windows' counts summed, sorted by route."""
    totals: dict[str, dict] = {}
    for row in route_rates:
        acc = totals.setdefault(row["route"], dict.fromkeys(_SUMMED, 0))
        for name in _SUMMED:
            acc[name] = (add_cost(acc[name], row[name]) if name == "cost_usd"
                         else acc[name] + (row.get(name) or 0))
    return [RouteRate(route, **acc) for route, acc in sorted(totals.items())]


def _read_summary(out_dir: str) -> dict:
    path = FileSystems.join(out_dir.rstrip("/"), "summary.json")
    if not FileSystems.exists(path):
        return {}
    with FileSystems.open(path) as fh:
        return json.loads(fh.read())


def redacted(rows: list[dict]) -> list[dict]:
    """Rows with every text column redacted (`sinks.redact_value`): a run written before
    redaction (or by another tool) must not put a key into the report."""
    secrets = configured_secrets()
    return [redact_value(row, secrets) for row in rows]


def _redacted_summary(summary: dict) -> dict:
    """summary.json cleaned whole (a run written before its summary was: its judge model, its
    inputs' paths and its reasons may each hold a key)."""
    return redact_document(summary, configured_secrets())


def load_run(out_dir: str, traces: list[str] | None = None, bigquery_client=None) -> Run:
    """The tables of `out_dir` (a run's output directory, or `bq:PROJECT:DATASET`) and, for
    the answers it holds, their traces. Every row read is redacted (`redacted`). All of it from
    one run: read again if a run was swapped in meanwhile (`run_reads.read_one_run`).

    Raises:
        RunChangedError: a run was swapped in during every attempt, or a swap was cut short.
    """
    return read_one_run(out_dir, lambda: _load_run(out_dir, traces, bigquery_client))


def _load_run(out_dir: str, traces: list[str] | None, bigquery_client) -> Run:
    source = table_reader(out_dir, bigquery_client)

    def read(name: str) -> list[dict]:
        return redacted(source(name))

    run = Run(
        out_dir=out_dir,
        answers=read("answers"),
        claims=read("claims"),
        route_rates=latest_panes(read("route_rates"), ("route", "window_start")),
        costs=latest_panes(read("costs"), ("route", "judge_model", "window_start")),
        dead_letters=read("dead_letters"),
        summary={} if is_bigquery(out_dir) else _redacted_summary(_read_summary(out_dir)),
    )
    wanted = {a["trace_id"] for a in run.answers}
    if traces:
        run.traces = read_traces(traces, wanted)
        return run
    stored = stored_traces(out_dir, wanted, bigquery_client)  # --write-traces
    paths = [] if stored else run.summary.get("inputs", [])
    run.traces = prepared(stored, wanted) if stored else (
        read_traces(paths, wanted, run.summary.get("input_format", "auto"),
                    mapping_of(run.summary.get("spans"))) if paths else {})
    return run


def prepared(records: Iterable[object], wanted: set[str],
             found: dict[str, PreparedTrace] | None = None) -> dict[str, PreparedTrace]:
    """The segmented traces among `records` whose id is in `wanted` (first one of an id wins),
    added to `found`. Invalid records are skipped: the run's dead letters already report them.
    """
    found = {} if found is None else found
    for record in records:
        try:
            trace = parse_trace(record)
        except InvalidTrace:
            continue
        if trace.trace_id in wanted and trace.trace_id not in found:
            found[trace.trace_id] = prepare(trace, SegmentConfig())
    return found


def read_traces(paths: Iterable[str], wanted: set[str], input_format: str = "auto",
                spans: SpanMapping | None = None) -> dict[str, PreparedTrace]:
    """The segmented traces in the files `paths` whose id is in `wanted`, read as `audit`
    reads them (any input format: trace_lookup.py); a file that cannot be read is a warning
    (the report is drawn without its traces)."""
    found: dict[str, PreparedTrace] = {}
    for path in paths:
        try:
            find_traces([path], wanted, input_format, spans, found)
        except Exception as exc:  # noqa: BLE001 - a missing or broken file: no trace views
            logger.warning("cannot read traces from %s: %s", path, exc)
    return found
