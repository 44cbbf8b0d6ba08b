"""The spans of one traced RAG request -> one trace record in rt4chart's input schema.

The rule (docs/sources.md tells it with examples), on OpenInference attribute names:

- root: the span without a parent (the earliest to start, if several). A trace without one is
  not assembled. Its end time (else its start time) is the trace's timestamp.
- the chain span: the shallowest CHAIN or AGENT span (ties: the earliest to start), else the
  root. Its `input.value` is the question and its `output.value` the answer; a JSON value
  (`*.mime_type` application/json) gives the first text under QUESTION_KEYS / ANSWER_KEYS.
- the generator: the LLM span that ends last. Without a chain `input.value` the question is
  the content of its last user input message (else empty); without a chain `output.value` the
  answer is the content of its first output message (else there is no answer). In an agent
  trace (tools were called, `agent_spans.is_agent`) the generator's messages come first and
  the chain's values are the fallback: an agent framework's chain values are its state. Its
  `llm.model_name` is the trace's `generator` unless the metadata names one.
- contexts: the documents actually passed to the generator. If a RERANKER span has output
  documents, those of the reranker that ends last (`reranker.output_documents`); else the
  `retrieval.documents` of every RETRIEVER span, in start order, the same document (id and
  content) once. Retriever spans that list no document at all returned nothing: the contexts
  are empty (an empty retrieval, audited); documents listed without content are a problem.
  A document's id is `document.id` (else `doc<N>` by position; an id taken
  twice by different contents gets `~2`, `~3`, ...) and its text `document.content`. In an
  agent trace, then the tool results the generator saw (`agent_spans.tool_contexts`, ids
  `tool:NAME#CALL`); an agent trace with neither documents nor tool results has no contexts
  (an empty retrieval), not a dead letter.
- conversation: the generator's user messages before its last one (`agent_spans`), the
  user's earlier turns: the user's setting, never evidence. Assistant messages are neither.
  The first `session.id` of the root, the chain span or any span is the metadata's
  `session_id`.
- trace_id: the source's trace id (OTel: 32 lowercase hex digits), unless
  `trace_id_attribute` is given and found; route: `route_attribute` (default service.name).
  An attribute name is looked up in the metadata when it starts with `metadata.`, then on the
  root span, then on the chain span, then on the root's resource.
- metadata: the root's (else the chain span's) `metadata` attribute, a JSON object, as text
  values; its `task` and `generator` entries become those fields of the trace.

A trace holding a stand-in for a span that could not be read (`UNREADABLE_SPAN`: the span is
a dead letter of its own) is not whole and is not assembled. A trace that is not an agent's
without a retriever (or reranker) span or with documents whose content is not recorded, and
any trace without an answer, raises `Unassembled` with every reason that applies.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)

from rt4chart.schemas.spans import UNREADABLE_SPAN, SourceSpan
from rt4chart.transforms.common.agent_spans import (
    add_metadata,
    earlier_user_turns,
    final_generator,
    is_agent,
    session_id,
    tool_contexts,
    with_tools,
)
from rt4chart.transforms.common.options_spec import Flex, option
from rt4chart.transforms.common.span_attributes import (
    document_contexts,
    indexed,
    kind,
    unique_spans,
)

SERVICE_NAME = "service.name"  # OpenTelemetry's resource attribute naming the application
METADATA_PREFIX = SpanAttributes.METADATA + "."
QUESTION_KEYS = ("question", "query", "input", "user_input", "text")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "content")
# Metadata entries that are trace fields, not metadata.
FIELD_KEYS = ("task", "generator")

_CHAIN_KINDS = (OpenInferenceSpanKindValues.CHAIN.value, OpenInferenceSpanKindValues.AGENT.value)
_LLM = OpenInferenceSpanKindValues.LLM.value
_EMBEDDING = OpenInferenceSpanKindValues.EMBEDDING.value
_JSON = OpenInferenceMimeTypeValues.JSON.value
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SpanMapping:
    """Which attributes give the route and the trace id, and (streaming) how long a trace
    waits for more spans once its root has come."""

    route_attribute: str = option(
        "--route-attribute", "--route_attribute", default=SERVICE_NAME,
        flex=Flex(
            "Route attribute",
            "otlp: the attribute that gives a trace's route (metadata.KEY reads the root "
            "span's metadata). Default: service.name."),
        help="span formats: the attribute that gives a trace's route (default %(default)s; "
             "metadata.KEY reads the root span's metadata)")
    trace_id_attribute: str | None = option(
        "--trace-id-attribute", "--trace_id_attribute",
        flex=Flex(
            "Trace id attribute",
            "otlp: the attribute that gives a trace's id instead of the OTel trace id (e.g. "
            "metadata.trace_id)."),
        help="span formats: the attribute that gives a trace's id instead of the OTel trace "
             "id (e.g. metadata.trace_id); traces without it keep theirs")
    trace_gap_s: float = option(  # streaming only: `rt4chart stream --trace-gap`
        "--trace-gap", "--trace_gap", dest="trace_gap", default=30.0, parse=float,
        flex=Flex(
            "Trace gap (s)",
            "otlp: a trace is complete when its root span has come and no span for this many "
            "seconds; without its root by then it is a dead letter. Default: 30.",
            regexes=("^[0-9]+(\\.[0-9]+)?$",)),
        help="otlp: a trace is complete when its root span has come and no span for this many "
             "seconds (default %(default)s); without its root by then it is a dead letter")

    def __post_init__(self) -> None:
        if not self.route_attribute:
            raise ValueError("--route-attribute must not be empty")
        if self.trace_id_attribute is not None and not self.trace_id_attribute:
            raise ValueError("--trace-id-attribute must not be empty")
        if not self.trace_gap_s > 0:
            raise ValueError(f"--trace-gap must be positive, got {self.trace_gap_s}")


class Unassembled(ValueError):
    """The spans of a trace do not make a trace to audit; the message says why."""


class NotAQuery(Unassembled):
    """A whole trace of an application's other work, not a RAG query (a LlamaIndex app's
    document splitting, its embeddings): no LLM, retriever or reranker span, and either an
    embedding span or spans below its root (a lone root span is a query whose parts were not
    traced: a dead letter that says what is missing). Counted as skipped
    (`traces_not_queries`), not a dead letter: nothing in it was answered."""


# The span kinds a RAG query's trace has at least one of (its generation, its retrieval).
QUERY_KINDS = frozenset({OpenInferenceSpanKindValues.LLM.value,
                         OpenInferenceSpanKindValues.RETRIEVER.value,
                         OpenInferenceSpanKindValues.RERANKER.value})


def not_a_query(spans: list[SourceSpan]) -> str | None:
    """Why a whole trace's spans are not a query (None: they may be one)."""
    if any(kind(s) in QUERY_KINDS for s in spans):
        return None
    if len(spans) < 2 and not any(kind(s) == _EMBEDDING for s in spans):
        return None
    kinds = Counter(kind(s) or "no kind" for s in spans)
    return ("not a query: no LLM, retriever or reranker span ("
            + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) + ")")


