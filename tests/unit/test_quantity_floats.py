"""Every quantity the reader returns holds float numbers, whatever it was built from.

`int.is_integer` exists only from Python 3.12; the package runs on 3.11, so a reader that kept
an int value ("hundreds of" is 200 to 999) made `number_terms` raise on 3.11 (issue 32).
"""

from __future__ import annotations

import pytest

from rt4chart.transforms.prune import relevant, terms
from rt4chart.transforms.text.quantities import Quantity, number_terms, read

VAGUE = [
    "He treated hundreds of troops.",
    "Dozens of people came.",
    "Tens of thousands of fans cheered.",
    "A few thousand dollars were raised.",
    "A couple of hundred cars were sold.",
]


@pytest.mark.parametrize("text", VAGUE)
def test_vague_quantities_have_float_numbers(text):
    found = read(text).quantities
    assert found, text
    for q in found:
        for number in (q.value, q.step, q.low, q.high):
            assert number is None or type(number) is float


@pytest.mark.parametrize("text", VAGUE)
def test_number_terms_of_vague_quantities_are_whole_numbers(text):
    (q,) = read(text).quantities
    term = f"{int(q.value)} {q.unit}" if q.unit else str(int(q.value))
    assert term in number_terms(text)


def test_a_quantity_built_from_ints_is_stored_as_floats():
    q = Quantity(200, None, 100, True, "hundreds", low=200, high=999)
    assert (q.value, q.step, q.low, q.high) == (200.0, 100.0, 200.0, 999.0)
    assert all(type(n) is float for n in (q.value, q.step, q.low, q.high))


def test_pruning_reads_a_vague_quantity():
    text = "He treated hundreds of troops."
    assert "#200" in terms(text)
    assert relevant(text, text)
    assert not relevant(text, "The weather was mild on Sunday.")
