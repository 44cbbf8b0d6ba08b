"""A claim without a content word (only short tokens or stopwords) has no word to share with
its quotes: a quote is evidence for it only if it says the claim's own words, in order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms import segment
from rt4chart.transforms.checks import evidence
from rt4chart.transforms.text.words import content_words


def _rendered(*docs: str):
    trace = Trace("t", "r", 0, "", tuple(Document(f"d{i}", d) for i, d in enumerate(docs)), "A.")
    return segment.render_context(segment.prepare(trace, segment.SegmentConfig()))


@pytest.mark.parametrize(("docs", "claim", "quote", "label"), [
    (["ID: XR"], "ID: XR", "ID: XR", "ENT"),                       # the claim quoted
    (["Paris is in France. It is."], "It is.", "It is.", "ENT"),
    (["Paris is in France."], "It is.", "Paris is in France.", "NIC"),  # unrelated quote
    (["Go to A. Go to B."], "Go to A.", "Go to B.", "NIC"),          # other short words
])
def test_a_contentless_claim_needs_its_own_words_quoted(docs, claim, quote, label):
    assert content_words(claim) == frozenset()
    got, _, note, _ = evidence.grounded_verdict(("ENT", [quote]), _rendered(*docs), claim)
    assert got == label, note


@given(st.sampled_from(["it is", "so do we", "to be or not", "OK: no", "as is"]),
       st.sampled_from(["The bridge opened in 1932.", "Water boils at 100 degrees."]))
def test_a_contentless_claim_is_never_entailed_by_a_quote_without_its_words(claim, doc):
    assert not content_words(claim)
    got = evidence.grounded_verdict(("ENT", [doc]), _rendered(doc), claim)[0]
    assert got == "NIC"
