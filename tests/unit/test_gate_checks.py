"""The gate's arithmetic, limits parser and JUnit text, without a run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.pipeline.cli.gate import GateConfig, route_limit
from rt4chart.pipeline.gate.checks import Check, check_routes, latest, paired_rates, rates
from rt4chart.pipeline.gate.junit import junit_tree, xml_text

DAY = datetime(2024, 6, 1, tzinfo=UTC)


def row(tid: str, route: str, label: str | None, status: str = "ok", minutes: int = 0) -> dict:
    return {"trace_id": tid, "route": route, "label": label, "status": status,
            "audited_at": DAY + timedelta(minutes=minutes)}


@given(st.text(min_size=1), st.integers(min_value=0, max_value=1000))
def test_route_limit_splits_at_the_last_equals_sign(route, permille):
    rate = permille / 1000
    assert route_limit(f"{route}={rate!r}") == (route, rate)


@given(st.text().filter(lambda t: "=" not in t))
def test_route_limit_without_equals_is_refused(text):
    with pytest.raises(ValueError, match="ROUTE=R"):
        route_limit(text)


@pytest.mark.parametrize("text", ["r=1.01", "r=-0.1", "r=nan", "r=x", "=0.1"])
def test_route_limit_refuses_a_rate_out_of_range(text):
    with pytest.raises(ValueError):
        route_limit(text)


labels = st.sampled_from(["ENT", "CON", "NIC", None])


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), labels, st.booleans()), max_size=30))
def test_rates_count_complete_answers_only(answers):
    rows = [row(f"t{i}", route, label, "ok" if ok else "incomplete")
            for i, (route, label, ok) in enumerate(answers)]
    got = rates(rows)
    for route in got:
        mine = [r for r in rows if r["route"] == route]
        complete = [r for r in mine if r["status"] == "ok" and r["label"] is not None]
        assert got[route].answers == len(complete)
        assert got[route].hallucinated == sum(r["label"] in ("CON", "NIC") for r in complete)
        assert got[route].incomplete == len(mine) - len(complete)
        if got[route].rate is not None:
            assert got[route].low <= got[route].rate <= got[route].high


def test_the_latest_answer_of_a_trace_counts():
    rows = [row("t", "a", "CON", minutes=0), row("t", "a", "ENT", minutes=5)]
    assert latest(rows)["t"]["label"] == "ENT" and rates(rows)["a"].hallucinated == 0


def test_pairing_uses_traces_complete_in_both_runs():
    now = [row("1", "a", "CON"), row("2", "a", "ENT"), row("3", "a", "CON"),
           row("4", "a", None, "incomplete")]
    before = [row("1", "x", "ENT"), row("2", "a", "ENT"), row("4", "a", "ENT"),
              row("9", "a", "CON")]
    pair = paired_rates(now, before)["a"]
    assert pair.paired == 2  # 1 (moved route: counted under the run's) and 2
    assert (pair.current.answers, pair.current.hallucinated) == (2, 1)
    assert (pair.baseline.route, pair.baseline.answers, pair.baseline.hallucinated) == ("a", 2, 0)


def test_no_pair_compares_the_runs_own_answers():
    pair = paired_rates([row("1", "a", "CON")], [row("2", "a", "ENT"), row("3", "b", "CON")])
    assert pair["a"].paired == 0 and pair["a"].baseline.answers == 1


def test_checks_fail_for_lack_of_data():
    config = GateConfig(run="r", max_rate=0.2, route=("gone=0.5",), min_answers=2)
    checks = check_routes(config, rates([row("1", "a", None, "incomplete")]), None, "*")
    failed = {(c.route, c.limit): c.detail for c in checks if not c.ok}
    assert failed == {("*", "answers"): "the run has no complete answer",
                      ("a", "min-answers 2"): "0 complete answers < 2",
                      ("a", "max-rate 0.2"): "no complete answer to rate",
                      ("gone", "min-answers 2"): "0 complete answers < 2",
                      ("gone", "max-rate 0.5"): "the run has no answer on this route"}


def test_an_increase_equal_to_the_limit_holds():
    config = GateConfig(run="r", baseline="b", max_increase=0.1)
    now = [row(str(i), "a", "CON" if i < 3 else "ENT") for i in range(10)]
    before = [row(str(i), "a", "CON" if i < 2 else "ENT") for i in range(10)]
    (check,) = check_routes(config, rates(now), paired_rates(now, before), "*")
    assert check.ok and "+10.0 points <= 10.0, on 10 paired traces" in check.detail


@pytest.mark.parametrize("kwargs, message", [
    ({}, "give a limit"), ({"baseline": "b", "max_rate": 0.1}, "go together"),
    ({"max_rate": 0.1, "diff": "d.html"}, "--diff needs --baseline"),
    ({"min_answers": 0}, ">= 1")])
def test_config_refuses_what_cannot_be_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GateConfig(run="r", **kwargs)


@given(st.text(), st.text())
def test_junit_holds_any_route_and_claim_text(route, text):
    checks = [Check(route, "max-rate 0.1", False, f"rate of {route}", text),
              Check(route, "min-answers 1", True, "1 complete answers >= 1")]
    root = ET.fromstring(ET.tostring(junit_tree(checks).getroot()))
    cases = list(root.iter("testcase"))
    assert [c.get("classname") for c in cases] == [xml_text(f"rt4chart gate.{route}")] * 2
    failure = cases[0].find("failure")
    assert failure.get("message") == xml_text(f"rate of {route}")
    assert xml_text(text) in (failure.text or "") and cases[1].find("failure") is None
    assert root.get("failures") == "1" and root.get("tests") == "2"
