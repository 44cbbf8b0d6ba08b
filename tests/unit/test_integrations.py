"""rt4chart.integrations.trace_from_response without the frameworks: objects of LlamaIndex's and
LangChain's shapes (the real ones: tests/integration/test_app_traces.py) become trace records
holding exactly the answer and the documents they carry, in order; what cannot be read for
certain is refused; importing rt4chart imports neither framework."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rt4chart.integrations import trace_from_response
from rt4chart.transforms.validate import parse_trace


@dataclass
class Node:  # llama_index.core.schema.TextNode's reading surface
    node_id: str
    text: str

    def get_content(self) -> str:
        return self.text


@dataclass
class NodeWithScore:
    node: Node
    score: float | None = None

    def get_content(self) -> str:
        return self.node.get_content()


@dataclass
class Response:  # llama_index.core.base.response.schema.Response
    response: str | None
    source_nodes: list


@dataclass
class StreamingResponse:
    response_gen: object
    source_nodes: list
    response_txt: str | None = None


@dataclass
class Document:  # langchain_core.documents.Document
    page_content: str
    id: str | None = None


@dataclass
class AIMessage:
    content: object


TEXTS = st.text(min_size=1, max_size=40).filter(str.strip)
DOCS = st.lists(st.tuples(st.one_of(st.none(), st.text(st.characters(categories=["L", "N"]),
                                                        min_size=1, max_size=8)), TEXTS),
                min_size=0, max_size=6)


@given(DOCS, TEXTS, TEXTS)
def test_a_llama_index_response_gives_its_answer_and_nodes_in_order(docs, question, answer):
    nodes = [NodeWithScore(Node(doc_id or "", text), 0.5) for doc_id, text in docs]
    record = trace_from_response(Response(answer, nodes), question=question, trace_id="t1")
    assert (record["question"], record["answer"], record["trace_id"]) == (question, answer, "t1")
    assert [c["text"] for c in record["contexts"]] == [text for _, text in docs]
    assert [c["doc_id"] for c in record["contexts"]] == [
        doc_id or f"doc{i}" for i, (doc_id, _) in enumerate(docs)]


@given(DOCS, TEXTS, TEXTS, st.sampled_from([("context", "answer", "input"),
                                            ("source_documents", "result", "query"),
                                            ("documents", "output", "question")]))
def test_a_langchain_result_gives_its_answer_question_and_documents(docs, question, answer,
                                                                    keys):
    doc_key, answer_key, question_key = keys
    result = {doc_key: [Document(text, doc_id) for doc_id, text in docs],
              answer_key: answer, question_key: question}
    record = trace_from_response(result, route="r")
    assert (record["question"], record["answer"], record["route"]) == (question, answer, "r")
    assert [(c["doc_id"], c["text"]) for c in record["contexts"]] == [
        (doc_id or f"doc{i}", text) for i, (doc_id, text) in enumerate(docs)]


def test_a_record_passes_the_trace_schema_and_gets_a_fresh_otel_like_id():
    first = trace_from_response(Response("8 am.", [NodeWithScore(Node("h", "8 am."))]),
                                question="When?")
    second = trace_from_response({"answer": AIMessage("8 am."), "input": "When?",
                                  "context": [Document("8 am.")]})
    assert len({first["trace_id"], second["trace_id"]}) == 2
    assert all(len(r["trace_id"]) == 32 for r in (first, second))
    assert second["answer"] == "8 am."  # a chat model's message: its content
    for record in (first, second):
        parse_trace(record)  # what rt4chart's reader takes (ValueError otherwise)


def test_the_same_value_under_two_keys_is_one():
    docs = [Document("x")]
    record = trace_from_response({"context": docs, "source_documents": list(docs),
                                  "answer": "x", "result": "x", "input": "q"})
    assert record["contexts"] == [{"doc_id": "doc0", "text": "x"}]


@pytest.mark.parametrize("response, kwargs, why", [
    (Response("a", []), {}, "does not keep its question"),
    (Response(None, []), {"question": "q"}, "no text answer"),
    (StreamingResponse(iter(()), []), {"question": "q"}, "streaming"),
    (Response("a", [NodeWithScore(Node("n", None))]), {"question": "q"}, "no text"),
    (Response("a", "not a list"), {"question": "q"}, "must be a list"),
    ({"answer": "a", "result": "b", "context": [], "input": "q"}, {}, "different answers"),
    ({"answer": "a", "context": [Document("x")], "documents": [Document("y")], "input": "q"},
     {}, "different document lists"),
    ({"answer": "a", "context": "x, y", "input": "q"}, {}, "must be a list"),
    ({"answer": "a", "context": [{"text": "x"}], "input": "q"}, {}, "no page_content"),
    ({"context": [], "input": "q"}, {}, "no answer"),
    ({"answer": "a", "input": "q"}, {}, "no document list"),
    ({"answer": "a", "context": []}, {}, "no question"),
    ({"answer": AIMessage(["part"]), "context": [], "input": "q"}, {}, "not text"),
    ("an answer", {"question": "q"}, "not a LlamaIndex Response"),
])
def test_what_cannot_be_read_for_certain_is_refused(response, kwargs, why):
    with pytest.raises(ValueError, match=why):
        trace_from_response(response, **kwargs)


def test_an_empty_retrieval_is_kept_for_the_audit_to_judge():
    record = trace_from_response(Response("8 am.", []), question="When?")
    assert record["contexts"] == []


def test_importing_rt4chart_imports_no_framework():
    code = ("import sys, rt4chart, rt4chart.integrations, rt4chart.testing\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('llama_index', 'langchain', 'langchain_core', 'opentelemetry')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "[]"
