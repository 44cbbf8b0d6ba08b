"""Work limits per trace: rejected with the limit named, or truncated and marked partial."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.common.limits import LimitsConfig, claims_over_limit
from rt4chart.transforms.segment import OverLimit, Segment, SegmentConfig, prepare

ANSWER = "One is here. Two is here. Three is here. Four is here."
DOCS = (Document("a", "Alpha one. Alpha two.  "), Document("b", "Beta one. Beta two."),
        Document("c", "Gamma one."))


def trace(trace_id: str = "t", answer: str = ANSWER, docs=DOCS) -> Trace:
    return Trace(trace_id, "r", 1_700_000_000_000_000, "q", docs, answer)


def config(oversize: str = "reject", **limits) -> SegmentConfig:
    return SegmentConfig(2, 1, LimitsConfig(oversize=oversize, **limits))


@pytest.mark.parametrize("field", ["max_answer_sentences", "max_context_sentences",
                                   "max_context_chars", "max_claims_per_answer"])
@pytest.mark.parametrize("value", [0, -3, True, 2.5, "10", None])
def test_limits_must_be_positive_integers(field, value):
    with pytest.raises(ValueError, match=field):
        LimitsConfig(**{field: value})


def test_oversize_mode_and_config_types_are_checked():
    with pytest.raises(ValueError, match="oversize must be one of reject, truncate"):
        LimitsConfig(oversize="drop")
    with pytest.raises(ValueError, match="LimitsConfig"):
        SegmentConfig(2, 1, limits={"max_answer_sentences": 3})


def test_defaults_are_safe_and_reject():
    limits = SegmentConfig().limits
    assert limits.oversize == "reject" and not limits.truncate
    assert (limits.max_answer_sentences, limits.max_context_sentences,
            limits.max_context_chars, limits.max_claims_per_answer) == (250, 5000, 1_000_000, 1000)


def test_a_trace_at_every_limit_is_whole():
    p = prepare(trace(), config(max_answer_sentences=4, max_context_sentences=5,
                                max_context_chars=sum(len(d.text) for d in DOCS)))
    assert (len(p.answer_sentences), len(p.sentences), p.partial, p.partial_reason) == (
        4, 5, False, None)
    assert p.trace == trace()


@pytest.mark.parametrize("limits,named,what", [
    ({"max_answer_sentences": 3}, "max_answer_sentences=3", "answer has more than 3 sentences"),
    ({"max_context_sentences": 4}, "max_context_sentences=4", "context has more than 4 sentences"),
    ({"max_context_chars": 40}, "max_context_chars=40", "context has 52 characters"),
])
def test_reject_names_the_limit(limits, named, what):
    with pytest.raises(OverLimit) as err:
        prepare(trace(), config(**limits))
    assert str(err.value) == f"over limit {named}: the {what}"


def test_truncate_audits_the_first_answer_sentences_and_marks_the_trace_partial():
    p = prepare(trace(), config("truncate", max_answer_sentences=2))
    assert [s.text for s in p.answer_sentences] == ["One is here.", "Two is here."]
    assert p.trace.answer == "One is here. Two is here."
    assert p.partial and p.partial_reason.startswith("over limit max_answer_sentences=2")
    assert "audited the first 2 answer sentences" in p.partial_reason
    assert p.trace.contexts == DOCS and len(p.sentences) == 5


def test_truncate_cuts_the_context_after_the_last_sentence_kept():
    p = prepare(trace(), config("truncate", max_context_sentences=3))
    assert [(s.index, s.doc_id, s.text) for s in p.sentences] == [
        (0, "a", "Alpha one."), (1, "a", "Alpha two."), (2, "b", "Beta one.")]
    assert p.trace.contexts == (Document("a", "Alpha one. Alpha two."), Document("b", "Beta one."))
    docs = {d.doc_id: d.text for d in p.trace.contexts}
    assert all(docs[s.doc_id][s.start:s.end] == s.text for s in p.sentences)
    assert [(w.first, w.last) for w in p.windows] == [(0, 1), (1, 2)]
    assert p.partial and "max_context_sentences=3" in p.partial_reason
    assert p.trace.answer == ANSWER and len(p.answer_sentences) == 4


def test_truncate_by_characters_keeps_the_sentences_that_end_within_the_budget():
    # "Alpha one. Alpha two.  " is 23 characters; "Beta one." ends 9 characters into doc b.
    p = prepare(trace(), config("truncate", max_context_chars=23 + 9))
    assert [s.text for s in p.sentences] == ["Alpha one.", "Alpha two.", "Beta one."]
    p = prepare(trace(), config("truncate", max_context_chars=23 + 8))
    assert [s.text for s in p.sentences] == ["Alpha one.", "Alpha two."]
    assert "max_context_chars=31" in p.partial_reason


def test_both_limits_are_named_when_both_are_hit():
    p = prepare(trace(), config("truncate", max_answer_sentences=1, max_context_sentences=1))
    assert "max_context_sentences=1" in p.partial_reason
    assert "max_answer_sentences=1" in p.partial_reason


def test_truncate_to_nothing_is_still_a_rejection():
    with pytest.raises(OverLimit, match="max_context_chars=5"):
        prepare(trace(), config("truncate", max_context_chars=5))


def test_a_huge_answer_is_not_segmented_past_the_limit():
    answer = "A claim is made here. " * 50_000  # 1.1 MB: whole, it would take minutes
    with pytest.raises(OverLimit, match="max_answer_sentences=250"):
        prepare(trace(answer=answer), SegmentConfig())
    p = prepare(trace(answer=answer), SegmentConfig(limits=LimitsConfig(oversize="truncate")))
    assert len(p.answer_sentences) == 250 and len(p.trace.answer) == 22 * 250 - 1


def test_claims_over_limit():
    limits = LimitsConfig(max_claims_per_answer=3)
    assert claims_over_limit(3, limits) is None
    assert claims_over_limit(4, limits) == (
        "over limit max_claims_per_answer=3: the answer has 4 claims")


def test_the_segment_stage_dead_letters_a_trace_over_a_limit_and_keeps_the_rest():
    traces = [trace("ok", answer="Short."), trace("big")]
    with TestPipeline() as p:
        out = p | beam.Create(traces) | Segment(config(max_answer_sentences=3))
        assert_that(out.prepared | beam.Map(lambda x: (x.trace.trace_id, x.partial)),
                    equal_to([("ok", False)]), label="prepared")
        assert_that(out.dead_letters | beam.Map(lambda d: (d.stage, d.trace_id, d.reason)),
                    equal_to([("segment", "big", "over limit max_answer_sentences=3: the answer "
                                                 "has more than 3 sentences")]), label="dead")


def test_the_segment_stage_marks_truncated_traces_partial():
    with TestPipeline() as p:
        out = p | beam.Create([trace("big")]) | Segment(config("truncate", max_answer_sentences=3))
        assert_that(out.prepared | beam.Map(lambda x: (x.partial, len(x.answer_sentences))),
                    equal_to([(True, 3)]), label="prepared")
        assert_that(out.dead_letters, equal_to([]), label="dead")
