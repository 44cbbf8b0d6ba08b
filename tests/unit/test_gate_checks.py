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


def row(tid: str, route: str, label: str | None, status: str = "ok", minutes: int = 0,
        partial: bool | None = False) -> dict:
    return {"trace_id": tid, "route": route, "label": label, "status": status,
            "audited_at": DAY + timedelta(minutes=minutes), "partial": partial}


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


@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), labels, st.booleans(),
                          st.sampled_from([False, True, None])), max_size=30))
def test_rates_count_checked_answers_and_every_unchecked_one_against_the_bound(answers):
    rows = [row(f"t{i}", route, label, "ok" if ok else "incomplete", partial=partial)
            for i, (route, label, ok, partial) in enumerate(answers)]
    got = rates(rows)
    for route in got:
        mine = [r for r in rows if r["route"] == route]
        complete = [r for r in mine if r["status"] == "ok" and r["label"] is not None]
        checked = [r for r in complete if not r["partial"]]
        r = got[route]
        assert r.answers == len(checked)
        assert r.hallucinated == sum(x["label"] in ("CON", "NIC") for x in checked)
        assert r.incomplete == len(mine) - len(complete)
        assert r.partial == len(complete) - len(checked)
        if r.rate is not None:
            assert r.low <= r.rate <= r.high
            assert r.rate <= r.bound  # the bound is never kinder than the checked answers
        # The bound is the rate if every unchecked answer were hallucinated.
        worst = [x if x in checked else {**x, "label": "NIC", "status": "ok", "partial": False}
                 for x in mine]
        assert r.bound == rates(worst)[route].rate


def test_an_unchecked_hallucination_cannot_pass_the_rate_or_the_incomplete_limit():
    """The judge failed on exactly the hallucinated answer (or a cut hid it): 4 clean answers
    and one unchecked; the rate of the checked ones is 0%, the bound 20%."""
    config = GateConfig(run="r", max_rate=0.05, min_answers=4)
    for unchecked in (row("5", "a", None, "incomplete"), row("5", "a", "ENT", partial=True)):
        answers = [row(str(i), "a", "ENT") for i in range(4)] + [unchecked]
        failed = {c.limit: c.detail for c in check_routes(config, rates(answers), None, "*")
                  if not c.ok}
        kind = "incomplete" if unchecked["status"] != "ok" else "partial"
        assert failed == {
            "max-rate 0.05": f"rate 0.0%, 20.0% counting 1 {kind} as hallucinated > 5.0%",
            "max-incomplete 0": f"1 {kind} answer > 0 (judge calls failed on them, or they "
                                "were cut: nothing says they are grounded)"}
        allowed = GateConfig(run="r", max_rate=0.2, max_incomplete=1)
        assert all(c.ok for c in check_routes(allowed, rates(answers), None, "*"))


def test_the_latest_answer_of_a_trace_counts():
    rows = [row("t", "a", "CON", minutes=0), row("t", "a", "ENT", minutes=5)]
    assert latest(rows)["t"]["label"] == "ENT" and rates(rows)["a"].hallucinated == 0


def test_pairing_uses_the_traces_the_baseline_checked_and_the_run_audited():
    now = [row("1", "a", "CON"), row("2", "a", "ENT"), row("3", "a", "CON"),
           row("4", "a", None, "incomplete"), row("5", "a", "ENT")]
    before = [row("1", "x", "ENT"), row("2", "a", "ENT"), row("4", "a", "ENT"),
              row("5", "a", None, "incomplete"), row("9", "a", "CON")]
    pair = paired_rates(now, before)["a"]
    # 1 (moved route: counted under the run's), 2, and 4, which the run left incomplete: it
    # counts against the run (an incomplete answer cannot hide a regression); 5 the baseline
    # did not check, so there is nothing to compare it with.
    assert pair.paired == 3
    assert (pair.current.answers, pair.current.hallucinated, pair.current.incomplete) == (
        2, 1, 1)
    assert pair.current.bound == 2 / 3
    assert (pair.baseline.route, pair.baseline.answers, pair.baseline.hallucinated) == ("a", 3, 0)


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
                      ("a", "max-incomplete 0"): "1 incomplete answer > 0 (judge calls "
                                                 "failed on them, or they were cut: nothing "
                                                 "says they are grounded)",
                      ("gone", "min-answers 2"): "0 complete answers < 2",
                      ("gone", "max-rate 0.5"): "the run has no answer on this route"}


def test_an_increase_equal_to_the_limit_holds():
    config = GateConfig(run="r", baseline="b", max_increase=0.1)
    now = [row(str(i), "a", "CON" if i < 3 else "ENT") for i in range(10)]
    before = [row(str(i), "a", "CON" if i < 2 else "ENT") for i in range(10)]
    check, incomplete = check_routes(config, rates(now), paired_rates(now, before), "*")
    assert check.ok and "+10.0 points <= 10.0, on 10 paired traces" in check.detail
    assert incomplete.ok and incomplete.limit == "max-incomplete 0"


@pytest.mark.parametrize("kwargs, message", [
    ({}, "give a limit"), ({"baseline": "b", "max_rate": 0.1}, "go together"),
    ({"max_rate": 0.1, "diff": "d.html"}, "--diff needs --baseline"),
    ({"min_answers": 0}, ">= 1"), ({"max_rate": 0.1, "max_incomplete": -1}, ">= 0"),
    ({"max_rate": 0.1, "across_judges": True}, "--across-judges needs --baseline")])
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


def test_junit_names_a_refusal_as_an_error_and_a_limit_as_a_failure():
    checks = [Check("*", "baseline judge", False, "judged by model m-b, the run by m-a",
                    refused=True),
              Check("faq", "max-rate 0.05", False, "rate 20.0% > 5.0%")]
    root = junit_tree(checks).getroot()
    assert (root.get("errors"), root.get("failures"), root.get("tests")) == ("1", "1", "2")
    refused, limit = root.iter("testcase")
    assert refused.get("classname") == "rt4chart gate.*" and refused.find("failure") is None
    error = refused.find("error")
    assert error.get("type") == "GateRefused" and "m-b" in error.get("message")
    assert limit.find("error") is None and limit.find("failure").get("type") == "GateLimit"
