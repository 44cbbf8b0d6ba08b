"""Properties of segmentation, grounding and the support check (Hypothesis): they never raise
on any text; sentence offsets slice back to the sentence text and cover the text in order
without overlap; windows cover every sentence; a quote taken from the context grounds in it;
a claim is supported by itself. The budget is the profile of tests/conftest.py; each input a
search once found wrong is kept as an @example."""

from __future__ import annotations

from hypothesis import assume, example, given
from hypothesis import strategies as st

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms import segment
from rt4chart.transforms.checks import evidence, specifics, support

from text_strategies import any_or_structured, texts

# Context documents: a few sentences of structured text, or anything.
documents = st.lists(st.one_of(texts(max_pieces=24), any_or_structured), min_size=1,
                     max_size=3)


def _trace(docs: list[str], answer: str = "An answer.") -> Trace:
    contexts = tuple(Document(f"d{i}", text) for i, text in enumerate(docs))
    return Trace("t", "r", 0, "", contexts, answer)


def _covered(text: str, spans: list[tuple[int, int]]) -> None:
    last = 0
    for start, end in spans:
        assert last <= start < end <= len(text)
        assert text[start:end] == text[start:end].strip()
        assert not text[last:start].strip(), (text[last:start], spans)  # nothing skipped
        last = end
    assert not text[last:].strip()


@given(any_or_structured, st.sampled_from((segment.PIECE_CHARS, 40, 7)))
@example("Dr. Smith arrived. He left at 5 p.m. on May 1.", segment.PIECE_CHARS)
@example('He said "Stop. Now." and left.', 7)
@example("\u2026\u2026 a", segment.PIECE_CHARS)
def test_sentences_slice_back_and_cover_the_text_in_order_without_overlap(text, piece_chars):
    spans = segment.split_sentences(text, piece_chars)
    _covered(text, spans)
    assert segment.split_sentences(text, piece_chars) == spans
    assert all(e - s <= segment.MAX_SENTENCE_CHARS for s, e in spans)


@given(st.integers(0, 200), st.integers(1, 30), st.data())
def test_windows_cover_every_sentence_in_order(n, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    windows = segment.make_windows(n, size, overlap)
    covered = set()
    for i, w in enumerate(windows):
        assert w.index == i and 0 <= w.first <= w.last < n and w.last - w.first < size
        if i:
            assert windows[i - 1].first < w.first <= windows[i - 1].last + 1
        covered |= set(range(w.first, w.last + 1))
    assert covered == set(range(n))
    assert not windows or (windows[0].first, windows[-1].last) == (0, n - 1)


@given(documents, any_or_structured)
def test_prepared_sentences_slice_their_documents(docs, answer):
    prepared = segment.prepare(_trace(docs, answer), segment.SegmentConfig(3, 1))
    by_id = {d.doc_id: d.text for d in prepared.trace.contexts}
    for i, s in enumerate(prepared.sentences):
        assert s.index == i and by_id[s.doc_id][s.start:s.end] == s.text
    for s in prepared.answer_sentences:
        assert prepared.trace.answer[s.start:s.end] == s.text
    covered = {i for w in prepared.windows for i in range(w.first, w.last + 1)}
    assert covered == set(range(len(prepared.sentences)))
    rendered = segment.render_context(prepared)
    for offset, s in rendered.segments:
        assert rendered.text[offset:offset + len(s.text)] == s.text


def _quote(draw, sentence: str) -> str:
    """A run of whole words of `sentence` (cut at spaces)."""
    cuts = [0, *(i + 1 for i, ch in enumerate(sentence) if ch == " "), len(sentence) + 1]
    a = draw(st.integers(0, len(cuts) - 2))
    b = draw(st.integers(a + 1, len(cuts) - 1))
    return sentence[cuts[a]:cuts[b] - 1]


@given(documents, st.data())
def test_a_quote_taken_from_the_context_grounds_in_it(docs, data):
    prepared = segment.prepare(_trace(docs), segment.SegmentConfig())
    assume(prepared.sentences)
    rendered = segment.render_context(prepared)
    sentence = data.draw(st.sampled_from(prepared.sentences))
    quote = _quote(data.draw, sentence.text)
    assume(evidence.fragments(quote))
    found, missing = evidence.align([quote], rendered)
    assert missing == 0 and found, (quote, sentence)
    by_id = {d.doc_id: d.text for d in prepared.trace.contexts}
    for ev in found:
        assert by_id[ev.doc_id][ev.start:ev.end] == ev.text
    # Found within its own sentence's window too, and graded evidence for itself as the claim.
    assert evidence.align([quote], rendered, {sentence.index})[1] == 0
    # A quote of real words (not only glued forms such as "thethe" of "the-the", which the
    # quote may share with a different, earlier occurrence across a sentence break).
    assume(support.content_terms(quote))
    label, ev, note, _ = evidence.grounded_verdict(("ENT", [quote]), rendered, quote)
    assert label == "ENT" and ev, note


@given(any_or_structured, st.lists(any_or_structured, max_size=3))
@example("ENT", [])
def test_grounding_any_quote_never_raises_and_keeps_evidence_in_the_documents(claim, quotes):
    prepared = segment.prepare(_trace(["The museum opens at 9 am. Entry costs $12."]),
                               segment.SegmentConfig())
    rendered = segment.render_context(prepared)
    for judged in ("ENT", "CON", "NIC"):
        label, ev, note, p = evidence.grounded_verdict((judged, quotes), rendered, claim)
        assert label in ("ENT", "CON", "NIC") and 0.0 <= p <= 1.0
        assert label == judged or (label == "NIC" and note and not ev)
        text = prepared.trace.contexts[0].text
        assert all(text[e.start:e.end] == e.text for e in ev)


@given(any_or_structured, st.lists(any_or_structured, max_size=3), any_or_structured)
@example("He treated hundreds of troops.", ["He treated hundreds of troops."], "")
def test_the_support_check_reads_any_claim_and_evidence(claim, quotes, context):
    found = support.check_support(claim, quotes, context=context)
    assert all(isinstance(m, str) and m for m in found.missing)
    assert found.supported == (not found.missing)
    assert specifics.unsupported_specifics(claim, quotes, context) is not None


@given(any_or_structured)
@example("The free trial lasts 30 days.")
@example("He treated hundreds of troops.")
@example("Acme Corp. does not take reservations on Sundays after 5 pm.")
@example("the the the the the the the the the the the trial, not")  # found: comma clauses
@example("Kids under 5 eat free at the weekend buffet, not surprisingly.")
@example("Passage 0 thousand")  # found: the reference took the amount's number
@example("It rose 2 points 5 million times (Passage 3).")
def test_a_claim_is_supported_by_itself(claim):
    assert support.check_support(claim, [claim]).missing == ()
    assert specifics.unsupported_specifics(claim, [claim], claim) == ()
