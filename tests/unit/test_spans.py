"""Claim spans: fragments aligned to the answer sentence, with their fallbacks; labelled spans."""

from __future__ import annotations

from rt4chart.transforms.checks.spans import claim_spans, label_spans

ANSWER = "Hi. The free trial, offered to all users, lasts 30 days and covers all Pro features."
OFFSET = ANSWER.index("The")
SENTENCE = ANSWER[OFFSET:]


def _text(spans) -> list[str]:
    return [ANSWER[s:e] for s, e in spans]


def test_a_fragment_is_aligned_tolerantly_to_answer_offsets():
    spans, source = claim_spans(SENTENCE, OFFSET, "The free trial lasts 30 days.",
                                ["lasts  30 DAYS"])
    assert source == "fragments"
    assert _text(spans) == ["lasts 30 days"]


def test_several_fragments_give_the_union_of_their_spans_in_answer_order():
    spans, source = claim_spans(SENTENCE, OFFSET, "The free trial lasts 30 days.",
                                ["lasts 30 days", "The free trial"])
    assert source == "fragments"
    assert _text(spans) == ["The free trial", "lasts 30 days"]
    # Touching or overlapping fragments become one span.
    spans, _ = claim_spans(SENTENCE, OFFSET, "c", ["The free", "free trial"])
    assert _text(spans) == ["The free trial"]


def test_fragments_that_do_not_align_are_left_out():
    spans, source = claim_spans(SENTENCE, OFFSET, "The free trial lasts 30 days.",
                                ["lasts 30 days", "lasts 60 days", "x"])
    assert (source, _text(spans)) == ("fragments", ["lasts 30 days"])


def test_the_claim_text_is_the_fallback_when_no_fragment_aligns():
    claim = "covers all Pro features"
    spans, source = claim_spans(SENTENCE, OFFSET, claim, ["covers every feature"])
    assert (source, _text(spans)) == ("claim_text", ["covers all Pro features"])
    spans, source = claim_spans(SENTENCE, OFFSET, "The free trial,", [])
    assert (source, _text(spans)) == ("claim_text", ["The free trial"])


def test_the_whole_sentence_when_neither_aligns():
    spans, source = claim_spans(SENTENCE, OFFSET, "The trial lasts a month.", ["a month"])
    assert source == "sentence"
    assert spans == ((OFFSET, len(ANSWER)),)


def test_a_word_inside_another_word_does_not_align():
    spans, source = claim_spans("The trialist paid.", 0, "The trial paid.", ["trial"])
    assert source == "sentence"


def test_a_fragment_occurring_twice_takes_the_occurrence_next_to_the_other_fragments():
    sentence = "The trial is free and the trial lasts 30 days."
    spans, _ = claim_spans(sentence, 100, "The trial lasts 30 days.",
                           ["the trial", "lasts 30 days"])
    assert [sentence[s - 100:e - 100] for s, e in spans] == ["the trial lasts 30 days"]
    assert spans == ((100 + sentence.rindex("the trial"), 100 + sentence.index(" days") + 5),)
    # Alone, a repeated fragment takes its first occurrence.
    spans, _ = claim_spans(sentence, 0, "c", ["the trial"])
    assert spans == ((0, 9),)


def test_label_spans_are_disjoint_and_the_worst_label_wins_where_claims_overlap():
    assert label_spans([(0, 10, "NIC"), (5, 15, "CON"), (20, 30, "NIC"), (30, 32, "NIC")]) == [
        (0, 5, "NIC"), (5, 15, "CON"), (20, 32, "NIC")]
    assert label_spans([(4, 9, "NIC"), (4, 9, "CON"), (4, 9, "NIC")]) == [(4, 9, "CON")]
    assert label_spans([(3, 3, "CON")]) == []
    order = ("CON", "NIC", "ERR", "ENT")
    assert label_spans([(0, 20, "ENT"), (5, 8, "ERR")], order) == [
        (0, 5, "ENT"), (5, 8, "ERR"), (8, 20, "ENT")]