def root_span(spans: list[SourceSpan]) -> SourceSpan | None:
    return next((s for s in spans if s.is_root), None)


def trace_record(spans: Iterable[SourceSpan], mapping: SpanMapping) -> dict[str, Any]:
    """The trace record the spans of one trace make (see the module's rule).

    Raises:
        Unassembled: no root span; no retriever span, no documents or no answer.
    """
    spans = unique_spans(spans)
    unreadable = [s for s in spans if s.parent_id == UNREADABLE_SPAN]
    if unreadable:
        raise Unassembled(f"{len(unreadable)} span(s) of the trace could not be read (each is "
                          "a dead letter of stage read): "
                          + ", ".join(s.span_id.removeprefix("unreadable:")
                                      for s in unreadable[:5]))
    root = root_span(spans)
    if root is None:
        raise Unassembled(f"no root span: none of the trace's {len(spans)} span(s) is without "
                          "a parent")
    skip = not_a_query(spans)
    if skip is not None:
        raise NotAQuery(skip)
    chain = _chain_span(spans, root)
    llm = final_generator(spans)
    agent = is_agent(spans, llm)
    problems: list[str] = []
    contexts = document_contexts(spans, problems)
    if agent:
        # An agent's evidence is its documents and tool results; with neither (every tool
        # came back empty or failed) it is an empty retrieval, audited as one.
        problems = []
        contexts = with_tools(contexts, tool_contexts(spans, llm))
    answer, question = _answer_and_question(chain, llm, agent)
    if answer is None:
        problems.append("no answer: the chain span has no output.value and no LLM span an "
                        "output message")
    if problems:
        raise Unassembled("; ".join(problems))
    turns, left_out = earlier_user_turns(llm)
    record = _record(root, chain, llm, mapping, question or "", answer, contexts)
    if turns:
        record["conversation"] = [{"role": "user", "content": t} for t in turns]
    add_metadata(record, {"session_id": session_id(spans, (root, chain)),
                           "conversation_turns_left_out": str(left_out) if left_out else None})
    return record


