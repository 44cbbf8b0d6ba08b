"""The calibration map keeps the raw score's ranking (Hypothesis): a fitted map is strictly
increasing, stays in [0, 1], and its AUROC on any data is the raw score's; the shipped offline
map is such a map."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rt4chart.pipeline.eval import metrics
from rt4chart.transforms.common import probability as prob
from rt4chart.transforms.judges.offline import judge as offline

# Scores on a grid of 1e-6: distinct raw scores that a float64 map can keep apart (two scores
# 1e-17 apart cannot stay apart under any map with a slope below 1).
scores = st.integers(0, 10**6).map(lambda i: i / 10**6)
outcomes = st.lists(st.tuples(scores, st.booleans()), min_size=1, max_size=120)


def _fit(data, min_count):
    xs, ys = zip(*data, strict=True)
    return prob.strictly_monotone(prob.isotonic(xs, [int(y) for y in ys], min_count))


@given(outcomes, st.integers(1, 40))
@example([(0.1, False), (0.2, False), (0.3, True), (0.4, True)], 1)  # two flat steps
@example([(0.5, True)], 1)  # one block, one score
@example([(0.0, False), (1.0, True)], 1)  # blocks at the ends of the unit interval
def test_a_fitted_map_is_strictly_increasing_on_0_1(data, min_count):
    points = _fit(data, min_count)
    assert points[0][0] == 0.0 and points[-1][0] == 1.0
    assert all(0.0 <= v <= 1.0 for pt in points for v in pt)
    assert all(y0 < y1 for (_, y0), (_, y1) in itertools.pairwise(points))
    grid = [prob.interpolate(points, i / 1000) for i in range(1001)]
    assert all(a < b for a, b in itertools.pairwise(grid))


@given(outcomes, st.integers(1, 40))
@example([(0.1, True), (0.2, False), (0.3, True), (0.3, False), (0.9, True)], 2)
def test_the_map_ranks_as_the_raw_score_does(data, min_count):
    points = _fit(data, min_count)
    raw = np.array([x for x, _ in data])
    truth = np.array([y for _, y in data])
    mapped = np.array([prob.interpolate(points, x) for x in raw])
    assert metrics.auroc(truth, mapped) == metrics.auroc(truth, raw)
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(mapped[order]) >= 0)
    assert len(set(mapped.tolist())) == len(set(raw.tolist()))  # no new ties


@given(outcomes, st.integers(1, 40), scores)
@example([(0.1, False), (0.5, True)], 1, 0.0)
def test_the_map_stays_within_the_slope_of_the_isotonic_fit(data, min_count, x):
    """Calibration kept: anywhere, the strict map is the isotonic fit's rate up to its slope."""
    xs, ys = zip(*data, strict=True)
    steps = prob.isotonic(xs, [int(y) for y in ys], min_count)
    value = prob.interpolate(prob.strictly_monotone(steps), x)
    assert abs(value - prob.interpolate(steps, x)) <= prob.STRICT_SLOPE + 1e-12


def test_an_empty_map_stays_the_identity_and_a_bad_slope_is_refused():
    assert prob.strictly_monotone(()) == ()
    with pytest.raises(ValueError, match="slope"):
        prob.strictly_monotone(((0.0, 0.1), (1.0, 0.2)), slope=0.0)


def test_the_shipped_offline_maps_are_strictly_increasing():
    cal = prob.load(offline.CALIBRATION)
    for points in (cal.claim_map, cal.answer_map):
        assert points[0][0] == 0.0 and points[-1][0] == 1.0
        assert all(y0 < y1 for (_, y0), (_, y1) in itertools.pairwise(points))
