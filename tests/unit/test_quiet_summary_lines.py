"""The run summary's cached-token lines say something or are not printed (issue 48, point 7)."""

from __future__ import annotations

from rt4chart.pipeline.results.summary import Summary, caching_lines


def test_no_cached_token_means_no_cached_lines():
    nothing = Summary(input_tokens=5_000, cached_tokens=0,
                      cached_share_by_stage={"decompose": 0.0, "verify_local": 0.0},
                      cached_share_by_task={"(none)": 0.0})
    assert caching_lines(nothing) == []


def test_cached_tokens_are_shown_by_stage_and_by_task_only_when_traces_name_tasks():
    untasked = Summary(input_tokens=5_000, cached_tokens=2_500,
                       cached_share_by_stage={"decompose": 0.25, "verify_local": 0.75},
                       cached_share_by_task={"(none)": 0.5})
    assert caching_lines(untasked) == ["cached input tokens by stage: decompose 25%, "
                                       "verify_local 75%"]
    tasked = Summary(input_tokens=5_000, cached_tokens=2_500,
                     cached_share_by_stage={"decompose": 0.5},
                     cached_share_by_task={"QA": 0.6, "(none)": 0.0})
    assert caching_lines(tasked)[-1] == "cached input tokens by task: QA 60%, (none) 0%"
