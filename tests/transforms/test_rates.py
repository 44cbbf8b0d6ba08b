"""RatesByRoute under TestPipeline: answer rows in, one rate row per route and UTC day out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rt4chart.schemas.rows import RouteRateRow
from rt4chart.transforms.common.joins import wilson
from rt4chart.transforms.rates import RatesByRoute

from testutil import answer_row

JUNE_1 = datetime(2024, 6, 1, tzinfo=UTC)
JUNE_2 = JUNE_1 + timedelta(days=1)


def _answer(trace_id: str, route: str, day: datetime, label: str | None, n: int,
            **columns) -> object:
    """An answer at noon of `day` whose usage is n times a unit (costs add up exactly)."""
    return answer_row(trace_id=trace_id, route=route, event_time=day + timedelta(hours=12),
                      label=label, input_tokens=100 * n, cached_tokens=10 * n,
                      output_tokens=n, judge_calls=n, cost_usd=0.25 * n, **columns)


ANSWERS = [
    _answer("a-ent", "a", JUNE_1, "ENT", 1),
    _answer("a-nic", "a", JUNE_1, "NIC", 2),
    _answer("a-con", "a", JUNE_1, "CON", 3),
    _answer("a-undecided", "a", JUNE_1, None, 4, status="incomplete", reason="429"),
    # Arrived after its window had closed: written in answers, never in a rate.
    _answer("a-late", "a", JUNE_1, "CON", 5, late=True),
    _answer("a-next-day", "a", JUNE_2, "ENT", 6),
    _answer("b-con", "b", JUNE_1, "CON", 7),
]


def _rate(route: str, day: datetime, counts: tuple[int, int, int, int, int], n: int,
          samples: tuple[str, ...]) -> RouteRateRow:
    """The expected row: counts are (traces, hallucinated, con, nic, incomplete); n the sum of
    the answers' usage units."""
    traces, hallucinated, con, nic, incomplete = counts
    low, high = wilson(hallucinated, traces)
    return RouteRateRow(
        route=route, window_start=day, window_end=day + timedelta(days=1),
        day=day.strftime("%Y-%m-%d"), pane="ON_TIME", pane_index=0, emitted_at=day,
        traces=traces, hallucinated=hallucinated, rate=hallucinated / traces, rate_low=low,
        rate_high=high, con=con, nic=nic, incomplete=incomplete, late=0,
        input_tokens=100 * n, cached_tokens=10 * n, output_tokens=n, cost_usd=0.25 * n,
        sample_trace_ids=samples, suspicious=0,
        # No Traffic records fed: only the answers' own counts; weights 1 (rows before
        # sampling), so the weighted rate is the rate.
        seen=0, sampled=0, always=0, audited=traces + incomplete, skipped_cap=0,
        dead_lettered=0, rate_weighted=hallucinated / traces, rate_weighted_low=low,
        rate_weighted_high=high,
    )


EXPECTED = [
    # Usage counts every answer of the window, the incomplete one too; samples CON first.
    _rate("a", JUNE_1, (3, 2, 1, 1, 1), 1 + 2 + 3 + 4, ("a-con", "a-nic")),
    _rate("a", JUNE_2, (1, 0, 0, 0, 0), 6, ()),
    _rate("b", JUNE_1, (1, 1, 1, 0, 0), 7, ("b-con",)),
]


def _same_but_emitted_at(expected: RouteRateRow, actual: RouteRateRow) -> bool:
    return replace(actual, emitted_at=expected.emitted_at) == expected


def test_rates_by_route_counts_each_route_and_day_once():
    with TestPipeline(runner="FnApiRunner") as p:
        rates = (p | beam.Create(ANSWERS) | RatesByRoute()).rates
        assert_that(rates, equal_to(EXPECTED, equals_fn=_same_but_emitted_at))
        assert_that(rates | "Stamped" >> beam.Map(lambda r: r.emitted_at.tzinfo is not None),
                    equal_to([True] * len(EXPECTED)), label="EmittedAtIsAware")


def test_one_instance_applied_twice_gives_each_application_its_own_outputs():
    # Outputs are values (issue 49): an output set on the instance would hold only the last
    # application's dead letters; here each application keeps its own rates and dead letters.
    rates_of = RatesByRoute()
    # No event time: _Restamp fails on it, so it becomes a dead letter of the second input.
    broken = replace(ANSWERS[-1], trace_id="b-broken", event_time=None)
    with TestPipeline(runner="FnApiRunner") as p:
        first = p | "First" >> beam.Create(ANSWERS) | "RatesFirst" >> rates_of
        second = (p | "Second" >> beam.Create([ANSWERS[-1], broken])
                  | "RatesSecond" >> rates_of)
        assert_that(first.rates, equal_to(EXPECTED, equals_fn=_same_but_emitted_at),
                    label="FirstRates")
        assert_that(first.dead_letters, equal_to([]), label="FirstDeadLetters")
        assert_that(second.rates, equal_to([EXPECTED[-1]], equals_fn=_same_but_emitted_at),
                    label="SecondRates")
        assert_that(second.dead_letters | beam.Map(lambda d: (d.stage, d.trace_id, d.route)),
                    equal_to([("rates", "b-broken", "b")]), label="SecondDeadLetters")