def _answer_and_question(chain: SourceSpan, llm: SourceSpan | None, agent: bool,
                         ) -> tuple[str | None, str | None]:
    """(the answer, the question): the chain span's output and input values, else the final
    generator's first output and last user message. An agent's chain values are its
    framework's state (a message list, a workflow's events), so the final generator's come
    first there."""
    def from_llm(prefix: str, role: str | None, first: bool) -> str | None:
        return _message(llm, prefix, role, first) if llm is not None else None

    from_chain = (_text(chain, SpanAttributes.OUTPUT_VALUE, SpanAttributes.OUTPUT_MIME_TYPE,
                        ANSWER_KEYS),
                  _text(chain, SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE,
                        QUESTION_KEYS))
    from_gen = (from_llm(SpanAttributes.LLM_OUTPUT_MESSAGES, None, True),
                from_llm(SpanAttributes.LLM_INPUT_MESSAGES, "user", False))
    first, second = (from_gen, from_chain) if agent else (from_chain, from_gen)
    return (first[0] if first[0] is not None else second[0],
            first[1] if first[1] is not None else second[1])


def _record(root: SourceSpan, chain: SourceSpan, llm: SourceSpan | None, mapping: SpanMapping,
            question: str, answer: str, contexts: list[dict]) -> dict[str, Any]:
    metadata = _metadata(root) or _metadata(chain)
    lookup = _Lookup(root, chain, metadata)
    fields = {k: metadata.pop(k) for k in FIELD_KEYS if k in metadata}
    if "generator" not in fields and llm is not None:
        model = llm.attribute_map().get(SpanAttributes.LLM_MODEL_NAME)
        if model is not None:
            fields["generator"] = str(model)
    trace_id = lookup(mapping.trace_id_attribute) if mapping.trace_id_attribute else None
    record: dict[str, Any] = {
        "trace_id": trace_id or root.trace_id,
        "route": lookup(mapping.route_attribute),
        "timestamp": _timestamp(root),
        "question": question,
        "contexts": contexts,
        "answer": answer,
        **fields,
    }
    if metadata:
        record["metadata"] = metadata
    return {k: v for k, v in record.items() if v is not None}


def audited_trace_id(spans: Iterable[SourceSpan], mapping: SpanMapping) -> str | None:
    """The id a trace is audited under (as `trace_record` gives it), even when its spans make
    no trace: for its dead letter. None without spans."""
    spans = unique_spans(spans)
    root = root_span(spans) or (spans[0] if spans else None)
    if root is None:
        return None
    if mapping.trace_id_attribute:
        chain = _chain_span(spans, root)
        found = _Lookup(root, chain, _metadata(root) or _metadata(chain))(
            mapping.trace_id_attribute)
        if found:
            return found
    return root.trace_id


