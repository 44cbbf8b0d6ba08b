"""A run's tables read back as typed results (`rt4chart.open_run`, and what `rt4chart.audit`
returns): answers with their claims and evidence, a summary per route, the dead letters, and
the tables themselves as Arrow (or pandas, when it is installed).

A run is a run folder (`rt4chart audit --out DIR`, `stream --out DIR`, either table layout) or
a BigQuery dataset written with `--bigquery`, named `bq:PROJECT:DATASET`. Rows are read as
`rt4chart report` reads them (`earlier.table_reader`, free text redacted again) and the
per-route figures are its figures (`report/data.py`: the latest pane of each window, summed).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from rt4chart.pipeline.results.earlier import is_bigquery, table_reader
from rt4chart.pipeline.results.load import latest_panes, redacted, route_totals
from rt4chart.pipeline.results.summary import read_table
from rt4chart.pipeline.storage.run_reads import read_one_run
from rt4chart.pipeline.storage.table_files import table_files
from rt4chart.schemas.columns import from_dict
from rt4chart.schemas.results import Answer, RouteSummary, Summary
from rt4chart.schemas.rows import AnswerRow, ClaimRow, DeadLetterRow
from rt4chart.schemas.tables import TABLES, arrow_schema
from rt4chart.schemas.usage import add_cost
from rt4chart.transforms.common.joins import wilson

READ = ("answers", "claims", "route_rates", "costs", "dead_letters")


@dataclass
class AuditResult:
    """An audit's results: `answers` (typed, with their claims), `summary` (per route and in
    total), `dead_letters` (records that could not be audited, with the stage and reason),
    `complete` and `incomplete_answers` (what `rt4chart audit` says with exit 3), and the
    tables as Arrow (`to_arrow`, `to_pandas`). `source`: where the tables were read from
    (None for an `rt4chart.audit` run that wrote nothing)."""

    answers: tuple[Answer, ...]
    summary: Summary
    dead_letters: tuple[DeadLetterRow, ...]
    tables: dict[str, pa.Table] = field(repr=False)
    source: str | None = None

    @property
    def incomplete_answers(self) -> tuple[Answer, ...]:
        """The answers left incomplete (a judge call failed on them; the latest answer of
        each trace), in trace id order: never counted as grounded, and `rt4chart audit
        --redo` audits them again."""
        latest = {a.trace_id: a for a in self.answers}  # sorted by (trace_id, audited_at)
        return tuple(a for a in latest.values() if not a.complete)

    @property
    def complete(self) -> bool:
        """Whether every answer is complete. False is what `rt4chart audit` says with its exit
        code 3 (answers left incomplete) for the same run."""
        return not self.incomplete_answers

    def answer(self, trace_id: str) -> Answer:
        """The answer of one trace (KeyError when the run has none)."""
        for a in self.answers:
            if a.trace_id == trace_id:
                return a
        raise KeyError(f"no answer for trace {trace_id!r}")

    def to_arrow(self, table: str = "answers") -> pa.Table:
        """One of the run's tables (answers, claims, route_rates, costs, dead_letters) as an
        Arrow table, with the columns `rt4chart audit` writes."""
        if table not in self.tables:
            raise ValueError(f"table must be one of {', '.join(self.tables)}, got {table!r}")
        return self.tables[table]

    def to_pandas(self, table: str = "answers"):
        """One of the run's tables as a pandas DataFrame (needs pandas installed)."""
        try:
            import pandas  # noqa: F401 - only to say clearly that it is missing
        except ImportError as exc:
            raise ImportError("to_pandas() needs pandas (pip install pandas); to_arrow() "
                              "gives the same table without it") from exc
        return self.to_arrow(table).to_pandas()


def _arrow(source: str, name: str, reader) -> pa.Table:
    """A table, its free-text columns redacted (a run written before redaction)."""
    schema = arrow_schema(TABLES[name])
    rows = reader(name) if is_bigquery(source) else read_table(source, name).to_pylist()
    return pa.Table.from_pylist(redacted(rows), schema=schema)


def _check_run(source: str) -> None:
    if not is_bigquery(source) and not table_files(source, "answers"):
        raise FileNotFoundError(f"{source}: no answers table there; give the output folder of "
                                "`rt4chart audit` or `stream`, or bq:PROJECT:DATASET")


def read_run_tables(source: str, bigquery_client=None) -> dict[str, pa.Table]:
    """The run's answers, claims, route_rates, costs and dead_letters tables (Arrow), all of
    one run (`run_reads.read_one_run`: read again if a run was swapped in meanwhile).

    Raises:
        FileNotFoundError: `source` holds no answers table.
        RunChangedError: a run was swapped in during every attempt, or a swap was cut short.
    """
    _check_run(source)
    reader = table_reader(source, bigquery_client) if is_bigquery(source) else None
    return read_one_run(source, lambda: {name: _arrow(source, name, reader) for name in READ})


def answers_of(tables: dict[str, pa.Table]) -> tuple[Answer, ...]:
    """The typed answers, each with its claims, in trace id order."""
    claims = defaultdict(list)
    for values in tables["claims"].to_pylist():
        claims[values["trace_id"]].append(from_dict(ClaimRow, values))
    rows = [from_dict(AnswerRow, values) for values in tables["answers"].to_pylist()]
    return tuple(Answer.of(row, claims.get(row.trace_id, ()))
                 for row in sorted(rows, key=lambda r: (r.trace_id, r.audited_at)))


def summary_of(tables: dict[str, pa.Table]) -> Summary:
    """Per route and in total: the rate of complete answers and its interval, the judge's
    calls, tokens and cost (route_rates and costs, the latest pane of each window)."""
    totals = route_totals(latest_panes(tables["route_rates"].to_pylist(),
                                       ("route", "window_start")))
    calls: dict[str, int] = defaultdict(int)
    for row in latest_panes(tables["costs"].to_pylist(),
                            ("route", "judge_model", "window_start")):
        calls[row["route"]] += row["calls"]
    routes = tuple(RouteSummary(
        t.route, t.traces, t.hallucinated, t.con, t.nic, t.incomplete, t.rate, *t.interval,
        calls[t.route], t.input_tokens, t.cached_tokens, t.output_tokens, t.cost_usd)
        for t in totals)
    answers = sum(r.answers for r in routes)
    hallucinated = sum(r.hallucinated for r in routes)
    cost: float | None = 0.0
    for r in routes:
        cost = add_cost(cost, r.cost_usd)
    return Summary(routes, answers, hallucinated, sum(r.incomplete for r in routes),
                   hallucinated / answers if answers else None, *wilson(hallucinated, answers),
                   sum(r.calls for r in routes), sum(r.input_tokens for r in routes),
                   sum(r.output_tokens for r in routes), cost, tables["dead_letters"].num_rows)


def result_of(tables: dict[str, pa.Table], source: str | None) -> AuditResult:
    """The typed result of a run's tables."""
    dead = tuple(from_dict(DeadLetterRow, values)
                 for values in tables["dead_letters"].to_pylist())
    return AuditResult(answers_of(tables), summary_of(tables), dead, tables, source)


def open_run(source: str, bigquery_client=None) -> AuditResult:
    """A run's tables read back as typed results: a run folder, or `bq:PROJECT:DATASET`.

    Raises:
        FileNotFoundError: `source` is not a run folder (no answers table).
        RunChangedError: a run was being swapped into the folder while it was read, at every
            attempt, or its swap was cut short (a ValueError).
        ValueError: a malformed `bq:` name.
    """
    source = str(source)
    return result_of(read_run_tables(source, bigquery_client), source)
