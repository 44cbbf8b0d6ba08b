"""What an agent's final generator saw: tool results as contexts, the user's earlier turns as
the user's setting (issue 50). Used by `span_mapping.trace_record`; docs/agents.md tells it
with examples.

An agent trace is one where tools were called: it has a TOOL span, a `tool` or `function`
message in the final generator's input, or a tool call in an LLM span's output. The final
generator is the LLM span that ends last.

Its contexts (`tool_contexts`), besides the retriever and reranker documents:

- every `tool`/`function` message of the final generator's `llm.input_messages`, in order: what
  it was given, from this turn and from earlier turns of its conversation;
- the `output.value` of every TOOL span that started before the final generator (not one
  inside another TOOL span: its caller's result is what was passed on), unwrapped from the
  framework's envelope (LangChain's ToolMessage, LlamaIndex's ToolOutput);
- a result seen both as a TOOL span and as a message is one context, with the message's text
  (what the generator read): matched by call id, else by the same text when the tool names do
  not differ;
- a JSON object or array is kept as a structure (validation renders it as Data2txt records
  are); other text as it is;
- a result that is empty (blank, `{}`, `[]`, `null`) or failed (LangChain's status "error",
  LlamaIndex's `is_error`, a span marked failed by its reader) is no context: an empty
  retrieval.

Its id names its tool and call: `tool:NAME#CALL` (`fields.tool_doc_id`), the call id given by
the message or the span, else the result's position among that tool's results; the name from
the message, the span (`tool.name`, else its name) or the tool call that asked for it.

Never evidence: what an assistant message says (an earlier answer, intermediate reasoning), a
tool call's arguments, the system prompt, a user message.

The conversation (`earlier_user_turns`): the contents of the final generator's user messages
before its last one, oldest first, the latest kept within MAX_CONVERSATION_CHARS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson
from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceMimeTypeValues,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)

from rt4chart.schemas.spans import SPAN_FAILED, Scalar, SourceSpan
from rt4chart.transforms.common.fields import (
    USER_ROLES,
    InvalidTrace,
    check_json,
    tool_doc_id,
)
from rt4chart.transforms.common.limits import MAX_CONVERSATION_CHARS
from rt4chart.transforms.common.span_attributes import indexed, kind

_TOOL = OpenInferenceSpanKindValues.TOOL.value
_LLM = OpenInferenceSpanKindValues.LLM.value
_JSON = OpenInferenceMimeTypeValues.JSON.value
_ROLE = MessageAttributes.MESSAGE_ROLE
_CONTENT = MessageAttributes.MESSAGE_CONTENT
_CONTENTS = MessageAttributes.MESSAGE_CONTENTS
_CALLS = MessageAttributes.MESSAGE_TOOL_CALLS
_CALL_ID = ToolCallAttributes.TOOL_CALL_ID
_CALL_NAME = ToolCallAttributes.TOOL_CALL_FUNCTION_NAME
# The roles of a tool's result among a chat model's input messages.
TOOL_ROLES = ("tool", "function")
UNKNOWN_TOOL = "unknown"


def messages(span: SourceSpan, prefix: str) -> list[dict[str, Scalar]]:
    """A span's input or output messages (`prefix.N.message.*`), in index order, each as a
    dict of its `message.*` keys."""
    return indexed(span.attribute_map(), prefix)


def message_text(message: dict[str, Scalar]) -> str | None:
    """A message's text: `message.content`, else its text parts (`message.contents`) joined;
    None when it has neither."""
    if message.get(_CONTENT) is not None:
        return str(message[_CONTENT])
    parts = sorted((k, v) for k, v in message.items() if k.startswith(_CONTENTS + ".")
                   and k.endswith("." + MessageContentAttributes.MESSAGE_CONTENT_TEXT))
    if not parts:
        return None
    return "\n".join(str(v) for _, v in sorted(parts, key=lambda kv: _part_index(kv[0])))


def _part_index(key: str) -> int:
    index = key[len(_CONTENTS) + 1:].partition(".")[0]
    return int(index) if index.isdigit() else 0


def _tool_calls(message: dict[str, Scalar]) -> dict[str, str]:
    """{call id: tool name} of the tool calls a message makes."""
    calls: dict[str, dict[str, Scalar]] = {}
    for key, value in message.items():
        if key.startswith(_CALLS + "."):
            index, _, rest = key[len(_CALLS) + 1:].partition(".")
            calls.setdefault(index, {})[rest] = value
    return {str(c[_CALL_ID]): str(c[_CALL_NAME]) for c in calls.values()
            if c.get(_CALL_ID) is not None and c.get(_CALL_NAME) is not None}


def final_generator(spans: Iterable[SourceSpan]) -> SourceSpan | None:
    """The LLM span that ends last (ties: the greater span id), None without one."""
    return max((s for s in spans if kind(s) == _LLM), key=lambda s: (s.end_ns, s.span_id),
               default=None)


def is_agent(spans: list[SourceSpan], llm: SourceSpan | None) -> bool:
    """Whether tools were called: a TOOL span, a tool message to the final generator, or a
    tool call in an LLM span's output."""
    if any(kind(s) == _TOOL for s in spans):
        return True
    if llm is not None and any(m.get(_ROLE) in TOOL_ROLES
                               for m in messages(llm, SpanAttributes.LLM_INPUT_MESSAGES)):
        return True
    return any(_tool_calls(m) for s in spans if kind(s) == _LLM
               for m in messages(s, SpanAttributes.LLM_OUTPUT_MESSAGES))