def _chain_span(spans: list[SourceSpan], root: SourceSpan) -> SourceSpan:
    depths = span_depths({s.span_id: s.parent_id for s in spans})
    chains = [s for s in spans if kind(s) in _CHAIN_KINDS]
    return min(chains, key=lambda s: (depths[s.span_id], s.start_ns, s.span_id), default=root)


def span_depths(parents: Mapping[str, str]) -> dict[str, int]:
    """Each span's hops to its root ({span id: depth}) from {span id: parent id ("" for a
    root)}. A span whose ancestors end at a parent that is not there (detached) or go round
    a cycle is deeper than every attached span: len(parents) + 1.

    Linear in the spans: each is walked over once and its depth kept for the spans below it.
    A walk from every span up to the root was quadratic: 10,000 nested spans took 29 s.
    """
    detached = len(parents) + 1
    depths: dict[str, int] = {}
    for start in parents:
        path: list[str] = []  # spans whose depth is not known yet, the start first
        on_path: set[str] = set()
        node, base = start, detached
        while node not in depths:
            parent = parents[node]
            if not parent:
                depths[node] = base = 0
                break
            path.append(node)
            on_path.add(node)
            if parent in on_path or parent not in parents:  # a cycle, or a missing parent
                base = detached
                break
            node = parent
        else:
            base = depths[node]
        for node in reversed(path):
            base = min(base + 1, detached)
            depths[node] = base
    return depths


def _text(span: SourceSpan, key: str, mime_key: str, json_keys: tuple[str, ...]) -> str | None:
    """A span's input or output value as text; from a JSON object, its first text entry among
    `json_keys` (the JSON text itself when none is there)."""
    attributes = span.attribute_map()
    value = attributes.get(key)
    if value is None:
        return None
    value = str(value)
    if attributes.get(mime_key) != _JSON:
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        return next((parsed[k] for k in json_keys if isinstance(parsed.get(k), str)), value)
    return value


def _message(span: SourceSpan, prefix: str, role: str | None, first: bool) -> str | None:
    """The content of the first (or last) message of a span's input or output messages,
    of `role` if given."""
    messages = [m for m in indexed(span.attribute_map(), prefix)
                if MessageAttributes.MESSAGE_CONTENT in m
                and (role is None or m.get(MessageAttributes.MESSAGE_ROLE) == role)]
    if not messages:
        return None
    return str(messages[0 if first else -1][MessageAttributes.MESSAGE_CONTENT])


def _metadata(span: SourceSpan) -> dict[str, str]:
    """The span's `metadata` attribute (a JSON object, or flattened `metadata.*` keys), as
    text values."""
    attributes = span.attribute_map()
    found: dict[str, Any] = {}
    raw = attributes.get(SpanAttributes.METADATA)
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            found.update(parsed)
    for key, value in attributes.items():
        if key.startswith(METADATA_PREFIX):
            found.setdefault(key[len(METADATA_PREFIX):], value)
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in found.items()
            if v is not None}


class _Lookup:
    """An attribute by name: `metadata.K` in the metadata, then on the root span, the chain
    span, the root's resource; as text, None when absent."""

    def __init__(self, root: SourceSpan, chain: SourceSpan, metadata: dict[str, str]):
        self._places = (root.attribute_map(), chain.attribute_map(), dict(root.resource))
        self._metadata = dict(metadata)

    def __call__(self, name: str) -> str | None:
        if name.startswith(METADATA_PREFIX) and name[len(METADATA_PREFIX):] in self._metadata:
            return self._metadata[name[len(METADATA_PREFIX):]]
        for place in self._places:
            if place.get(name) is not None:
                return str(place[name])
        return None


def _timestamp(root: SourceSpan) -> str | None:
    nanos = root.end_ns or root.start_ns
    if not nanos:
        return None
    try:
        moment = _EPOCH + timedelta(microseconds=nanos // 1000)
    except OverflowError as exc:
        raise Unassembled(f"root span time {nanos} ns is out of range") from exc
    return moment.isoformat().replace("+00:00", "Z")
