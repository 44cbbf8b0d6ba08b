"""Which span gives what: the rule that maps a traced RAG request's spans onto the trace schema
(transforms/common/span_mapping.py), without a pipeline."""

from __future__ import annotations

import json

import pytest

from rt4chart.schemas.spans import SourceSpan
from rt4chart.transforms.assemble import assemble
from rt4chart.transforms.common.span_mapping import (
    SpanMapping,
    Unassembled,
    span_depths,
    trace_record,
)

from span_builders import TRACE, docs, retriever, span

ROOT = span("root", kind="CHAIN", start=1_000, end=1_714_555_800_123_456_789,
            resource={"service.name": "support-bot"}, input__value="How long is the trial?",
            output__value="It lasts 14 days.")
RETRIEVER = retriever("r1", ("policy", "The trial lasts 14 days."))


def test_question_answer_contexts_route_and_time_from_the_root_chain_and_retriever():
    record = trace_record([RETRIEVER, ROOT], SpanMapping())
    assert record == {
        "trace_id": TRACE, "route": "support-bot", "timestamp": "2024-05-01T09:30:00.123456Z",
        "question": "How long is the trial?", "answer": "It lasts 14 days.",
        "contexts": [{"doc_id": "policy", "text": "The trial lasts 14 days."}],
    }


def test_reranker_output_is_what_the_generator_got_over_the_retrievers():
    reranker = span("rr", "root", "RERANKER", 20, 25, **{
        k.replace(".", "__"): v for k, v in docs(
            "reranker.output_documents", ("b", "Second passage."), ("a", "First.")).items()})
    record = trace_record([ROOT, RETRIEVER, reranker], SpanMapping())
    assert record["contexts"] == [{"doc_id": "b", "text": "Second passage."},
                                  {"doc_id": "a", "text": "First."}]


def test_several_retrievers_give_their_documents_in_start_order_each_once():
    second = retriever("r2", ("policy", "The trial lasts 14 days."), ("faq", "Ask us."),
                       (None, "No id here."), start=30)
    other = retriever("r3", ("policy", "A different text under the same id."), start=40)
    record = trace_record([other, second, RETRIEVER, ROOT], SpanMapping())
    assert record["contexts"] == [
        {"doc_id": "policy", "text": "The trial lasts 14 days."},
        {"doc_id": "faq", "text": "Ask us."},
        {"doc_id": "doc2", "text": "No id here."},
        {"doc_id": "policy~2", "text": "A different text under the same id."},
    ]


def test_without_chain_values_the_llm_messages_give_question_and_answer_and_model():
    root = span("root", kind="AGENT", start=1, end=9)
    llm = span("llm", "root", "LLM", 2, 8, llm__model_name="gpt-x", **{
        "llm__input_messages__0__message__role": "system",
        "llm__input_messages__0__message__content": "Be brief.",
        "llm__input_messages__1__message__role": "user",
        "llm__input_messages__1__message__content": "How long?",
        "llm__output_messages__0__message__role": "assistant",
        "llm__output_messages__0__message__content": "14 days."})
    record = trace_record([root, llm, RETRIEVER], SpanMapping())
    assert (record["question"], record["answer"], record["generator"]) == (
        "How long?", "14 days.", "gpt-x")


def test_json_values_give_their_question_and_answer_entries():
    root = span("root", kind="CHAIN", start=1, end=9,
                input__value=json.dumps({"chat_history": [], "question": "Why?"}),
                input__mime_type="application/json",
                output__value=json.dumps({"answer": "Because.", "sources": ["a"]}),
                output__mime_type="application/json")
    record = trace_record([root, RETRIEVER], SpanMapping())
    assert (record["question"], record["answer"]) == ("Why?", "Because.")


def test_the_shallowest_chain_gives_the_answer_under_a_non_chain_root():
    http = span("http", start=1, end=9, resource={"service.name": "api"})
    chain = span("chain", "http", "CHAIN", 2, 8, input__value="Q", output__value="A")
    inner = span("inner", "chain", "CHAIN", 3, 7, input__value="rewritten Q",
                 output__value="draft")
    record = trace_record([inner, http, chain, retriever("r", ("d", "Text."))], SpanMapping())
    assert (record["question"], record["answer"], record["route"]) == ("Q", "A", "api")


def test_configured_attributes_give_trace_id_and_route_and_metadata_gives_task():
    root = span("root", kind="CHAIN", start=1, end=9, input__value="Q", output__value="A",
                session__id="s-1", metadata=json.dumps(
                    {"request_id": "req-7", "task": "QA", "tier": 2}))
    record = trace_record([root, RETRIEVER], SpanMapping("session.id", "metadata.request_id"))
    assert (record["trace_id"], record["route"], record["task"]) == ("req-7", "s-1", "QA")
    # The session id is kept as the metadata's session_id (issue 50).
    assert record["metadata"] == {"request_id": "req-7", "tier": "2", "session_id": "s-1"}
    # Not found: the OTel trace id and no route (the schema's default).
    record = trace_record([root, RETRIEVER], SpanMapping("missing", "metadata.missing"))
    assert record["trace_id"] == TRACE and "route" not in record


