"""Evidence is only what the documents say: the header lines rt4chart puts above each document
(their numbers and doc ids), the separators and the question are never evidence, for the
grounding of quotes, the support check's pool or the offline judge (issue 21, defect 1)."""

from __future__ import annotations

import asyncio

import pytest

from rt4chart.schemas.records import Document, Trace
from rt4chart.transforms.checks.evidence import align, document_text, grounded_verdict
from rt4chart.transforms.checks.specifics import supported_verdict
from rt4chart.transforms.judges.base import Verdict
from rt4chart.transforms.judges.offline.judge import OfflineJudge
from rt4chart.transforms.segment import SegmentConfig, prepare, render_context, render_window
from rt4chart.transforms.text.headers import HEADER_RE, blank_headers, document_header

FIVE = ("Shipping is free.", "Returns take a week.", "The free trial lasts 14 days.",
        "Support is open.", "Refunds go to the card.")


def _rendered(docs: list[tuple[str, str]], question: str = ""):
    trace = Trace("t", "r", 0, question, tuple(Document(i, t) for i, t in docs), "")
    return render_context(prepare(trace, SegmentConfig(25, 10)))


FIVE_DOCS = _rendered([(f"doc{i}", t) for i, t in enumerate(FIVE)])
KB_30 = _rendered([("kb-30", "The free trial lasts 14 days.")])


def test_a_quote_that_needs_a_header_is_not_found():
    assert "[Document 3: doc2]" in FIVE_DOCS.text
    for quote in ("[Document 3: doc2]", "Document 3: doc2] The free trial lasts 14 days.",
                  "kb-30] The free trial lasts 14 days", "Document 1"):
        rendered = KB_30 if "kb-30" in quote else FIVE_DOCS
        assert align([quote], rendered) == ((), 1), quote


def test_document_text_is_still_found_across_sentences_and_documents():
    (ev,), missing = align(["The free trial lasts 14 days."], FIVE_DOCS)
    assert missing == 0 and (ev.doc_id, ev.start, ev.text) == ("doc2", 0,
                                                               "The free trial lasts 14 days")
    evidence, missing = align(["Shipping is free. Returns take a week."], FIVE_DOCS)
    assert missing == 0 and [e.doc_id for e in evidence] == ["doc0", "doc1"]


def test_a_window_aligns_as_before():
    trace = Trace("t", "r", 0, "", (Document("d", " ".join(FIVE)),), "")
    prepared = prepare(trace, SegmentConfig(2, 1))
    window = render_window(prepared, prepared.windows[1])
    evidence, missing = align(["Returns take a week. The free trial lasts 14 days."], window)
    assert missing == 0 and [e.sentence_index for e in evidence] == [1, 2]


def test_the_support_pool_holds_the_documents_only():
    pool = document_text(FIVE_DOCS)
    assert "Document" not in pool and "doc2" not in pool
    assert pool.splitlines() == list(FIVE)


@pytest.mark.parametrize("rendered, claim", [
    (FIVE_DOCS, "The free trial lasts 3 days."),
    (KB_30, "The free trial lasts 30 days."),
    (_rendered([("price-$49", "The plan costs $29 a month.")]), "The plan costs $49 a month."),
])
def test_a_number_in_a_header_or_doc_id_does_not_support_a_claim(rendered, claim):
    quote = "The plan costs $29 a month." if "plan" in claim else "The free trial lasts 14 days."
    grounded = grounded_verdict(Verdict("ENT", (quote,)), rendered, claim)
    assert grounded[0] == "ENT"  # the quote is real and about the claim
    label, evidence, note, _ = supported_verdict(grounded, claim, document_text(rendered))
    assert (label, evidence) == ("NIC", ()) and note.startswith("ENT overturned: evidence lacks")


def test_the_question_is_not_in_the_pool():
    rendered = _rendered([("policy", "The free trial lasts 14 days.")], "Is it 30 days?")
    claim = "The free trial lasts 30 days."
    grounded = grounded_verdict(Verdict("ENT", ("The free trial lasts 14 days.",)), rendered,
                                claim)
    assert supported_verdict(grounded, claim, document_text(rendered))[0] == "NIC"


def test_headers_are_blanked_in_place_and_a_doc_id_cannot_break_its_line():
    assert document_header(2, "kb\n30\r\nx") == "[Document 2: kb 30  x]\n"
    blanked = blank_headers(FIVE_DOCS.text)
    assert len(blanked) == len(FIVE_DOCS.text) and "Document" not in blanked
    assert blanked.split() == " ".join(FIVE).split()
    assert len(HEADER_RE.findall(FIVE_DOCS.text)) == 5


@pytest.mark.parametrize("rendered, claim", [
    (FIVE_DOCS, "The free trial lasts 3 days."),
    (_rendered([(f"doc{i}", t) for i, t in enumerate(FIVE)] + [("doc5", "Open daily.")]),
     "The free trial lasts 6 days."),
    (KB_30, "The free trial lasts 30 days."),
    (_rendered([("2019", "The shop opened in 2004.")]), "The shop opened in 2019."),
])
def test_the_offline_judge_reads_no_header(rendered, claim):
    judge = OfflineJudge()
    verdict = asyncio.run(judge.verify_global(claim, rendered.text, "", "NIC", None))
    assert verdict.label != "ENT"
    assert not any("Document" in q for q in verdict.quotes)


def test_the_offline_absence_check_reads_no_header():
    claim = "The passages do not mention kb-30."
    absence = asyncio.run(OfflineJudge().verify_absence(claim, KB_30.text, ""))
    assert (absence.label, absence.quotes) == ("ENT", ())
