"""The spend cap's ledger, reservation and gate (transforms/spend_cap.py)."""

from __future__ import annotations

import pytest

from rt4chart.pipeline.run.cap_rounds import SAFETY, fits, learned_scale, remaining_budget
from rt4chart.pipeline.run.config import StagesConfig
from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.common.trace_reservation import reserve_usd
from rt4chart.transforms.confirm import ConfirmConfig
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.judges.openai.pricing import Prices
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.spend_cap import JOB, CapConfig, CapLedger, cap_prices, parse_caps
from rt4chart.transforms.verify_local import VerifyLocalConfig

PRICES = Prices(input=1.0, cached=0.5, output=4.0)  # USD per million tokens
CONTEXT = " ".join(f"Fact number {i} holds for the plan." for i in range(8))


def prepared(answer_sentences: int = 2, trace_id: str = "t", route: str = "r"):
    answer = " ".join(f"The plan has feature {i}." for i in range(answer_sentences))
    trace = Trace(trace_id, route, 0, "What does the plan have?",
                  (Document("d", CONTEXT),), answer)
    return prepare(trace, SegmentConfig(2, 1))


def stages(**local) -> StagesConfig:
    return StagesConfig(JudgeSpec(), verify_local=VerifyLocalConfig(**local))


def test_parse_caps_bare_and_per_route():
    assert parse_caps(["20", "checkout=5"]) == {JOB: 20.0, "checkout": 5.0}
    assert parse_caps(["*=3"]) == {JOB: 3.0}
    for bad in (["x"], ["-1"], ["a=1", "a=2"], ["nan"]):
        with pytest.raises(ValueError):
            parse_caps(bad)


def test_batch_and_hourly_caps_are_exclusive():
    with pytest.raises(ValueError, match="not both"):
        CapConfig(max_usd=("1",), max_usd_per_hour=("1",))


def test_reservation_grows_with_the_trace_and_the_options():
    small, large = prepared(1), prepared(6)
    base = reserve_usd(small, stages(), PRICES)
    assert base > 0
    assert reserve_usd(large, stages(), PRICES) > base
    # more claims per local call: fewer calls, less prompt repeated
    assert reserve_usd(large, stages(claims_per_call=8), PRICES) < reserve_usd(
        large, stages(), PRICES)
    confirm = StagesConfig(JudgeSpec(), confirm=ConfirmConfig(confirm_ent=True))
    assert reserve_usd(small, confirm, PRICES) > base
    # A confirming judge makes the same calls: they are reserved too.
    second = StagesConfig(JudgeSpec(), confirm=ConfirmConfig(confirm_judge="offline"))
    assert reserve_usd(small, second, PRICES) == reserve_usd(small, confirm, PRICES)
    assert reserve_usd(small, stages(), PRICES.scaled(0.5)) == pytest.approx(base / 2)
    # ... at the second judge's own prices when it has them: ten times the price, ten times
    # the confirm calls' part.
    confirm_part = reserve_usd(small, confirm, PRICES) - base
    assert reserve_usd(small, second, PRICES, PRICES.scaled(10)) == pytest.approx(
        base + 10 * confirm_part)


