"""Per-route, per-day hallucination rates and cost tables."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import apache_beam as beam

from rt4chart.schemas.records import Usage, UsageRecord
from rt4chart.transforms.joins import wilson


@dataclass(frozen=True)
class RouteCounts:
    """Counts of one route and day; incomplete answers are counted apart from the rate."""

    traces: int = 0
    hallucinated: int = 0
    con: int = 0
    nic: int = 0
    incomplete: int = 0
    usage: Usage = Usage()

    def merge(self, other: RouteCounts) -> RouteCounts:
        return RouteCounts(
            self.traces + other.traces, self.hallucinated + other.hallucinated,
            self.con + other.con, self.nic + other.nic, self.incomplete + other.incomplete,
            self.usage + other.usage,
        )


def counts_of(answer: dict) -> RouteCounts:
    """One answer row as counts."""
    usage = Usage(answer["judge_calls"], answer["input_tokens"], answer["cached_tokens"],
                  answer["output_tokens"], answer["cost_usd"])
    if answer["status"] != "ok":
        return RouteCounts(incomplete=1, usage=usage)
    label = answer["label"]
    return RouteCounts(1, int(label != "ENT"), int(label == "CON"), int(label == "NIC"), 0, usage)


class RouteCountsFn(beam.CombineFn):
    """Sums RouteCounts; mergeable, so it runs with combiner lifting."""

    def create_accumulator(self) -> RouteCounts:
        return RouteCounts()

    def add_input(self, acc: RouteCounts, answer: dict) -> RouteCounts:
        return acc.merge(counts_of(answer))

    def merge_accumulators(self, accs) -> RouteCounts:
        return functools.reduce(RouteCounts.merge, accs, RouteCounts())

    def extract_output(self, acc: RouteCounts) -> RouteCounts:
        return replace(acc)


def rate_row(route: str, day: str, c: RouteCounts) -> dict:
    low, high = wilson(c.hallucinated, c.traces)
    return {
        "route": route, "day": day, "traces": c.traces, "hallucinated": c.hallucinated,
        "rate": c.hallucinated / c.traces if c.traces else None, "rate_low": low,
        "rate_high": high, "con": c.con, "nic": c.nic, "incomplete": c.incomplete,
        "input_tokens": c.usage.input_tokens, "cached_tokens": c.usage.cached_tokens,
        "output_tokens": c.usage.output_tokens, "cost_usd": c.usage.cost_usd,
    }


class RatesByRoute(beam.PTransform):
    """Answer rows -> one rate row per (route, UTC day of the event time)."""

    def expand(self, answers: beam.PCollection[dict]) -> beam.PCollection[dict]:
        return (
            answers
            | "KeyRouteDay" >> beam.Map(
                lambda a: ((a["route"], a["event_time"].strftime("%Y-%m-%d")), a))
            | "Count" >> beam.CombinePerKey(RouteCountsFn())
            | "Row" >> beam.MapTuple(lambda key, counts: rate_row(key[0], key[1], counts))
        )


def cost_row(key: tuple[str, str, str], usage: Usage) -> dict:
    route, model, day = key
    return {
        "route": route, "judge_model": model, "day": day, "calls": usage.calls,
        "input_tokens": usage.input_tokens, "cached_tokens": usage.cached_tokens,
        "output_tokens": usage.output_tokens, "cost_usd": usage.cost_usd,
    }


class CostsByRoute(beam.PTransform):
    """Usage records of every judge call -> one cost row per (route, judge model, day)."""

    def expand(self, usage: beam.PCollection[UsageRecord]) -> beam.PCollection[dict]:
        return (
            usage
            | "KeyRouteModelDay" >> beam.Map(lambda u: ((u.route, u.judge_model, u.day), u.usage))
            | "Sum" >> beam.CombinePerKey(lambda usages: sum(usages, Usage()))
            | "Row" >> beam.MapTuple(cost_row)
        )
