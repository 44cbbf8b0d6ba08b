"""The end-of-run summary, read back from the written tables."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from rt4chart.pipeline.results.judge_figures import NO_TASK, cached_share_by_task
from rt4chart.pipeline.storage.table_files import table_files
from rt4chart.schemas.columns import from_dict
from rt4chart.schemas.rows import AnswerRow, CostRow, DeadLetterRow, usage_columns, usage_of
from rt4chart.schemas.tables import TABLES, arrow_schema
from rt4chart.schemas.usage import Usage
from rt4chart.transforms.common.redact import NO_EXTRA_KEYS, Redactor, redact_configured


def read_parquet(path: str) -> pa.Table:
    """One Parquet file, local or remote, without a Python file object in pyarrow's hands.

    Read through a Python file, pyarrow pre-buffers on its IO threads, and a buffer such a
    thread releases after the interpreter began to exit needs the GIL it can no longer take:
    the process aborted now and then at exit ("terminate called without an active exception",
    exit code 134). A local file is read by path; a remote one is copied into memory that
    pyarrow owns.
    """
    if FileSystems.get_scheme(path) is None:
        return pq.read_table(path)
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as fh:
        data = fh.read()
    buffer = pa.allocate_buffer(len(data))
    pa.FixedSizeBufferWriter(buffer).write(data)
    return pq.read_table(pa.BufferReader(buffer))


def read_table(out: str, name: str) -> pa.Table:
    """All Parquet files of one output table, as one Arrow table (empty if none); in either
    layout (OUT/<table>/dt=YYYY-MM-DD/, or flat, see tablefiles.py)."""
    schema = arrow_schema(TABLES[name])
    tables = [read_parquet(path) for path in table_files(out, name)]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables).cast(schema)


def read_rows(out: str, name: str) -> list:
    """All rows of one output table, as its row class (`rt4chart.schemas.rows`)."""
    row_type = TABLES[name].row_type
    return [from_dict(row_type, values) for values in read_table(out, name).to_pylist()]


@dataclass
class Summary:
    traces: int = 0
    hallucinated: int = 0
    con: int = 0
    nic: int = 0
    incomplete: int = 0
    claims: int = 0
    dead_letters: int = 0
    dead_letter_reasons: dict[str, int] = field(default_factory=dict)
    judge_calls: int = 0
    reused_calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None: a judge model with no price
    seconds: float = 0.0
    # Cached share of input tokens, per judge stage and per task type; --prune-windows' calls
    # saved (pipeline/results/judge_figures.py).
    cached_share_by_stage: dict[str, float | None] = field(default_factory=dict)
    cached_share_by_task: dict[str, float | None] = field(default_factory=dict)
    pruned_calls: int = 0
    # Whole span traces that are not queries (no LLM, retriever or reranker span: a LlamaIndex
    # app's document splitting or embedding), skipped and counted, not dead letters.
    not_queries: int = 0
    # The most common reason answers were incomplete (redacted), for the run's final message.
    incomplete_reason: str | None = None
    # Answers whose retrieval returned nothing (contexts: []), audited: a figure of their own
    # (their checkable claims are NIC, "nothing was retrieved"), flagged ones among them.
    empty_retrievals: int = 0
    empty_retrievals_flagged: int = 0
    # Traces a spend cap did not let start (the skipped table), and the cap: {reason, cap_usd
    # by route or *, spent_usd, rounds} (None without a cap; pipeline/run/jobs.py sets it).
    skipped: int = 0
    spend_cap: dict | None = None
    # Traffic (transforms/sampling.py), summed over route_rates: seen - sampled - always were
    # left out by sampling (`unsampled`).
    seen: int = 0
    sampled: int = 0
    always: int = 0
    audited: int = 0
    skipped_cap: int = 0
    dead_lettered: int = 0
    # Calls, tokens and USD per judge model (the costs table's rows summed): a confirming
    # judge (--confirm-judge) has its own entry.
    by_judge_model: dict[str, dict] = field(default_factory=dict)

    @property
    def unsampled(self) -> int:
        return self.seen - self.sampled - self.always

    @property
    def traces_per_second(self) -> float:
        return self.traces / self.seconds if self.seconds > 0 else 0.0

    @property
    def reuse_rate(self) -> float:
        total = self.judge_calls + self.reused_calls
        return self.reused_calls / total if total else 0.0

    def _reused(self) -> str:
        if not self.reused_calls:
            return ""
        return f" (+{self.reused_calls} reused: {self.reuse_rate:.1%} of the results)"

    def lines(self) -> list[str]:
        done = self.traces - self.incomplete
        rate = f"{self.hallucinated / done:.1%}" if done else "n/a"
        out = [
            f"audited {self.traces} answers ({self.claims} claims) in {self.seconds:.1f} s "
            f"({self.traces_per_second:.2f} answers/s)",
            f"hallucinated: {self.hallucinated} of {done} complete answers ({rate}); "
            f"CON {self.con}, NIC {self.nic}; incomplete: {self.incomplete}",
            f"judge: {self.judge_calls} calls{self._reused()}, {self.input_tokens} input "
            f"({self.cached_tokens} cached) / {self.output_tokens} output tokens, "
            + usd(self.cost_usd),
            f"dead letters: {self.dead_letters}",
        ]
        if len(self.by_judge_model) > 1:  # a confirming judge: what each judge did
            out.append("by judge model: " + "; ".join(
                f"{m}: {u['judge_calls']} calls, {usd(u['cost_usd'])}"
                for m, u in self.by_judge_model.items()))
        if self.unsampled or self.always:
            out.append(f"sampling: {self.seen} traces seen, {self.sampled} sampled, "
                       f"{self.always} always audited, {self.audited} audited; "
                       f"{self.unsampled} left out by sampling")
        out += caching_lines(self)
        if self.empty_retrievals:
            out.append(f"empty retrievals: {self.empty_retrievals} answer(s) whose retrieval "
                       f"returned nothing, {self.empty_retrievals_flagged} flagged (a claim "
                       "with nothing retrieved to check it against is NIC)")
        if self.not_queries:
            out.append(f"skipped: {self.not_queries} span trace(s) that are not queries (no "
                       "LLM, retriever or reranker span: e.g. document splitting, embedding)")
        if self.incomplete:
            out.append(f"incomplete answers kept for a redo: {self.incomplete} "
                       "(rt4chart audit --redo OUT_DIR)")
        if self.spend_cap is not None:
            cap = self.spend_cap
            out.append(f"spend cap {cap['reason']} {cap['cap_usd']}: spent "
                       f"{usd(cap['spent_usd'])}; "
                       + (f"reached, {self.skipped} trace(s) not audited, in the skipped "
                          "table (rt4chart audit --redo OUT_DIR)" if self.skipped
                          else "not reached"))
        for reason, n in sorted(self.dead_letter_reasons.items(), key=lambda kv: -kv[1])[:5]:
            out.append(f"  {n} x {reason}")
        return out


def usd(cost: float | None) -> str:
    """A cost for people: "$0.0123", or "cost unknown" for a model with no price."""
    return "cost unknown" if cost is None else f"${cost:.4f}"


def summarise(out: str, seconds: float, keys: Redactor = NO_EXTRA_KEYS) -> Summary:
    """The run's summary from its tables under `out`; reasons redacted (of `keys` too: the
    run's key variables)."""
    answers: list[AnswerRow] = read_rows(out, "answers")
    costs: list[CostRow] = read_rows(out, "costs")
    dead: list[DeadLetterRow] = read_rows(out, "dead_letters")
    usage = sum((usage_of(c) for c in costs), Usage())
    complete = [a for a in answers if a.status == "ok"]
    dead = [d for d in dead if d.stage != "judge"]  # incomplete answers, counted apart
    return Summary(
        traces=len(answers),
        hallucinated=sum(bool(a.hallucinated) for a in complete),
        con=sum(a.label == "CON" for a in complete),
        nic=sum(a.label == "NIC" for a in complete),
        incomplete=len(answers) - len(complete),
        claims=sum(a.n_claims for a in answers),
        dead_letters=len(dead),
        # Redacted, then cut: a key cut in two would no longer be recognised.
        dead_letter_reasons=dict(Counter(
            f"{d.stage}: {(redact_configured(d.reason, keys) or '')[:80]}" for d in dead)),
        **usage_columns(Summary, usage),
        seconds=seconds,
        cached_share_by_task=cached_share_by_task(answers),
        incomplete_reason=most_common_reason(answers, keys),
        empty_retrievals=sum(bool(a.empty_retrieval) for a in answers),
        empty_retrievals_flagged=sum(bool(a.empty_retrieval and a.hallucinated)
                                     for a in answers),
        skipped=len(read_rows(out, "skipped")),
        by_judge_model=by_judge_model(costs),
        **traffic_totals(read_table(out, "route_rates").to_pylist()),
    )


