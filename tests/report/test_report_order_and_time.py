"""Worst first breaks ties on P by the number of CON and NIC claims, then by trace id; a
probability and its threshold are printed on the same rounding; an undated record stays out of
the time chart; a 200-answer report stays under 1 MB and needs no network."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

from hypothesis import example, given
from hypothesis import strategies as st

from rt4chart.pipeline.report import timeline
from rt4chart.pipeline.report.packing import unpacked
from rt4chart.pipeline.report.page import flagged, render
from rt4chart.pipeline.report.trace_view import p_with_threshold, same_rounding
from rt4chart.pipeline.results.load import Run
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import parse_trace

DAY = datetime(2024, 5, 1, tzinfo=UTC)
CONTEXT = "The refund window is 14 days. Shipping takes 3 days."


def _answer(tid: str, p: float = 0.42, label: str = "CON", when: datetime = DAY) -> dict:
    return {"trace_id": tid, "route": "r", "label": label, "status": "ok", "reason": None,
            "hallucinated": label in ("CON", "NIC"), "p_hallucinated": p, "n_claims": 3,
            "event_time": when, "cost_usd": 0.0, "p_threshold": 0.4150}


def _claims(tid: str, labels: list[str]) -> list[dict]:
    return [{"trace_id": tid, "claim_index": i, "claim": f"claim {i}", "label": lab,
             "status": "ok", "note": "", "kind": "fact", "sentence_index": 0,
             "sentence": "The refund window is 30 days.", "answer_start": 0, "answer_end": 29,
             "window_labels": [lab], "deciding_window": 0, "local_label": lab,
             "p_unsupported": 0.1504, "p_threshold": 0.1508, "evidence": []}
            for i, lab in enumerate(labels)]


def _run(answers: list[dict], claims: list[dict], traces=None, rates=None) -> Run:
    return Run(out_dir="run", answers=answers, claims=claims, route_rates=rates or [],
               costs=[], dead_letters=[], summary={}, traces=traces or {})


@given(st.lists(st.tuples(st.sampled_from(["CON", "NIC"]), st.integers(0, 3),
                          st.integers(0, 3)), min_size=1, max_size=8), st.randoms())
def test_ties_on_p_are_broken_by_bad_claims_then_trace_id(specs, rnd):
    answers, claims = [], []
    for i, (label, con, nic) in enumerate(specs):
        tid = f"t{i:02d}"
        answers.append(_answer(tid, label=label))
        claims += _claims(tid, ["CON"] * con + ["NIC"] * nic + ["ENT", "NO_CLAIM"])
    order = [a["trace_id"] for a in flagged(_run(answers, claims))]
    shuffled = answers[:]
    rnd.shuffle(shuffled)
    assert [a["trace_id"] for a in flagged(_run(shuffled, claims))] == order  # a total order
    bad = {f"t{i:02d}": con + nic for i, (_, con, nic) in enumerate(specs)}
    label = {f"t{i:02d}": lab for i, (lab, _, _) in enumerate(specs)}
    keys = [({"CON": 0, "NIC": 1}[label[t]], -bad[t], t) for t in order]
    assert keys == sorted(keys)


def test_the_example_ties_are_ordered_by_how_many_claims_are_bad():
    answers = [_answer("a"), _answer("b"), _answer("c")]
    claims = _claims("a", ["CON", "ENT"]) + _claims("b", ["CON", "CON", "NIC"]) + \
        _claims("c", ["CON", "ENT"])
    assert [a["trace_id"] for a in flagged(_run(answers, claims))] == ["b", "a", "c"]


probability = st.floats(min_value=0.0, max_value=1.0)


@given(probability, probability)
@example(0.1504, 0.1508)
@example(0.15, 0.1508)
@example(0.1508, 0.1508)
@example(0.4199999999999999, 0.42)
def test_a_printed_probability_compares_with_its_printed_threshold_as_the_numbers_do(p, t):
    shown_p, shown_t = same_rounding(p, t)
    assert (float(shown_p) > float(shown_t)) == (p > t)
    assert (float(shown_p) < float(shown_t)) == (p < t)
    text = p_with_threshold(p, t, "ENT below")
    assert text == f"{shown_p} (ENT below {shown_t})"


def test_the_issue_threshold_is_no_longer_rounded_onto_the_probability():
    assert p_with_threshold(0.152, 0.1508, "ENT below") == "0.152 (ENT below 0.151)"
    assert p_with_threshold(0.1504, 0.1508, "ENT below") == "0.150 (ENT below 0.151)"
    assert p_with_threshold(0.9, 0.1508, "ENT below") == "0.90 (ENT below 0.15)"
    assert p_with_threshold(0.9, None, "ENT below") == "0.90"


def _prepared(tid: str, timestamp: str | None):
    record = {"trace_id": tid, "route": "r", "question": "Refunds?", "answer": "30 days.",
              "contexts": [CONTEXT]}
    if timestamp:
        record["timestamp"] = timestamp
    return prepare(parse_trace(record), SegmentConfig())


def _window(day: datetime, traces: int, hallucinated: int) -> dict:
    return {"route": "r", "window_start": day, "window_end": day + timedelta(days=1),
            "traces": traces, "hallucinated": hallucinated, "rate": hallucinated / traces,
            "rate_low": 0.0, "rate_high": 1.0, "pane": "ON_TIME", "con": hallucinated, "nic": 0,
            "incomplete": 0, "late": 0, "input_tokens": 0, "cached_tokens": 0,
            "output_tokens": 0, "cost_usd": 0.0}


def test_an_undated_record_is_left_out_of_the_time_chart_and_counted():
    audited = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    today = audited.replace(hour=0, minute=0, second=0)
    answers = [_answer("dated", when=DAY + timedelta(hours=9)),
               _answer("undated", when=audited)]
    traces = {"dated": _prepared("dated", "2024-05-01T09:00:00Z"),
              "undated": _prepared("undated", None)}
    rates = [_window(DAY, 1, 1), _window(today, 1, 1)]
    run = _run(answers, _claims("dated", ["CON"]) + _claims("undated", ["CON"]), traces, rates)
    assert [a["trace_id"] for a in timeline.undated(run.answers, run.traces)] == ["undated"]
    assert timeline.dated_windows(rates, [answers[1]]) == [rates[0]]
    html = render(run)
    chart = re.search(r'<svg[^>]*id="chart-time".*?</svg>', html, re.S).group(0)
    assert "(1 undated answer left out)" in chart
    assert f"{today:%Y-%m-%d}" not in chart and "2024-05-01" in chart
    # The window tables still show every window the run wrote.
    assert f"{today:%Y-%m-%d}" in html


def test_an_undated_answer_shares_its_window_with_dated_ones():
    answers = [_answer("u", when=DAY + timedelta(hours=3))]
    (row,) = timeline.dated_windows([_window(DAY, 4, 2)], answers)
    assert (row["traces"], row["hallucinated"], row["rate"]) == (3, 1, 1 / 3)
    assert 0 < row["rate_low"] < 1 / 3 < row["rate_high"] < 1


def test_an_answer_whose_trace_cannot_be_read_again_is_not_guessed_undated():
    assert timeline.undated([_answer("gone")], {}) == []


def _big_run(n: int) -> Run:
    rnd = random.Random(7)
    answers, claims, traces, rates = [], [], {}, []
    for i in range(n):
        tid = f"{i:032x}"
        labels = [rnd.choice(["CON", "NIC", "ENT"]) for _ in range(4)]
        label = "CON" if "CON" in labels else "NIC" if "NIC" in labels else "ENT"
        when = DAY + timedelta(days=i % 20, hours=1)
        answers.append({**_answer(tid, p=rnd.random(), label=label, when=when),
                        "route": f"route-{i % 4}"})
        claims += _claims(tid, labels)
        traces[tid] = _prepared(tid, f"{when:%Y-%m-%dT%H:%M:%SZ}")
    for day in range(20):
        for r in range(4):
            rates.append({**_window(DAY + timedelta(days=day), 10, 3), "route": f"route-{r}"})
    return _run(answers, claims, traces, rates)


def test_a_200_answer_report_is_one_offline_file_whose_charts_are_small():
    html = render(_big_run(200))
    assert "plotly" not in html.lower()
    assert not re.search(r'<(script|link|img)[^>]+(src|href)="(https?:)?//', html)
    svgs = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg".*?</svg>', html, re.S)
    assert len(svgs) == 3  # rate, time and CON/NIC; no cost chart with no tokens
    assert sum(len(s.encode("utf-8")) for s in svgs) <= 60_000  # plotly.js alone was 4.6 MB
    # Everything but the trace views (whose size grows with the flagged answers' contexts and
    # claims) stays small: overview, charts, flagged table, styles and script.
    frame = html[:html.index('<section id="traces"')] + html[html.index("</main>"):]
    assert len(frame.encode("utf-8")) <= 300_000
    # The trace views are packed (packing.py): each is in the page once, and unpacks to the
    # view of a flagged answer (its section, its claims); the page stays under 1 MB.
    assert len(html.encode("utf-8")) <= 1_000_000
    views = re.findall(r'<section class="trace" id="([^"]+)"', unpacked(html))
    assert len(views) == len(set(views)) == html.count('<div class="packed" data-gz=') > 0
    assert '<section class="trace"' not in html