def test_a_cap_with_an_unpriced_second_judge_is_refused():
    """A cap never runs uncapped: a confirming judge without a price is a usage error."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from rt4chart.pipeline.run.jobs import prepare_caps

    priced = JudgeSpec.of("openai", {"model": "m", "price_input": "1", "price_output": "4"})
    caps = CapConfig(max_usd=("5",))
    for second, why in (("offline", "reports no USD cost"),
                        ("openai", "no price for model")):
        config = StagesConfig(priced, caps=caps, confirm=ConfirmConfig(
            confirm_judge=second, confirm_judge_option=(("model=unknown-model",)
                                                        if second == "openai" else ())))
        with pytest.raises(ValueError, match=f"--confirm-judge: .*{why}"):
            prepare_caps(config, PipelineOptions([]))
    config = StagesConfig(priced, caps=caps, confirm=ConfirmConfig(
        confirm_judge="openai", confirm_judge_option=("model=m2", "price_input=2",
                                                      "price_output=8")))
    ready = prepare_caps(config, PipelineOptions([])).caps
    assert (ready.confirm_prices.input, ready.confirm_prices.output) == (2.0, 8.0)


def test_ledger_admits_while_reservations_fit_then_refuses_with_the_spend():
    ledger = CapLedger({JOB: 1.0})
    assert ledger.admit("a", "r", 0.4).admitted
    assert ledger.admit("b", "r", 0.4).admitted
    refused = ledger.admit("c", "r", 0.4)
    assert not refused.admitted
    assert (refused.cap_route, refused.cap_usd) == (JOB, 1.0)
    assert refused.spent_usd == pytest.approx(0.8)
    assert ledger.admit("d", "r", 0.2).admitted  # a smaller trace still fits exactly


def test_settle_releases_the_reservation_for_the_actual_cost():
    ledger = CapLedger({JOB: 1.0})
    ledger.admit("a", "r", 0.9)
    assert not ledger.admit("b", "r", 0.5).admitted
    ledger.settle("a", 0.3)
    assert ledger.spent() == pytest.approx(0.3)
    assert ledger.admit("b", "r", 0.5).admitted
    ledger.settle("b", None)  # unknown cost: the reservation stays
    assert ledger.spent() == pytest.approx(0.8)


def test_route_cap_and_job_cap_both_hold():
    ledger = CapLedger({"checkout": 0.5, JOB: 1.0})
    assert ledger.admit("a", "checkout", 0.4).admitted
    refused = ledger.admit("b", "checkout", 0.4)
    assert not refused.admitted and refused.cap_route == "checkout"
    assert ledger.admit("c", "search", 0.5).admitted  # other routes: only the job's cap
    job = ledger.admit("d", "search", 0.2)
    assert not job.admitted and job.cap_route == JOB


def test_each_process_holds_its_share():
    ledger = CapLedger({JOB: 1.0}, share=4)
    assert ledger.admit("a", "r", 0.25).admitted
    refused = ledger.admit("b", "r", 0.01)
    assert not refused.admitted and refused.cap_usd == pytest.approx(0.25)


def test_hourly_ledger_rolls_over_with_the_clock():
    now = [3600.0 * 100 + 10]
    ledger = CapLedger({JOB: 1.0}, hourly=True, clock=lambda: now[0])
    assert ledger.admit("a", "r", 0.8).admitted
    assert not ledger.admit("b", "r", 0.8).admitted
    now[0] += 3599 - 10  # the same UTC hour
    assert not ledger.admit("b", "r", 0.8).admitted
    now[0] += 1  # the next hour: a fresh budget
    assert ledger.admit("b", "r", 0.8).admitted
    ledger.settle("a", 0.1)  # finished after the hour ended: does not touch this hour
    assert ledger.spent() == pytest.approx(0.8)


def test_hourly_reservations_learn_the_ratio_actual_over_reserved():
    ledger = CapLedger({JOB: 100.0}, hourly=True, clock=lambda: 0.0)
    for i in range(5):
        ledger.admit(str(i), "r", 1.0)
        ledger.settle(str(i), 0.6)
    assert ledger.ratio == pytest.approx(0.6)
    assert ledger.admit("x", "r", 1.0).reservation == pytest.approx(0.6)
    for i in range(5, 10):
        ledger.admit(str(i), "r", 1.0)
        ledger.settle(str(i), 0.0)
    assert ledger.ratio == 0.5  # never below MIN_RATIO


def test_a_cap_needs_a_priced_model():
    with pytest.raises(ValueError, match="no price for model 'my-deployment'"):
        cap_prices("openai", {"model": "my-deployment"})
    with pytest.raises(ValueError, match="reports no USD cost"):
        cap_prices("offline", {})
    priced = cap_prices("openai", {"model": "m", "price_input": "1", "price_output": "4"})
    assert (priced.input, priced.output) == (1.0, 4.0)


class _Cost:
    def __init__(self, route, cost_usd):
        self.route, self.cost_usd = route, cost_usd


class _Answer:
    def __init__(self, trace_id, cost_usd):
        self.trace_id, self.cost_usd = trace_id, cost_usd


def test_rounds_budget_from_the_costs_and_what_fits():
    caps = {JOB: 1.0, "checkout": 0.3}
    budget = remaining_budget(caps, [_Cost("checkout", 0.2), _Cost("search", 0.5),
                                     _Cost("search", None)])
    assert budget == pytest.approx({JOB: 0.3, "checkout": 0.1})
    assert fits(0.3, "search", budget)
    assert not fits(0.2, "checkout", budget)
    assert not fits(0.3, "search", budget, share=2)


def test_later_rounds_learn_the_reservations_scale_with_a_margin():
    reserved = {"a": 1.0, "b": 2.0}
    answers = [_Answer("a", 0.1), _Answer("b", 0.4), _Answer("c", 9.0), _Answer("a", None)]
    assert learned_scale(reserved, answers, 1.0) == pytest.approx(SAFETY * 0.2)
    assert learned_scale({}, answers, 0.7) == 0.7  # nothing known: as it was
    assert learned_scale({"a": 0.1}, [_Answer("a", 0.1)], 1.0) == 1.0  # never above 1
