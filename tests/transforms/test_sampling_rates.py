"""Sampling in the graph's own transforms: the Sample step's traffic, and route_rates' traffic
columns and weighted rate (Horvitz-Thompson, Wilson at Kish's n_eff), with numbers computed
here by hand from the counts."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from rt4chart.schemas.records import NO_ROUTE, Trace, Traffic
from rt4chart.schemas.rows import DeadLetterRow
from rt4chart.transforms.rates import RatesByRoute, dead_letter_traffic
from rt4chart.transforms.sampling import UNSAMPLED, Sample, SamplingConfig

from testutil import answer_row

DAY = datetime(2024, 6, 1, 12, tzinfo=UTC)
DAY_US = int(DAY.timestamp() * 1_000_000)


def _wilson(k: float, n: float, z: float = 1.959964) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _rows(elements) -> list:
    """route_rates of the elements, as pickled rows back in the test's process."""
    return _collected(lambda p: (p | beam.Create(elements, reshuffle=False) | RatesByRoute()).rates)


def _collected(build) -> list:
    """The elements of the PCollection `build(pipeline)` returns (gathered in one list by a
    global combine, read back through assert_that's callback, which runs in this process
    for the FnApiRunner only as a pickled copy: so it writes them to a file)."""
    import pickle
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        path = fh.name

    def keep(items, path=path):
        with open(path, "wb") as out:
            pickle.dump(list(items), out)

    with TestPipeline(runner="FnApiRunner") as p:
        assert_that(build(p), keep)
    with open(path, "rb") as fh:
        return pickle.load(fh)


def test_the_weighted_rate_is_horvitz_thompson_with_wilson_at_kish_n_eff():
    # Route r, rate 0.25: 8 sampled complete answers (weight 4), 2 hallucinated; 3 always
    # answers (weight 1), 2 hallucinated; 1 incomplete one (out of both rates).
    answers = [answer_row(trace_id=f"s{i}", route="r", event_time=DAY, sample_weight=4.0,
                          label="CON" if i < 2 else "ENT") for i in range(8)]
    answers += [answer_row(trace_id=f"a{i}", route="r", event_time=DAY, sample_weight=1.0,
                           label="NIC" if i < 2 else "ENT") for i in range(3)]
    answers.append(answer_row(trace_id="x", route="r", event_time=DAY, sample_weight=4.0,
                              status="incomplete", label=None))
    [row] = _rows(answers)
    sum_w, sum_wh, sum_w2 = 8 * 4 + 3, 2 * 4 + 2, 8 * 16 + 3
    n_eff = sum_w**2 / sum_w2
    assert row.rate == 4 / 11 and row.traces == 11 and row.audited == 12
    assert math.isclose(row.rate_weighted, sum_wh / sum_w)
    low, high = _wilson(sum_wh / sum_w * n_eff, n_eff)
    assert math.isclose(row.rate_weighted_low, low) and math.isclose(row.rate_weighted_high, high)
    # The interval is as wide as n_eff (~9.4) answers make it, not the 35 traces they stand for.
    wide = _wilson(sum_wh / sum_w * 35, 35)
    assert row.rate_weighted_high - row.rate_weighted_low > wide[1] - wide[0]


def test_without_sampling_the_weighted_rate_is_the_rate():
    answers = [answer_row(trace_id=f"t{i}", route="r", event_time=DAY, sample_weight=1.0,
                          label="CON" if i % 3 == 0 else "ENT") for i in range(10)]
    [row] = _rows(answers)
    assert (row.rate_weighted, row.rate_weighted_low, row.rate_weighted_high) == (
        row.rate, row.rate_low, row.rate_high)


def test_traffic_counts_add_up_per_route():
    config = SamplingConfig(sample=("a=0.3", "*=0"), always=("metadata.vip=yes",))
    traces = [Trace(f"t{i}", "a" if i % 2 else "b", DAY_US, "q?", (), "x.",
                    metadata=(("vip", "yes" if i % 5 == 0 else "no"),)) for i in range(400)]
    decided = {t.trace_id: config.decide(t) for t in traces}

    def build(p):
        picked, traffic, _ = p | beam.Create(traces) | Sample(config)
        answers = picked | beam.Map(lambda t: answer_row(
            trace_id=t.trace_id, route=t.route, event_time=DAY, sample_weight=t.sample_weight))
        skipped = p | "Skipped" >> beam.Create([Traffic("a", DAY_US, "skipped_cap")])
        dead = p | "Dead" >> beam.Create([
            DeadLetterRow(stage="validate", reason="r", trace_id=None, route=None, raw="{}",
                          received_at=DAY, dead_letter_id="d1")]) | beam.Map(dead_letter_traffic)
        rates = ((answers, traffic, skipped, dead) | RatesByRoute()).rates
        rates = rates | "Global" >> beam.WindowInto(beam.window.GlobalWindows())
        return (rates, picked | "Ids" >> beam.Map(lambda t: t.trace_id)) | beam.Flatten()

    out = _collected(build)
    picked_ids = [x for x in out if isinstance(x, str)]
    counted = [x for x in out if not isinstance(x, str)]
    assert sorted(picked_ids) == sorted(i for i, d in decided.items() if d != UNSAMPLED)
    by_route = {r.route: r for r in counted}
    assert set(by_route) == {"a", "b", NO_ROUTE}
    for route in ("a", "b"):
        row = by_route[route]
        mine = [t for t in traces if t.route == route]
        unsampled = sum(decided[t.trace_id] == UNSAMPLED for t in mine)
        assert row.seen == len(mine) == row.sampled + row.always + unsampled
        assert row.always == sum(decided[t.trace_id] == "always" for t in mine) > 0
        assert row.audited == row.sampled + row.always
    assert by_route["b"].sampled == 0  # rate 0: only the rule's traces
    assert by_route["a"].skipped_cap == 1
    assert by_route[NO_ROUTE].dead_lettered == 1 and by_route[NO_ROUTE].seen == 0
