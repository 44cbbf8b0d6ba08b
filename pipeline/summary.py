"""The end-of-run summary, read back from the written tables."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from rt4chart.schemas.tables import TABLES, arrow_schema


def read_table(out: str, name: str) -> pa.Table:
    """All Parquet files of one output table, as one Arrow table (empty if none)."""
    pattern = FileSystems.join(out.rstrip("/"), name, "*.parquet")
    paths = [m.path for r in FileSystems.match([pattern]) for m in r.metadata_list]
    schema = arrow_schema(TABLES[name])
    tables = []
    for path in sorted(paths):
        with FileSystems.open(path) as fh:
            tables.append(pq.read_table(fh))
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables).cast(schema)


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
    cost_usd: float = 0.0
    seconds: float = 0.0

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
            f"${self.cost_usd:.4f}",
            f"dead letters: {self.dead_letters}",
        ]
        if self.incomplete:
            out.append(f"incomplete answers kept for a redo: {self.incomplete} "
                       "(rt4chart audit --redo OUT_DIR)")
        for reason, n in sorted(self.dead_letter_reasons.items(), key=lambda kv: -kv[1])[:5]:
            out.append(f"  {n} x {reason}")
        return out


def summarise(out: str, seconds: float) -> Summary:
    answers = read_table(out, "answers").to_pylist()
    costs = read_table(out, "costs").to_pylist()
    dead = read_table(out, "dead_letters").to_pylist()
    s = Summary(seconds=seconds)
    s.traces = len(answers)
    s.incomplete = sum(a["status"] != "ok" for a in answers)
    complete = [a for a in answers if a["status"] == "ok"]
    s.hallucinated = sum(bool(a["hallucinated"]) for a in complete)
    s.con = sum(a["label"] == "CON" for a in complete)
    s.nic = sum(a["label"] == "NIC" for a in complete)
    s.claims = sum(a["n_claims"] for a in answers)
    dead = [d for d in dead if d["stage"] != "judge"]  # incomplete answers, counted above
    s.dead_letters = len(dead)
    s.dead_letter_reasons = dict(Counter(f"{d['stage']}: {d['reason'][:80]}" for d in dead))
    s.judge_calls = sum(c["calls"] for c in costs)
    s.reused_calls = sum(c["reused_calls"] for c in costs)
    s.input_tokens = sum(c["input_tokens"] for c in costs)
    s.cached_tokens = sum(c["cached_tokens"] for c in costs)
    s.output_tokens = sum(c["output_tokens"] for c in costs)
    s.cost_usd = sum(c["cost_usd"] for c in costs)
    return s