@dataclass
class ToolResult:
    """One tool result: its tool and call (None when unknown), its text or JSON structure, and
    whether the tool failed."""

    name: str | None
    call_id: str | None
    value: str | dict | list
    failed: bool = False
    # The text the framework passed on for a structure read from its raw output (LlamaIndex
    # gives the model Python's repr of a tool's dict): a message with this text is this result.
    shown: str | None = None

    @property
    def key(self) -> str:
        """What two sightings of one result share: the structure in one spelling, or the
        text with its white space folded."""
        if isinstance(self.value, str):
            return " ".join(self.value.split())
        return orjson.dumps(self.value, option=orjson.OPT_SORT_KEYS).decode()

    def same_value(self, message: ToolResult) -> bool:
        """Whether `message` holds this result's value, or the text it was shown as."""
        return message.key == self.key or (
            self.shown is not None and message.key == " ".join(self.shown.split()))

    @property
    def empty(self) -> bool:
        return not self.value if not isinstance(self.value, str) else not self.value.strip()


def structured(text: str) -> str | dict | list:
    """A tool's text as a JSON object or array when it is one that validation takes (finite
    numbers, bounded depth); else the text."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return text
    try:
        value = orjson.loads(stripped)
        check_json(value, "a tool result")
    except (orjson.JSONDecodeError, InvalidTrace):
        return text
    return value


def _content_text(content) -> str | None:
    """LangChain's message content: a string, or a list of blocks whose text is joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [b if isinstance(b, str) else b.get("text") for b in content
                 if isinstance(b, str) or isinstance(b, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return None


def _envelope(value) -> ToolResult | None:
    """A tool span's output in a framework's envelope, unwrapped; None when it is not one.

    LangChain's ToolMessage (`{"type": "tool", "data": {...}}`, or its `lc` constructor form)
    and LlamaIndex's ToolOutput (`{"tool_name", "blocks" or "content", "raw_output", ...}`).
    """
    if not isinstance(value, dict):
        return None
    data = None
    if value.get("type") == "tool" and isinstance(value.get("data"), dict):
        data = value["data"]
    elif (value.get("lc") == 1 and isinstance(value.get("kwargs"), dict)
          and isinstance(value.get("id"), list) and value["id"][-1:] == ["ToolMessage"]):
        data = value["kwargs"]
    if data is not None:
        text = _content_text(data.get("content"))
        if text is None:
            return None
        return ToolResult(_opt(data.get("name")), _opt(data.get("tool_call_id")),
                          structured(text), data.get("status") == "error")
    if "tool_name" in value and "raw_output" in value:
        text = _content_text(value.get("blocks")) if "blocks" in value else \
            _content_text(value.get("content"))
        if text is None:
            return None
        result = ToolResult(_opt(value.get("tool_name")), None, structured(text),
                            value.get("is_error") is True)
        raw = value["raw_output"]
        # The model was shown str() of a dict or list: read as the structure only when the
        # text is exactly that structure's repr, so that nothing is read that it was not shown.
        if isinstance(result.value, str) and isinstance(raw, dict | list) and raw \
                and repr(raw) == text and structured(orjson.dumps(raw).decode()) == raw:
            result.value, result.shown = raw, text
        return result
    return None


def _opt(value) -> str | None:
    return None if value is None or value == "" else str(value)


def span_result(span: SourceSpan) -> ToolResult | None:
    """A TOOL span's result (`output.value`); a failed span without output is a failed result
    with no text; None for a span with neither."""
    attributes = span.attribute_map()
    output = attributes.get(SpanAttributes.OUTPUT_VALUE)
    name = _opt(attributes.get(SpanAttributes.TOOL_NAME)) or _opt(span.name)
    call_id = _opt(attributes.get(_CALL_ID))
    failed = attributes.get(SPAN_FAILED) is True
    if output is None:
        return ToolResult(name, call_id, "", True) if failed else None
    if attributes.get(SpanAttributes.OUTPUT_MIME_TYPE) == _JSON:
        try:
            wrapped = _envelope(orjson.loads(str(output)))
        except orjson.JSONDecodeError:
            wrapped = None
        if wrapped is not None:
            return ToolResult(name or wrapped.name, call_id or wrapped.call_id, wrapped.value,
                              failed or wrapped.failed, wrapped.shown)
    return ToolResult(name, call_id, structured(str(output)), failed)


def _message_results(llm: SourceSpan, names: dict[str, str]) -> list[ToolResult]:
    out = []
    for message in messages(llm, SpanAttributes.LLM_INPUT_MESSAGES):
        if message.get(_ROLE) not in TOOL_ROLES:
            continue
        text = message_text(message)
        call_id = _opt(message.get(MessageAttributes.MESSAGE_TOOL_CALL_ID))
        name = _opt(message.get(MessageAttributes.MESSAGE_NAME)) or names.get(call_id or "")
        out.append(ToolResult(name, call_id, structured(text or "")))
    return out


def _outermost_tools(spans: list[SourceSpan], llm: SourceSpan | None) -> list[SourceSpan]:
    """The TOOL spans started before the final generator, not inside another TOOL span."""
    by_id = {s.span_id: s for s in spans}
    tools = []
    for span in spans:
        if kind(span) != _TOOL:
            continue
        if llm is not None and span.start_ns and llm.start_ns and span.start_ns > llm.start_ns:
            continue
        parent, seen = by_id.get(span.parent_id), {span.span_id}
        while parent is not None and parent.span_id not in seen and kind(parent) != _TOOL:
            seen.add(parent.span_id)
            parent = by_id.get(parent.parent_id)
        if parent is None or parent.span_id in seen:
            tools.append(span)
    return tools


def _same(message: ToolResult, seen: ToolResult, by_name: bool) -> bool:
    """Whether a tool message and a TOOL span's result are one result: the same call id; else
    the same text (`by_name`: the same tool, for a failed span without output) from tools
    whose names do not differ."""
    if message.call_id is not None and seen.call_id is not None:
        return message.call_id == seen.call_id
    if by_name:
        return message.name is not None and message.name == seen.name
    names = {n for n in (message.name, seen.name) if n is not None}
    return len(names) <= 1 and seen.same_value(message)


def tool_results(spans: list[SourceSpan], llm: SourceSpan | None) -> list[ToolResult]:
    """The tool results the final generator saw (see the module's rule), empty and failed ones
    included, each once: its messages first, then the TOOL spans no message matched. Spans
    with output are matched first, so that a failed span without output (matched by its
    tool's name) cannot take the message of a call that succeeded."""
    names: dict[str, str] = {}
    for span in spans:
        if kind(span) == _LLM:
            for prefix in (SpanAttributes.LLM_INPUT_MESSAGES, SpanAttributes.LLM_OUTPUT_MESSAGES):
                for message in messages(span, prefix):
                    names.update(_tool_calls(message))
    results = _message_results(llm, names) if llm is not None else []
    seen_results = [r for r in map(span_result, _outermost_tools(spans, llm)) if r is not None]
    for seen in seen_results:
        if seen.name is None and seen.call_id in names:
            seen.name = names[seen.call_id]
    matched: set[int] = set()
    for without_output in (False, True):
        for seen in seen_results:
            if (seen.failed and seen.empty) is without_output:
                _merge(results, matched, seen, without_output)
    return results


def _merge(results: list[ToolResult], matched: set[int], seen: ToolResult,
           by_name: bool) -> None:
    """A TOOL span's result merged into the message it is (kept in `matched`), else added."""
    i = next((i for i, m in enumerate(results) if i not in matched
              and _same(m, seen, by_name)), None)
    if i is None:
        results.append(seen)
        matched.add(len(results) - 1)
        return
    matched.add(i)
    kept = results[i]
    kept.name, kept.call_id = kept.name or seen.name, kept.call_id or seen.call_id
    kept.failed = kept.failed or seen.failed
    if seen.shown is not None and seen.same_value(kept):  # the message's text, as a structure
        kept.value = seen.value


def tool_contexts(spans: list[SourceSpan], llm: SourceSpan | None) -> list[dict]:
    """The tool results the final generator saw, as contexts {doc_id, text, tool, call_id};
    empty and failed results left out."""
    out, count = [], {}
    for result in tool_results(spans, llm):
        name = result.name or UNKNOWN_TOOL
        count[name] = count.get(name, 0) + 1
        if result.failed or result.empty:
            continue
        context = {"doc_id": tool_doc_id(name, result.call_id or str(count[name])),
                   "text": result.value, "tool": name}
        if result.call_id is not None:
            context["call_id"] = result.call_id
        out.append(context)
    return out


def earlier_user_turns(llm: SourceSpan | None) -> tuple[list[str], int]:
    """(the final generator's user messages before its last one, oldest first, the latest
    kept within MAX_CONVERSATION_CHARS; how many older ones that left out)."""
    if llm is None:
        return [], 0
    texts = [message_text(m) for m in messages(llm, SpanAttributes.LLM_INPUT_MESSAGES)
             if str(m.get(_ROLE, "")).lower() in USER_ROLES]
    earlier = [t for t in texts[:-1] if t and t.strip()]
    kept: list[str] = []
    total = 0
    for text in reversed(earlier):
        total += len(text)
        if total > MAX_CONVERSATION_CHARS:
            break
        kept.append(text)
    return kept[::-1], len(earlier) - len(kept)


def session_id(spans: list[SourceSpan], first: Iterable[SourceSpan] = ()) -> str | None:
    """The `session.id` of the spans in `first` (the root, the chain span), else of the
    earliest span that has one."""
    for span in (*first, *spans):
        value = span.attribute_map().get(SpanAttributes.SESSION_ID)
        if value is not None and str(value).strip():
            return str(value)
    return None


def with_tools(documents: list[dict], tools: list[dict]) -> list[dict]:
    """The documents, then the tool results, each id once (a tool result's id that a document
    took gets `~2`, ...)."""
    taken = {d["doc_id"] for d in documents}
    for tool in tools:
        base, n = tool["doc_id"], 1
        while tool["doc_id"] in taken:
            n += 1
            tool["doc_id"] = f"{base}~{n}"
        taken.add(tool["doc_id"])
    return documents + tools


def add_metadata(record: dict[str, Any], entries: dict[str, str | None]) -> None:
    """Entries added to the record's metadata where it has none of that name."""
    metadata = record.get("metadata", {})
    for key, value in entries.items():
        if value is not None and key not in metadata:
            metadata[key] = value
    if metadata:
        record["metadata"] = metadata
