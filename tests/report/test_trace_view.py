"""Trace view pieces without a browser: folding of long contexts, escaping, anchors."""

from __future__ import annotations

from report_dom import parse

from rt4chart.pipeline.report.trace_view import anchor, answer_html, context_html
from rt4chart.transforms.segment import SegmentConfig, prepare
from rt4chart.transforms.validate import parse_trace


def _claim(sentence_index: int, label: str, doc_text: str, quote: str) -> dict:
    start = doc_text.index(quote)
    return {"trace_id": "t", "claim_index": 0, "label": label, "status": "ok",
            "evidence": [{"doc_id": "d", "sentence_index": sentence_index,
                          "char_start": start, "char_end": start + len(quote), "text": quote}]}


def test_long_context_is_folded_around_the_evidence():
    text = " ".join(f"Sentence number {i} is here." for i in range(30))
    prepared = prepare(parse_trace({"trace_id": "t", "answer": "x",
                                    "contexts": [{"doc_id": "d", "text": text}]}),
                       SegmentConfig())
    assert len(prepared.sentences) == 30
    claims = [_claim(15, "CON", text, "Sentence number 15 is here")]
    dom = parse(context_html(prepared, claims, "a"))
    folds = list(dom.find_all("details", cls="fold"))
    assert len(folds) == 2  # before and after the evidence and its neighbours
    visible = [s.attrs["id"] for s in dom.find_all("span", cls="sent")
               if all(s not in f.iter() for f in folds)]
    assert visible == ["a-s14", "a-s15", "a-s16"]
    assert dom.by_id("a-s15").find("mark", cls="evmark").text == "Sentence number 15 is here"


def test_answer_markup_is_escaped_and_anchor_is_id_safe():
    answer = "<b>bold</b> claim."
    html = answer_html(answer, [{"answer_start": 0, "answer_end": len(answer),
                                 "sentence_index": 0, "label": "NIC", "status": "ok"}], "a")
    assert "<b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert anchor("a b<c>") != anchor("a b<d>")
    assert all(ch.isalnum() or ch in "-_" for ch in anchor("a b<c>\"'"))


def test_the_answer_marks_the_words_of_each_claim_not_its_whole_sentence():
    answer = "The trial lasts 30 days and covers all features. It is free."
    lasts = (answer.index("lasts"), answer.index(" and"))
    covers = (answer.index("covers"), answer.index("."))

    def claim(i: int, label: str, spans: list[tuple[int, int]], kind: str = "fact") -> dict:
        return {"claim_index": i, "sentence_index": 0 if i < 3 else 1, "answer_start": 0,
                "answer_end": answer.index(".") + 1, "label": label, "status": "ok",
                "kind": kind, "spans": [{"char_start": s, "char_end": e} for s, e in spans]}

    claims = [claim(0, "CON", [lasts]), claim(1, "ENT", [covers]),
              claim(2, "NIC", [(lasts[0], covers[1])])]
    # A claim of a run without claim spans is marked on its sentence.
    old = {"claim_index": 3, "sentence_index": 1, "answer_start": answer.index("It"),
           "answer_end": len(answer), "label": "NIC", "status": "ok"}
    marks = [(m.text, m.attrs["data-label"])
             for m in parse(answer_html(answer, [*claims, old], "a")).find_all("mark")]
    # Where claims overlap the worst label shows; words no claim restates stay unmarked.
    assert marks == [("CON lasts 30 days", "CON"), ("NIC  and covers all features", "NIC"),
                     ("NIC It is free.", "NIC")]


def test_a_tool_result_is_shown_as_the_tools_and_its_quotes_name_the_tool():
    from rt4chart.pipeline.report.trace_view import _evidence

    text = "Order A17 has shipped with DHL."
    doc_id = "tool:get_order_status#call_1"
    prepared = prepare(parse_trace({"trace_id": "t", "answer": "x", "contexts": [
        {"tool": "get_order_status", "call_id": "call_1", "text": text},
        {"doc_id": "kb", "text": "Orders ship in 2 days."}]}), SegmentConfig())
    claim = _claim(0, "ENT", text, "Order A17 has shipped")
    claim["evidence"][0]["doc_id"] = doc_id
    headings = [h.text for h in parse(context_html(prepared, [claim], "a")).find_all("h5")]
    assert headings[0].startswith(f"Result of tool get_order_status: Document {doc_id}")
    assert headings[1].startswith("Document kb")
    sentences = {s.index: s for s in prepared.sentences}
    assert [e["tool"] for e in _evidence(claim, sentences)] == ["get_order_status"]
