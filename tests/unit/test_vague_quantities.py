"""Vague amounts are ranges: a faithful vague paraphrase of a stated range or figure is
supported, a vague amount outside it is not."""

from __future__ import annotations

import math

import pytest

from rt4chart.transforms.checks.support import check_support
from rt4chart.transforms.text.quantities import read, stated_ranges


@pytest.mark.parametrize(("text", "low", "high"), [
    ("a few thousand dollars", 2000, 9999),
    ("several hundred people", 300, 999),
    ("hundreds of visitors", 200, 999),
    ("tens of millions of users", 1e7, 1e8 - 1),
    ("dozens of shops", 24, 144),
    ("over a dozen shops", 12, math.inf),
    ("nearly half of the voters", 42.5, 50),
    ("about 30% of the land", 25.5, 34.5),
])
def test_vague_amounts_read_as_intervals(text, low, high):
    (q,) = read(text).quantities
    lo, hi = q.interval()
    assert lo == pytest.approx(low) and (hi == high or hi == pytest.approx(high, rel=0.02))


def test_stated_ranges_inherit_a_missing_unit():
    (r,) = stated_ranges("Delivery takes 3 to 5 days.")
    assert (r.low, r.high, r.unit) == (3, 5, "day")
    (r,) = stated_ranges("Repairs run from $3,000 to around $12,000.")
    assert (r.low, r.high, r.unit) == (3000, 12000, "usd")


@pytest.mark.parametrize(("claim", "evidence"), [
    ("Repairs cost a few thousand dollars.", "Repairs cost from $3,000 to around $12,000."),
    ("Repairs cost several thousand dollars.", "Repairs cost from $3,000 to around $12,000."),
    ("The bill came to several thousand dollars.", "The bill was roughly $7,400."),
    ("Hundreds of people attended.", "About 450 people attended."),
    ("Tens of millions of users signed up.", "35 million users signed up."),
    ("Over a dozen shops closed.", "Fifteen shops closed."),
    ("Nearly half of residents voted.", "48% of residents voted."),
    ("About 30% agreed.", "Roughly 31 percent agreed."),
])
def test_a_vague_amount_inside_the_evidence_is_supported(claim, evidence):
    assert check_support(claim, [evidence]).supported


@pytest.mark.parametrize(("claim", "evidence"), [
    ("Repairs cost a few hundred dollars.", "Repairs cost from $3,000 to around $12,000."),
    ("Hundreds of people attended.", "About 40 people attended."),
    ("Over a dozen shops closed.", "Eight shops closed."),
    ("Nearly half of residents voted.", "28% of residents voted."),
    ("Thousands of users signed up.", "Around 600 users signed up."),
    # An exact figure is not supported by a range around it, nor a bound by another bound.
    ("Delivery takes 4 days.", "Delivery takes 3 to 5 days."),
    ("Cloves may take up to 30 minutes.", "Cloves may take up to 45 minutes."),
])
def test_a_vague_amount_outside_the_evidence_is_not(claim, evidence):
    assert not check_support(claim, [evidence]).supported