@pytest.mark.parametrize(("spans", "reasons"), [
    ([ROOT], ["no retriever span"]),
    ([span("root", kind="CHAIN", input__value="Q"), RETRIEVER], ["no answer"]),
    ([span("root", kind="CHAIN", input__value="Q")], ["no retriever span", "no answer"]),
    # documents returned, their content not recorded: nothing to audit against
    ([ROOT, span("r", "root", "RETRIEVER", retrieval__documents__0__document__id="d1")],
     ["no documents"]),
    ([RETRIEVER], ["no root span"]),
])
def test_a_trace_that_cannot_be_audited_says_why(spans, reasons):
    with pytest.raises(Unassembled) as caught:
        trace_record(spans, SpanMapping())
    assert [r.split(":")[0] for r in str(caught.value).split("; ")] == reasons


def test_a_retriever_that_returned_nothing_is_an_empty_retrieval_not_a_dead_letter():
    # The answer can only come from the model's memory: audited with contexts [] (every
    # checkable claim NIC, "nothing was retrieved"), not thrown away.
    record = trace_record([ROOT, span("r", "root", "RETRIEVER", 5, 6)], SpanMapping())
    assert record["contexts"] == [] and record["answer"] == "It lasts 14 days."
    record, letter = assemble(TRACE, [ROOT, span("r", "root", "RETRIEVER", 5, 6)],
                              SpanMapping())
    assert letter is None and record["contexts"] == []


def test_assemble_dead_letters_under_the_audited_id_and_dedupes_redelivered_spans():
    root = span("root", kind="CHAIN", input__value="Q",
                metadata=json.dumps({"trace_id": "mine"}))
    record, letter = assemble(TRACE, [root, root], SpanMapping(trace_id_attribute=(
        "metadata.trace_id")))
    assert record is None and letter.stage == "assemble" and letter.trace_id == "mine"
    assert len(json.loads(letter.raw)) == 1
    record, letter = assemble(TRACE, [ROOT, RETRIEVER, RETRIEVER, ROOT], SpanMapping())
    assert letter is None and record["contexts"] == [
        {"doc_id": "policy", "text": "The trial lasts 14 days."}]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"trace_gap_s": 0}, "--trace-gap"), ({"route_attribute": ""}, "--route-attribute"),
    ({"trace_id_attribute": ""}, "--trace-id-attribute"),
])
def test_bad_mapping_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SpanMapping(**kwargs)


class _CountingSpan(SourceSpan):
    """A span that counts how often its parent is read: the work of walking the span tree."""

    reads = 0

    def __getattribute__(self, name):
        if name == "parent_id":
            type(self).reads += 1
        return super().__getattribute__(name)


def _chain(n: int, cls: type[SourceSpan] = SourceSpan) -> list[SourceSpan]:
    """A root CHAIN span and n - 1 CHAIN spans, each the child of the one before; the last
    holds the documents."""
    spans = [cls(TRACE, f"s{i}", f"s{i - 1}" if i else "", f"s{i}", i, i + 1,
                 (("openinference.span.kind", "CHAIN"),)) for i in range(n - 1)]
    spans[0] = span("s0", kind="CHAIN", start=0, end=1, output__value="A.")
    spans.append(retriever(f"s{n - 1}", (None, "doc")))
    return spans


@pytest.mark.parametrize("n", [1_000, 4_000])
def test_the_span_tree_walk_reads_each_parent_a_bounded_number_of_times(n):
    """Counted, not timed: the walk from every chain span up to the root read n²/2 parents."""
    _CountingSpan.reads = 0
    record = trace_record(_chain(n, _CountingSpan), SpanMapping())
    assert record["answer"] == "A."
    assert _CountingSpan.reads <= 4 * n


def test_span_depths_are_hops_to_the_root_and_detached_or_cyclic_spans_are_deepest():
    parents = {"r": "", "a": "r", "b": "a", "c": "b", "x": "gone", "y": "x",
               "p": "q", "q": "p", "self": "self", "under": "p"}
    assert span_depths(parents) == {"r": 0, "a": 1, "b": 2, "c": 3, **dict.fromkeys(
        ("x", "y", "p", "q", "self", "under"), len(parents) + 1)}


class _CountingParents(dict):
    lookups = 0

    def __getitem__(self, key):
        type(self).lookups += 1
        return super().__getitem__(key)

    def __contains__(self, key):
        type(self).lookups += 1
        return super().__contains__(key)


@pytest.mark.parametrize("n", [1_000, 10_000, 100_000])
def test_span_depths_look_up_each_parent_a_bounded_number_of_times(n):
    parents = _CountingParents({f"s{i}": f"s{i - 1}" if i else "" for i in range(n)})
    _CountingParents.lookups = 0
    depths = span_depths(parents)
    assert depths[f"s{n - 1}"] == n - 1
    assert _CountingParents.lookups <= 3 * n


def test_a_cycle_of_chain_spans_beside_the_root_does_not_hang_and_the_root_chain_wins():
    spans = [span("root", kind="CHAIN", output__value="root answer"), RETRIEVER,
             span("p", "q", "CHAIN", output__value="p"), span("q", "p", "CHAIN",
                                                               output__value="q")]
    assert trace_record(spans, SpanMapping())["answer"] == "root answer"
