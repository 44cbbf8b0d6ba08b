"""A RAG framework's answer -> an rt4chart trace record, for tests and scripts that hold the
framework's response object rather than its spans.

    from rt4chart.integrations import trace_from_response

    response = query_engine.query(question)            # LlamaIndex: a Response
    record = trace_from_response(response, question=question, route="library-faq")

    result = chain.invoke(question)                     # LangChain: {"context": [...], ...}
    record = trace_from_response(result, route="pass-desk")

The record holds what the application used: the answer it returned and the documents it
generated it from (LlamaIndex: `response.source_nodes`, each node's id and text as
OpenInference's instrumentation records them; LangChain: the result's `context`,
`source_documents` or `documents` list, each document's `page_content` and its `id`, else
`doc<N>`). Neither framework is imported: the objects are read by their attributes, so
importing rt4chart never imports LlamaIndex or LangChain.

Nothing is guessed: an object of neither shape, an answer that is not text, a document without
text, or a LangChain result that names its documents or its answer under two keys with
different values is refused with a ValueError naming what is wrong. An empty retrieval is kept
as `contexts: []`: the audit, not this helper, decides what it means.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

# Where LangChain's retrieval chains put what they return: `create_retrieval_chain` and LCEL
# examples ("context", "answer", "input"), RetrievalQA ("source_documents", "result",
# "query"), others ("documents", "output", "question").
DOCUMENT_KEYS = ("context", "source_documents", "documents")
ANSWER_KEYS = ("answer", "result", "output")
QUESTION_KEYS = ("input", "question", "query")


def trace_from_response(response: Any, *, question: str | None = None,
                        trace_id: str | None = None, route: str | None = None,
                        **fields: Any) -> dict[str, Any]:
    """The trace record of one answer of a LlamaIndex query engine or a LangChain chain.

    Args:
        response: a LlamaIndex `Response` (it has `source_nodes`), or a LangChain chain's
            result: a mapping holding the answer and its source documents.
        question: the question asked; required for LlamaIndex (its Response does not keep
            it), read from a LangChain result's `input`/`question`/`query` when not given.
        trace_id: the record's id; default a new random 32-hex-digit id.
        route: the application or endpoint (rates are grouped by it); default "default".
        **fields: other trace fields, as given (`timestamp`, `task`, `generator`,
            `metadata`: docs/traces.md).

    Returns:
        A trace record (dict) for `rt4chart.audit`, an Auditor or a JSONL trace file.

    Raises:
        ValueError: the response is of neither shape, or what it holds is not one answer with
            its documents (the message says which part).
    """
    if hasattr(response, "source_nodes") and not isinstance(response, Mapping):
        if question is None:
            raise ValueError("a LlamaIndex Response does not keep its question: pass "
                             "question=...")
        answer, contexts = _llama_index(response)
    elif isinstance(response, Mapping):
        answer, contexts = _langchain(response)
        question = _langchain_question(response) if question is None else question
    else:
        raise ValueError(f"not a LlamaIndex Response (no source_nodes) nor a LangChain result "
                         f"(a mapping): {type(response).__name__}")
    if not isinstance(question, str):
        raise ValueError(f"the question must be text, got {type(question).__name__}")
    record = {"trace_id": trace_id or uuid.uuid4().hex, "route": route,
              "question": question, "contexts": contexts, "answer": answer, **fields}
    return {k: v for k, v in record.items() if v is not None}


def _llama_index(response: Any) -> tuple[str, list[dict[str, str]]]:
    """(answer, contexts) of a LlamaIndex Response."""
    if hasattr(response, "response_gen") and getattr(response, "response_txt", None) is None:
        raise ValueError("a streaming LlamaIndex response not read yet: call "
                         ".get_response() first")
    answer = getattr(response, "response", None)
    if answer is None:
        answer = getattr(response, "response_txt", None)
    if not isinstance(answer, str):
        raise ValueError("the LlamaIndex response holds no text answer (response is "
                         f"{type(answer).__name__})")
    nodes = _sequence(response.source_nodes, "source_nodes")
    contexts = []
    for position, item in enumerate(nodes):
        node = getattr(item, "node", item)  # NodeWithScore wraps the node
        getter = getattr(item, "get_content", None) or getattr(node, "get_content", None)
        text = getter() if callable(getter) else getattr(node, "text", None)
        if not isinstance(text, str):
            raise ValueError(f"source node {position} has no text")
        doc_id = getattr(node, "node_id", None) or getattr(item, "node_id", None)
        contexts.append({"doc_id": str(doc_id) if doc_id else f"doc{position}", "text": text})
    return answer, contexts


def _only(result: Mapping, keys: tuple[str, ...], what: str) -> Any:
    """The one value `result` holds under `keys` (the same value under several is one)."""
    found = [(k, result[k]) for k in keys if result.get(k) is not None]
    if not found:
        raise ValueError(f"the LangChain result has no {what} (none of "
                         f"{', '.join(keys)}; it has {', '.join(map(str, result))})")
    if any(value != found[0][1] for _, value in found[1:]):
        raise ValueError(f"the LangChain result holds different {what}s under "
                         f"{' and '.join(k for k, _ in found)}: which one is meant is not "
                         "guessed")
    return found[0][1]


def _langchain(result: Mapping) -> tuple[str, list[dict[str, str]]]:
    """(answer, contexts) of a LangChain chain's result."""
    answer = _only(result, ANSWER_KEYS, "answer")
    content = getattr(answer, "content", None)  # a chat model's message, not parsed to text
    answer = content if content is not None and not isinstance(answer, str) else answer
    if not isinstance(answer, str):
        raise ValueError(f"the LangChain answer is not text: {type(answer).__name__}")
    documents = _sequence(_only(result, DOCUMENT_KEYS, "document list"), "documents")
    contexts = []
    for position, doc in enumerate(documents):
        text = getattr(doc, "page_content", None)
        if not isinstance(text, str):
            raise ValueError(f"document {position} has no page_content text "
                             f"({type(doc).__name__})")
        doc_id = getattr(doc, "id", None)
        contexts.append({"doc_id": str(doc_id) if doc_id else f"doc{position}", "text": text})
    return answer, contexts


def _langchain_question(result: Mapping) -> str:
    question = _only(result, QUESTION_KEYS, "question")
    if not isinstance(question, str):
        raise ValueError("the LangChain result's question is not text "
                         f"({type(question).__name__}): pass question=...")
    return question


def _sequence(value: Any, what: str) -> Sequence:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise ValueError(f"{what} must be a list, got {type(value).__name__}")
    return value
