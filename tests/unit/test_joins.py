from __future__ import annotations

import pytest

from rt4chart.schemas.rows import AnswerRow
from rt4chart.transforms.aggregate import answer_label
from rt4chart.transforms.common.joins import and_join, merge_spans, or_join, wilson
from rt4chart.transforms.rates import RouteCounts, RouteCountsFn

from testutil import answer_row


@pytest.mark.parametrize("labels,expected", [
    (["NIC", "ENT", "CON"], ("CON", 2)),
    (["ENT", "NIC", "ENT"], ("ENT", 0)),
    (["NIC", "NIC"], ("NIC", None)),
    (["CON", "ENT", "CON"], ("CON", 0)),
])
def test_or_join(labels, expected):
    assert or_join(labels) == expected


@pytest.mark.parametrize("labels,expected", [
    (["ENT", "NIC", "CON"], "CON"), (["ENT", "NIC"], "NIC"), (["ENT", "ENT"], "ENT"), ([], "ENT"),
])
def test_and_join(labels, expected):
    assert and_join(labels) == expected


def test_incomplete_answers_carry_no_label():
    # An answer with a failed call is `incomplete`: no label, whatever its decided claims say.
    assert answer_label(["ENT", "ENT"], incomplete=True) is None
    assert answer_label(["ENT", "NIC"], incomplete=True) is None
    assert answer_label(["CON"], incomplete=True) is None
    assert answer_label(["CON", "NIC", "ENT"], incomplete=True) is None
    assert answer_label([], incomplete=True) is None
    assert answer_label(["CON", "ENT"], incomplete=False) == "CON"


def test_merge_spans_prefers_con():
    assert merge_spans([(5, 9, "NIC"), (0, 4, "NIC"), (5, 9, "CON"), (5, 9, "NIC")]) == [
        (0, 4, "NIC"), (5, 9, "CON")]


def test_wilson_known_values():
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    low, high = wilson(0, 20)
    assert low == 0.0 and high == pytest.approx(0.1611, abs=1e-4)
    assert wilson(0, 0) == (None, None)
    for k, n in [(1, 1), (7, 7), (3, 1000)]:
        low, high = wilson(k, n)
        assert low <= k / n <= high


def _answer(status="ok", label="ENT", calls=3, trace_id="t") -> AnswerRow:
    return answer_row(trace_id=trace_id, status=status, label=label, judge_calls=calls)


def test_route_counts_combiner_merges_like_a_single_pass():
    fn = RouteCountsFn()
    answers = [_answer(), _answer(label="CON", trace_id="c1"), _answer(label="NIC", trace_id="n1"),
               _answer(status="incomplete", label=None), _answer(label="CON", trace_id="c2")]
    single = fn.create_accumulator()
    for a in answers:
        single = fn.add_input(single, a)
    left, right = fn.create_accumulator(), fn.create_accumulator()
    for a in answers[:2]:
        left = fn.add_input(left, a)
    for a in answers[2:]:
        right = fn.add_input(right, a)
    merged = fn.extract_output(fn.merge_accumulators([left, right]))
    assert merged == fn.extract_output(single)
    assert (merged.traces, merged.hallucinated, merged.con, merged.nic, merged.incomplete) == (
        4, 3, 2, 1, 1)
    assert merged.usage.calls == 15 and merged.usage.cost_usd == pytest.approx(2.5)
    # Samples: hallucinated traces only, contradicted ones first.
    assert [t for _, t in merged.samples] == ["c1", "c2", "n1"]
    assert RouteCounts().traces == 0
