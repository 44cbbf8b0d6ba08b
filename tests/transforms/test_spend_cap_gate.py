"""The spend cap's gate in a pipeline (batch) and its hourly ledger in a stream's DoFn."""

from __future__ import annotations

import dataclasses

import apache_beam as beam
import orjson
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that

from rt4chart.pipeline.run.config import StagesConfig
from rt4chart.schemas.records import Document, Trace
from rt4chart.schemas.rows import SkippedRow
from rt4chart.transforms.common.trace_reservation import reserve_usd
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.pricing import Prices
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.spend_cap import (
    PER_HOUR,
    CapConfig,
    CapGate,
    CapGateFn,
    SettleFn,
    with_ledger_id,
)

PRICES = Prices(input=1.0, cached=0.5, output=4.0)
STAGES = StagesConfig(JudgeSpec())


def prepared(i: int):
    trace = Trace(f"t{i:02d}", "r", 1_700_000_000_000_000, "What is covered?",
                  (Document("d", "The plan covers travel. The plan excludes pets."),),
                  f"The plan covers item {i}.")
    return prepare(trace, SegmentConfig(2, 1))


def test_gate_admits_what_the_cap_holds_and_skips_the_rest_with_the_reason():
    traces = [prepared(i) for i in range(10)]
    each = reserve_usd(traces[0], STAGES, PRICES)
    cap = with_ledger_id(CapConfig(max_usd=(str(each * 3.5),)))

    def check(pair):
        started, skipped = pair
        assert len(started) == 3 and len(skipped) == 7
        ids = {p.trace.trace_id for p in started} | {s.trace_id for s in skipped}
        assert ids == {p.trace.trace_id for p in traces}  # nothing dropped
        for row in skipped:
            assert isinstance(row, SkippedRow) and row.reason == "max_usd"
            assert row.spent_usd + row.reservation_usd > row.cap_usd
            assert orjson.loads(row.raw)["trace_id"] == row.trace_id  # redo-able as received
            assert "max_usd" in row.detail

    with TestPipeline() as p:
        gated = p | beam.Create(traces) | CapGate(cap, STAGES, PRICES)
        started, skipped = gated.admitted, gated.skipped
        both = ((started | "K1" >> beam.Map(lambda x: (0, ("s", x))),
                 skipped | "K2" >> beam.Map(lambda x: (0, ("k", x))))
                | beam.Flatten() | beam.GroupByKey()
                | beam.Map(lambda kv: ([x for t, x in kv[1] if t == "s"],
                                       [x for t, x in kv[1] if t == "k"])))
        assert_that(both, lambda got: check(got[0]))


def test_a_cap_below_one_reservation_starts_nothing():
    trace = prepared(0)
    cap = with_ledger_id(CapConfig(max_usd=(str(reserve_usd(trace, STAGES, PRICES) / 2),)))
    fn = CapGateFn(cap, STAGES, PRICES)
    fn.setup()
    (out,) = list(fn.process(trace))
    assert isinstance(out, beam.pvalue.TaggedOutput) and out.tag == "skipped"
    assert out.value.spent_usd == 0.0 and out.value.trace_id == trace.trace.trace_id


class _Answer:
    def __init__(self, trace_id, cost_usd):
        self.trace_id, self.cost_usd = trace_id, cost_usd


def test_stream_skips_after_the_hours_cap_and_admits_again_next_hour():
    now = [3600.0 * 500 + 5]
    each = reserve_usd(prepared(0), STAGES, PRICES)
    cap = with_ledger_id(CapConfig(max_usd_per_hour=(str(each * 2.5),)))
    gate = CapGateFn(cap, STAGES, PRICES, clock=lambda: now[0])
    settle = SettleFn(cap, clock=lambda: now[0])
    gate.setup()
    settle.setup()

    alerts = []

    def run(i):
        out, *alert = list(gate.process(prepared(i)))
        alerts.extend(a.value for a in alert if a.tag == "alerts")
        return out

    first = [run(i) for i in range(4)]
    (alert,) = alerts  # once per hour and cap, not per skipped trace
    assert alert.rule == PER_HOUR and alert.route == "*"
    assert alert.window_start.timestamp() == 3600.0 * 500
    assert alert.rate == pytest.approx(each * 2) and alert.threshold == pytest.approx(each * 2.5)
    assert [isinstance(o, beam.pvalue.TaggedOutput) for o in first] == [False, False, True, True]
    assert first[2].value.reason == PER_HOUR
    assert first[2].value.skipped_at.timestamp() == now[0]
    # a finished trace that cost less than reserved frees budget within the hour
    list(settle.process(_Answer("t00", each * 0.2)))
    assert not isinstance(run(4), beam.pvalue.TaggedOutput)
    assert isinstance(run(5), beam.pvalue.TaggedOutput)
    now[0] += 3600  # next UTC hour
    assert not isinstance(run(6), beam.pvalue.TaggedOutput)
    assert not isinstance(run(7), beam.pvalue.TaggedOutput)
    assert isinstance(run(8), beam.pvalue.TaggedOutput) and len(alerts) == 2


def test_one_ledger_per_job_in_a_process():
    cap = with_ledger_id(CapConfig(max_usd=("1",)))
    a, b = CapGateFn(cap, STAGES, PRICES), CapGateFn(cap, STAGES, PRICES)
    other = CapGateFn(with_ledger_id(dataclasses.replace(cap, ledger_id="")), STAGES, PRICES)
    for fn in (a, b, other):
        fn.setup()
    assert a._ledger is b._ledger and a._ledger is not other._ledger