def by_judge_model(costs: list[CostRow]) -> dict[str, dict]:
    """{judge model: its usage columns} over the costs rows (a model's rows summed)."""
    per: dict[str, Usage] = {}
    for row in costs:
        per[row.judge_model] = per.get(row.judge_model, Usage()) + usage_of(row)
    return {m: usage_columns(Summary, u) for m, u in sorted(per.items())}


TRAFFIC = ("seen", "sampled", "always", "audited", "skipped_cap", "dead_lettered")


def traffic_totals(rates: list[dict]) -> dict[str, int]:
    """The run's traffic: route_rates' traffic columns summed over the last pane of each route
    and window (panes accumulate; a batch run has one), NULL (rows before sampling) as 0."""
    last: dict[tuple, dict] = {}
    for row in rates:
        key = (row["route"], row["window_start"], row["window_end"])
        if key not in last or row["pane_index"] > last[key]["pane_index"]:
            last[key] = row
    return {k: sum(r[k] or 0 for r in last.values()) for k in TRAFFIC}


def most_common_reason(answers: list[AnswerRow],
                       keys: Redactor = NO_EXTRA_KEYS) -> str | None:
    """The reason most incomplete answers give (redacted, `keys` too), None when none is
    incomplete."""
    reasons = Counter(redact_configured(a.reason, keys) for a in answers
                      if a.status != "ok" and a.reason)
    return reasons.most_common(1)[0][0] if reasons else None


def caching_lines(summary: Summary) -> list[str]:
    """The cached share of input tokens per stage and task type, and the calls pruned.

    Only what says something: no line when no input token was cached (the summary's token
    line says 0 cached), and no task line when the traces name no task (one "(none)" group
    would only repeat the total)."""
    out = []
    for what, shares in (("stage", summary.cached_share_by_stage),
                         ("task", summary.cached_share_by_task)):
        known = {k: v for k, v in shares.items() if v is not None}
        if what == "task" and set(known) <= {NO_TASK}:
            continue
        if summary.input_tokens and summary.cached_tokens and any(known.values()):
            out.append(f"cached input tokens by {what}: "
                       + ", ".join(f"{k} {v:.0%}" for k, v in known.items()))
    if summary.pruned_calls:
        out.append(f"--prune-windows: {summary.pruned_calls} local calls saved")
    return out
