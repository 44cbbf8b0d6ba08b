"""Decomposition requests carry the whole answer when it is short, a bounded excerpt otherwise."""

from __future__ import annotations

import pickle
from pathlib import Path

from rt4chart import prompts
from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.common.limits import LimitsConfig
from rt4chart.transforms.decompose import (
    EXCERPT_CUT,
    EXCERPT_NEIGHBOURS,
    EXCERPT_SIDE_MAX_CHARS,
    WHOLE_ANSWER_MAX_CHARS,
    _DecomposeFn,
    requests_for,
)
from rt4chart.transforms.judges.contract import JudgeSpec
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import parse_trace

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "ragtruth_sample.jsonl"
CONFIG = SegmentConfig(limits=LimitsConfig(max_answer_sentences=10_000))


def _sentence(i: int) -> str:
    return f"Sentence {i} says that item {i} costs {100 + i} euros."


def _long_trace(n: int, sep: str = " ") -> Trace:
    answer = sep.join(_sentence(i) for i in range(n))
    return Trace("t", "r", 0, "Which items?", (Document("d", "Item 1 costs 101 euros."),), answer)


def test_a_normal_answer_is_given_whole_so_requests_and_cache_keys_are_unchanged():
    fn = _DecomposeFn(JudgeSpec())
    traces = [parse_trace(line) for line in SAMPLE.read_text().splitlines()]
    assert traces
    for trace in traces:
        requests = list(requests_for(prepare(trace, CONFIG)))
        assert requests and all(r.answer == trace.answer for r in requests)
        assert [fn.cache_inputs(r) for r in requests] == [
            (r.sentence.text, trace.answer, trace.question) for r in requests]


def test_an_answer_at_the_bound_is_still_whole_and_one_past_it_is_cut():
    n = next(n for n in range(1, 1000) if len(_long_trace(n).answer) > WHOLE_ANSWER_MAX_CHARS)
    at_bound = _long_trace(n - 1)
    assert len(at_bound.answer) <= WHOLE_ANSWER_MAX_CHARS
    assert all(r.answer == at_bound.answer for r in requests_for(prepare(at_bound, CONFIG)))
    over = _long_trace(n)
    assert all(r.answer != over.answer for r in requests_for(prepare(over, CONFIG)))


def test_a_long_answer_gives_each_sentence_its_neighbours_and_marks_the_cuts():
    trace = _long_trace(400)
    requests = list(requests_for(prepare(trace, CONFIG)))
    assert len(requests) == 400
    k = EXCERPT_NEIGHBOURS
    middle = requests[200].answer
    neighbours = " ".join(_sentence(i) for i in range(200 - k, 200 + k + 1))
    assert middle == f"{EXCERPT_CUT} {neighbours} {EXCERPT_CUT}"
    # At the ends of the answer nothing was cut on that side.
    assert requests[0].answer == " ".join(_sentence(i) for i in range(k + 1)) + f" {EXCERPT_CUT}"
    assert requests[-1].answer == (
        f"{EXCERPT_CUT} " + " ".join(_sentence(i) for i in range(399 - k, 400)))
    assert all(r.sentence.text in r.answer for r in requests)


def _long(tag: str) -> str:
    """A sentence of about 0.6 x EXCERPT_SIDE_MAX_CHARS characters."""
    return f"Long sentence {tag} has " + "many words " * (EXCERPT_SIDE_MAX_CHARS // 18) + "at end."


def test_neighbours_stop_at_the_character_bound_of_each_side():
    parts = [_sentence(i) for i in range(300)]
    parts[149], parts[150] = _long("a"), _long("b")
    trace = Trace("t", "r", 0, "q", (Document("d", "x."),), "\n".join(parts))
    requests = list(requests_for(prepare(trace, CONFIG)))
    assert [r.sentence.text for r in requests] == parts
    by_text = {r.sentence.text: r.answer for r in requests}
    # Before sentence 151: sentence 150 fits in the bound, 150 and 149 together do not.
    k = EXCERPT_NEIGHBOURS
    assert by_text[parts[151]] == f"{EXCERPT_CUT} " + "\n".join(parts[150 : 152 + k]) + (
        f" {EXCERPT_CUT}")
    # Around a long sentence its short neighbours still fit, up to EXCERPT_NEIGHBOURS a side.
    assert by_text[parts[150]] == f"{EXCERPT_CUT} " + "\n".join(parts[150 - k : 151 + k]) + (
        f" {EXCERPT_CUT}")
    for r in requests:
        side = EXCERPT_SIDE_MAX_CHARS + len(EXCERPT_CUT) + 1
        assert len(r.answer) <= len(r.sentence.text) + 2 * side


def test_what_requests_hold_grows_linearly_with_the_answer():
    """The quadratic case of issue 12: a copy of the whole answer in each sentence's request."""
    sizes = {}
    for n in (1250, 5000):
        requests = list(requests_for(prepare(_long_trace(n, sep="\n"), CONFIG)))
        assert len(requests) == n
        sizes[n] = max(len(pickle.dumps(r)) for r in requests)
    # The largest request does not grow with the answer (a whole-answer copy would be 4x).
    assert sizes[5000] <= sizes[1250] * 1.05
    assert sizes[5000] < 2 * EXCERPT_SIDE_MAX_CHARS + 1000


def test_the_prompt_explains_the_excerpt_marker_the_requests_use():
    rendered = prompts.render("decompose_user.txt", question="q", answer="a", sentence="s")
    assert f'"{EXCERPT_CUT}"' in rendered and "excerpt" in rendered
