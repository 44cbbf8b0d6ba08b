"""A Langfuse export -> SourceSpans with OpenInference attributes.

Accepted: what Langfuse's public API returns and its UI exports, as one JSON document or as JSON
lines: traces (`{"id", "timestamp", "name", "input", "output", "metadata", ...}`, optionally with
their `observations` as objects) and observations (`{"id", "traceId", "type", "name",
"startTime", "endTime", "parentObservationId", "input", "output", "model", "metadata"}`), alone,
in a list, or under `data` (an API page).

The trace is the root span (a CHAIN: its input and output are the question and the answer; its
metadata is the trace's, its `sessionId` its `session.id`); an observation is a span under its
parent observation, else under the trace. Its kind: GENERATION is an LLM span (`model` its
model name, input messages and output as messages: a tool's result message with its
`tool_call_id` and `name`, an assistant's `tool_calls` with their ids and names); TOOL a TOOL
span (its output the tool's result; level ERROR marks it failed, `SPAN_FAILED`); RETRIEVER (or
a SPAN named like "retrieve") a RETRIEVER span whose output documents are its
`retrieval.documents`; a SPAN named like "rerank" a RERANKER whose output documents are
its `reranker.output_documents`. A document is a string, or an object with its text under
`page_content`, `pageContent`, `content` or `text` and its id under `id`, `doc_id` or
`metadata.id`; an output may hold the list under `documents`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
from openinference.semconv.trace import (
    DocumentAttributes,
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    RerankerAttributes,
    SpanAttributes,
    ToolCallAttributes,
)

from rt4chart.pipeline.sources.common import SpanDecodeError, as_items, flatten, time_ns
from rt4chart.schemas.spans import SPAN_FAILED, Scalar, SourceSpan

TEXT_KEYS = ("page_content", "pageContent", "content", "text")
ID_KEYS = ("id", "doc_id")
# Top-level trace fields kept as root-span attributes (for --route-attribute and the like).
TRACE_FIELDS = ("name", "userId", "sessionId", "release", "version", "environment")
_KINDS = {
    "GENERATION": OpenInferenceSpanKindValues.LLM.value,
    "RETRIEVER": OpenInferenceSpanKindValues.RETRIEVER.value,
    "AGENT": OpenInferenceSpanKindValues.AGENT.value,
    "TOOL": OpenInferenceSpanKindValues.TOOL.value,
    "CHAIN": OpenInferenceSpanKindValues.CHAIN.value,
    "EMBEDDING": OpenInferenceSpanKindValues.EMBEDDING.value,
    "GUARDRAIL": OpenInferenceSpanKindValues.GUARDRAIL.value,
    "EVALUATOR": OpenInferenceSpanKindValues.EVALUATOR.value,
}
_RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
_RERANKER = OpenInferenceSpanKindValues.RERANKER.value
_LLM = OpenInferenceSpanKindValues.LLM.value


def objects(value: Any) -> Iterator[dict]:
    """The trace and observation objects of a parsed export (list, API page, single)."""
    if isinstance(value, list):
        for item in value:
            yield from objects(item)
    elif isinstance(value, dict) and isinstance(value.get("data"), list) and "id" not in value:
        yield from objects(value["data"])
    elif isinstance(value, dict):
        yield value
    else:
        raise SpanDecodeError(f"not a Langfuse trace or observation: {type(value).__name__}")


def object_spans(obj: dict) -> list[SourceSpan]:
    """The spans of one object: a trace (with its nested observations) or an observation."""
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        raise SpanDecodeError("not a Langfuse trace or observation: no id")
    if "traceId" in obj:
        return [observation_span(obj)]
    spans = [trace_span(obj)]
    for child in obj.get("observations") or ():
        if isinstance(child, dict):  # an API trace lists observations as objects or ids
            spans.append(observation_span({"traceId": obj["id"], **child}))
    return spans


def _value(attributes: dict[str, Scalar], key: str, mime_key: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        attributes[key] = value
    else:
        attributes[key] = orjson.dumps(value, default=str).decode()
        attributes[mime_key] = OpenInferenceMimeTypeValues.JSON.value


def trace_span(trace: dict) -> SourceSpan:
    """A trace as its root (CHAIN) span."""
    attributes: dict[str, Scalar] = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.CHAIN.value}
    question = trace.get("input")
    if isinstance(question, list):  # chat messages: the last user message
        users = [m.get("content") for m in question if isinstance(m, dict)
                 and m.get("role") == "user" and isinstance(m.get("content"), str)]
        question = users[-1] if users else question
    _value(attributes, SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE, question)
    _value(attributes, SpanAttributes.OUTPUT_VALUE, SpanAttributes.OUTPUT_MIME_TYPE,
           trace.get("output"))
    if isinstance(trace.get("metadata"), dict):
        attributes[SpanAttributes.METADATA] = orjson.dumps(trace["metadata"],
                                                          default=str).decode()
    attributes.update({k: trace[k] for k in TRACE_FIELDS
                       if isinstance(trace.get(k), str | int | float)})
    if isinstance(trace.get("sessionId"), str) and trace["sessionId"]:
        attributes[SpanAttributes.SESSION_ID] = trace["sessionId"]
    start = time_ns(trace.get("timestamp"))
    return SourceSpan(trace_id=trace["id"], span_id=trace["id"], parent_id="",
                      name=str(trace.get("name") or ""), start_ns=start, end_ns=0,
                      attributes=as_items(attributes))


def _kind(obs: dict) -> str:
    kind = str(obs.get("type") or "").upper()
    name = str(obs.get("name") or "").lower()
    if kind in ("", "SPAN") and "rerank" in name:
        return _RERANKER
    if kind in ("", "SPAN") and "retriev" in name:
        return _RETRIEVER
    return _KINDS.get(kind, OpenInferenceSpanKindValues.UNKNOWN.value)


def observation_span(obs: dict) -> SourceSpan:
    """An observation as a span under its parent observation, else under its trace."""
    if not isinstance(obs.get("traceId"), str) or not isinstance(obs.get("id"), str):
        raise SpanDecodeError("not a Langfuse observation: no id or traceId")
    kind = _kind(obs)
    attributes: dict[str, Scalar] = {SpanAttributes.OPENINFERENCE_SPAN_KIND: kind}
    if kind == _LLM:
        _llm_attributes(obs, attributes)
    elif kind in (_RETRIEVER, _RERANKER):
        prefix = (SpanAttributes.RETRIEVAL_DOCUMENTS if kind == _RETRIEVER
                  else RerankerAttributes.RERANKER_OUTPUT_DOCUMENTS)
        for i, (doc_id, text) in enumerate(documents(obs.get("output"))):
            attributes[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}"] = text
            if doc_id is not None:
                attributes[f"{prefix}.{i}.{DocumentAttributes.DOCUMENT_ID}"] = doc_id
    else:
        _value(attributes, SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE,
               obs.get("input"))
        _value(attributes, SpanAttributes.OUTPUT_VALUE, SpanAttributes.OUTPUT_MIME_TYPE,
               obs.get("output"))
    if obs.get("level") == "ERROR":  # a failed tool's output is no evidence
        attributes[SPAN_FAILED] = True
    parent = obs.get("parentObservationId") or obs["traceId"]
    return SourceSpan(trace_id=obs["traceId"], span_id=obs["id"], parent_id=str(parent),
                      name=str(obs.get("name") or ""), start_ns=time_ns(obs.get("startTime")),
                      end_ns=time_ns(obs.get("endTime")), attributes=as_items(attributes))


def _messages(value: Any) -> list[dict]:
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, str):
        return [{"role": "assistant", "content": value}]
    if isinstance(value, dict) and "content" in value:
        return [value]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _llm_attributes(obs: dict, attributes: dict[str, Scalar]) -> None:
    if obs.get("model"):
        attributes[SpanAttributes.LLM_MODEL_NAME] = str(obs["model"])
    for prefix, value in ((SpanAttributes.LLM_INPUT_MESSAGES, obs.get("input")),
                          (SpanAttributes.LLM_OUTPUT_MESSAGES, obs.get("output"))):
        for i, message in enumerate(_messages(value)):
            _message_attributes(message, f"{prefix}.{i}.", attributes)


def _message_attributes(message: dict, prefix: str, attributes: dict[str, Scalar]) -> None:
    """One chat message (OpenAI's shape) as OpenInference message attributes: its role, its
    text (a list of text parts joined; a tool's JSON result as JSON text), and what ties a
    tool's result to its call (`tool_call_id`, `name`, an assistant's `tool_calls`)."""
    content = message.get("content")
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [p["text"] for p in content if isinstance(p.get("text"), str)]
        content = "\n".join(texts) if texts else None
    elif isinstance(content, dict | list):
        content = orjson.dumps(content, default=str).decode()
    for key, found in ((MessageAttributes.MESSAGE_ROLE, message.get("role")),
                       (MessageAttributes.MESSAGE_CONTENT, content),
                       (MessageAttributes.MESSAGE_TOOL_CALL_ID, message.get("tool_call_id")),
                       (MessageAttributes.MESSAGE_NAME, message.get("name"))):
        if isinstance(found, str):
            attributes[prefix + key] = found
    calls = message.get("tool_calls")
    for j, call in enumerate(calls if isinstance(calls, list) else ()):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(call.get("id"), str) and isinstance(function, dict) \
                and isinstance(function.get("name"), str):
            call_prefix = f"{prefix}{MessageAttributes.MESSAGE_TOOL_CALLS}.{j}."
            attributes[call_prefix + ToolCallAttributes.TOOL_CALL_ID] = call["id"]
            attributes[call_prefix + ToolCallAttributes.TOOL_CALL_FUNCTION_NAME] = \
                function["name"]


def documents(output: Any) -> list[tuple[str | None, str]]:
    """(id, text) of the documents a retriever observation returned."""
    if isinstance(output, dict) and isinstance(output.get("documents"), list):
        output = output["documents"]
    if not isinstance(output, list):
        return []
    out = []
    for item in output:
        if isinstance(item, str):
            out.append((None, item))
        elif isinstance(item, dict):
            text = next((item[k] for k in TEXT_KEYS if isinstance(item.get(k), str)), None)
            meta = flatten(item.get("metadata")) if isinstance(item.get("metadata"), dict) else {}
            doc_id = next((item[k] for k in ID_KEYS if item.get(k) is not None), meta.get("id"))
            if text is not None:
                out.append((None if doc_id is None else str(doc_id), text))
    return out

