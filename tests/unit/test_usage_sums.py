"""Usage sums stay within INT64 whatever the counts (issue 33, defect 2): a sum that would pass
it stays at it, so that no table write fails on it; the token counts read from a usage report
are plausible per-call counts or unknown."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rt4chart.schemas.usage import MAX_COUNT, Usage, add_count
from rt4chart.transforms.judges.openai.pricing import MAX_TOKENS_PER_CALL, token_count

COUNTS = st.integers(0, MAX_COUNT)


@given(st.lists(st.tuples(COUNTS, COUNTS), max_size=6))
def test_usage_sums_never_pass_int64(pairs):
    total = sum((Usage(1, a, 0, b) for a, b in pairs), Usage())
    for field in (total.calls, total.input_tokens, total.output_tokens):
        assert 0 <= field <= MAX_COUNT
    exact = sum(a for a, _ in pairs)
    assert total.input_tokens == min(exact, MAX_COUNT) or exact > MAX_COUNT


@given(COUNTS, COUNTS)
def test_add_count_is_the_sum_until_the_cap(a, b):
    assert add_count(a, b) == min(a + b, MAX_COUNT)


@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.text(max_size=5), st.booleans(),
                 st.none()))
def test_a_token_count_is_a_plausible_whole_number_or_unknown(value):
    count = token_count(value)
    assert count is None or (type(count) is int and 0 <= count <= MAX_TOKENS_PER_CALL)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10**9:
        assert count == value
