"""Where a context document sits in its trace's spans (`span_attributes.document_sources`, the
rule that made the contexts) and the document annotations a verdict gives (verdicts.py), with
no server: the positions Phoenix names documents by, merged retrievers, a reranker's list."""

from __future__ import annotations

from rt4chart.pipeline.annotate.verdicts import TraceVerdict, document_annotations
from rt4chart.transforms.common.span_attributes import document_sources
from rt4chart.transforms.common.span_mapping import SpanMapping, trace_record

from span_builders import docs, retriever, span

ROOT = span("root", kind="CHAIN", start=1_000, end=2_000, input__value="Q?",
            output__value="A.")


def test_places_are_each_retrievers_positions_and_agree_with_the_contexts():
    first = retriever("r1", ("a", "Alpha."), (None, "Beta."), start=10)
    # r2 lists a document r1 has (one context, two places) and one without content (a gap
    # that still takes a position in Phoenix's list).
    second = span("r2", "root", "RETRIEVER", 20, 25, **{
        "retrieval__documents__0__document__id": "x",
        "retrieval__documents__1__document__content": "Gamma.",
        "retrieval__documents__2__document__id": "a",
        "retrieval__documents__2__document__content": "Alpha."})
    sources = document_sources([ROOT, second, first])
    record = trace_record([ROOT, first, second], SpanMapping())
    assert [{"doc_id": d.doc_id, "text": d.text} for d in sources] == record["contexts"]
    assert [(d.doc_id, d.places) for d in sources] == [
        ("a", (("r1", 0), ("r2", 2))), ("doc1", (("r1", 1),)), ("doc2", (("r2", 1),))]


def test_a_rerankers_list_is_kept_as_it_is_a_document_twice_is_two_contexts():
    reranker = span("rr", "root", "RERANKER", 30, 35, **{
        k.replace(".", "__"): v for k, v in docs(
            "reranker.output_documents", ("b", "Same."), ("b", "Same.")).items()})
    sources = document_sources([ROOT, retriever("r1", ("b", "Same.")), reranker])
    assert [(d.doc_id, d.places) for d in sources] == [("b", (("rr", 0),)),
                                                        ("b~2", (("rr", 1),))]


def test_no_retriever_is_a_problem_and_no_place():
    problems: list[str] = []
    assert document_sources([ROOT], problems) == [] and "no retriever span" in problems[0]


def _claim(i: int, label: str, *evidence: tuple[str, int, str]) -> dict:
    return {"claim_index": i, "claim": f"Claim {i}.", "label": label,
            "evidence": [{"doc_id": d, "sentence_index": s, "char_start": 0, "char_end": len(t),
                          "text": t} for d, s, t in evidence]}


def test_one_annotation_per_cited_documents_place_with_the_claims_and_their_roles():
    verdict = TraceVerdict(
        {"trace_id": "t", "judge_model": "m", "prompt_hash": "h"},
        (_claim(0, "ENT", ("a", 0, "Alpha.")), _claim(1, "CON", ("a", 0, "Alpha."),
                                                     ("c", 2, "Gamma.")),
         _claim(2, "NIC"), _claim(3, "ENT", ("gone", 0, "Lost."))))
    places = {"a": (("r1", 0), ("r2", 2)), "c": (("r2", 1),), "unused": (("r1", 5),)}
    bodies = document_annotations(verdict, places, "audit")
    got = sorted((b["span_id"], b["document_position"], b["result"]["label"],
                  b["result"]["score"], b["metadata"]["claims"]) for b in bodies)
    assert got == [("r1", 0, "supports and contradicts", 2.0, [0, 1]),
                   ("r2", 1, "contradicts", 1.0, [1]),
                   ("r2", 2, "supports and contradicts", 2.0, [0, 1])]
    assert {b["name"] for b in bodies} == {"audit evidence"}
    assert {b["identifier"] for b in bodies} == {""}  # Phoenix refuses another identifier
    (c_note,) = [b for b in bodies if b["metadata"]["doc_id"] == "c"]
    assert c_note["result"]["explanation"] == 'claim 1 [CON] "Claim 1.": sentence 2 "Gamma."'
