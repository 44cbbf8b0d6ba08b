"""What judge calls cost (`Usage`: calls, tokens, USD, reused results), its sums, which stay
within an INT64 column and are unknown when any part is, and a stage result's usage attributed
to its trace (`UsageRecord`). Frozen dataclasses, no Beam, as `records.py`'s."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    """What judge calls cost: summed over calls."""

    calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None: unknown (a model with no price), in every sum too
    reused: int = 0  # results taken from an earlier run (`--reuse`): no call, no cost

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            add_count(self.calls, other.calls),
            add_count(self.input_tokens, other.input_tokens),
            add_count(self.cached_tokens, other.cached_tokens),
            add_count(self.output_tokens, other.output_tokens),
            add_cost(self.cost_usd, other.cost_usd),
            add_count(self.reused, other.reused),
        )


# The largest count an INT64 column (Parquet, BigQuery, Beam's counters) holds.
MAX_COUNT = (1 << 63) - 1


def add_count(a: int, b: int) -> int:
    """A sum of counts that stays within MAX_COUNT (and so within every INT64 column): a sum
    that would pass it stays at it rather than failing the write of every table."""
    return min(a + b, MAX_COUNT)


def add_cost(a: float | None, b: float | None) -> float | None:
    """A sum of costs: unknown (None) when either is."""
    return None if a is None or b is None else a + b


def total_cost(costs: Iterable[float | None]) -> float | None:
    """The sum of costs (0 for none), unknown (None) when any is."""
    total: float | None = 0.0
    for cost in costs:
        total = add_cost(total, cost)
    return total


@dataclass(frozen=True)
class UsageRecord:
    """One judge stage result's usage, attributed to a trace, route, day and judge model."""

    trace_id: str
    route: str
    day: str
    judge_model: str
    usage: Usage
    event_time_us: int = 0
    late: bool = False
